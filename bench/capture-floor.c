/* capture-floor: the least any LD_PRELOAD interposer of the socket calls
 * costs — send, recv, sendto and recvfrom forwarded through pointers
 * resolved with dlsym(RTLD_NEXT), nothing else (no fd table, no clock, no
 * record). bench/capture-overhead.sh runs it as the "floor" variant: what
 * libsockcap adds beyond it is what a capture library's own work costs.
 *
 *   cc -O2 -fPIC -shared -fvisibility=hidden -o floor.so bench/capture-floor.c -ldl
 *
 * With -DTOUCH_PAGES=K each forwarded call first reads one byte on each of K
 * distinct 4 KiB pages of its own .bss (the same K every call): on a machine
 * whose system calls flush the TLB, the difference between K and 0 is what
 * one more page touched per call costs (bench/results-cap3.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define EXPORT __attribute__((visibility("default")))

static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_recv)(int, void *, size_t, int);
static ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);

static void resolve(void)
{
	real_send = (__typeof__(real_send))dlsym(RTLD_NEXT, "send");
	real_recv = (__typeof__(real_recv))dlsym(RTLD_NEXT, "recv");
	real_sendto = (__typeof__(real_sendto))dlsym(RTLD_NEXT, "sendto");
	real_recvfrom = (__typeof__(real_recvfrom))dlsym(RTLD_NEXT, "recvfrom");
}

__attribute__((constructor)) static void init(void) { resolve(); }

#if defined(TOUCH_PAGES) && TOUCH_PAGES > 0
static volatile char pages[TOUCH_PAGES][4096] __attribute__((aligned(4096)));
static inline void touch(void)
{
	for (int i = 0; i < TOUCH_PAGES; i++)
		(void)pages[i][64];
}
#else
static inline void touch(void) {}
#endif

/* called before our constructor (another library's): resolve now */
#define REAL(name) (__builtin_expect(real_##name == NULL, 0) ? (resolve(), real_##name) : real_##name)

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	touch();
	return REAL(send)(fd, buf, n, flags);
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	touch();
	return REAL(recv)(fd, buf, n, flags);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a, socklen_t al)
{
	touch();
	return REAL(sendto)(fd, buf, n, flags, a, al);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *al)
{
	touch();
	return REAL(recvfrom)(fd, buf, n, flags, a, al);
}
