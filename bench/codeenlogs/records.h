#include <stddef.h>
#include <stdint.h>
#include "../../libsockcap/c/sockcap.h"

size_t rec_sendrecv(uint8_t *p, size_t cap, int64_t dt, int fd, int64_t ret);
size_t rec_fd(uint8_t *p, size_t cap, int64_t dt, int fd, const uint8_t *lip, uint16_t lport, const uint8_t *rip,
	      uint16_t rport);
size_t rec_event(uint8_t *p, size_t cap, int64_t dt, int op, int fd, unsigned mask, int64_t ret, int fd2, uint64_t dur,
		 int64_t arg, const uint8_t *rip, uint16_t rport);
