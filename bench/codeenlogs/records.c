/* records.c — whole records (after the kind byte) for the generator, built
 * with the library's encoder (encode.c): dt, then the body as format.h and
 * the library's intercept.c/fdtable.c write it. */
#include <string.h>
#include <netinet/in.h>
#include "records.h"

static void sin4(struct sockaddr_in *a, const uint8_t *ip, uint16_t port)
{
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	memcpy(&a->sin_addr, ip, 4);
	a->sin_port = htons(port);
}

size_t rec_sendrecv(uint8_t *p, size_t cap, int64_t dt, int fd, int64_t ret)
{
	struct sc_buf b = {p, 0, cap, 0};
	sc_put_zz(&b, dt);
	sc_put_zz(&b, fd);
	sc_put_zz(&b, ret);
	return b.overflow ? 0 : b.n;
}

size_t rec_fd(uint8_t *p, size_t cap, int64_t dt, int fd, const uint8_t *lip, uint16_t lport, const uint8_t *rip,
	      uint16_t rport)
{
	struct sc_buf b = {p, 0, cap, 0};
	struct sockaddr_in l, r;
	unsigned mask = SC_FD_LOCAL | (rip ? SC_FD_REMOTE : 0);
	sc_put_zz(&b, dt);
	sc_put_zz(&b, fd);
	sc_put_u8(&b, SC_PROTO_TCP);
	sc_put_uv(&b, 1); /* SOCK_STREAM */
	sc_put_uv(&b, mask);
	sin4(&l, lip, lport);
	sc_put_addr(&b, (struct sockaddr *)&l, sizeof l, 0);
	if (rip) {
		sin4(&r, rip, rport);
		sc_put_addr(&b, (struct sockaddr *)&r, sizeof r, 0);
	}
	return b.overflow ? 0 : b.n;
}

size_t rec_event(uint8_t *p, size_t cap, int64_t dt, int op, int fd, unsigned mask, int64_t ret, int fd2, uint64_t dur,
		 int64_t arg, const uint8_t *rip, uint16_t rport)
{
	struct sc_buf b = {p, 0, cap, 0};
	struct sockaddr_in r;
	struct sc_event e = {.op = (uint8_t)op, .fd = fd, .mask = mask, .ret = ret, .fd2 = fd2, .dur = dur, .arg = arg};
	if (rip) {
		sin4(&r, rip, rport);
		e.remote = (struct sockaddr *)&r;
		e.remote_len = sizeof r;
	}
	sc_put_zz(&b, dt);
	sc_encode_event(&b, &e);
	return b.overflow ? 0 : b.n;
}
