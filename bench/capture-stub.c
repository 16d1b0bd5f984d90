/* capture-stub: what the library's own code costs per intercepted call, with
 * the system call replaced by a stub — the user-space part of the overhead,
 * measured in time without the kernel's noise, so that it stays readable on a
 * loaded machine (bench/capture-overhead.sh runs it).
 *
 * The library's sources are compiled into this program (intercept.c is
 * included, so its real functions' pointers are reachable); after the library has set
 * itself up (SOCKCAP_DIR must be set), the pointers of the calls measured are
 * redirected to stubs that return at once: sendto/send return the length,
 * recvfrom/recv return 64 bytes and, when asked, a fixed IPv4 sender. Real
 * sockets back the fds, so the library classifies them as it would.
 *
 *   capture-stub udp|pair BATCHES ITERS
 *
 * Each batch times ITERS iterations (sendto+recv, or send+recv) through the
 * library and then the same through the stubs called directly (through a
 * function pointer, as a program calls libc through the PLT), alternating
 * which goes first. Prints per call: the minimum and the median over batches
 * of the library's time, the stubs' time and their difference, in ns. The
 * minimum is the figure least disturbed by other load; the log it writes
 * (chunk allocation included) is real. */
#include "../libsockcap/c/intercept.c"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>

static struct sockaddr_in stub_peer;

static ssize_t stub_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a, socklen_t al)
{
	(void)fd, (void)buf, (void)flags, (void)a, (void)al;
	__asm__ volatile("" ::: "memory");
	return (ssize_t)n;
}

static ssize_t stub_send(int fd, const void *buf, size_t n, int flags)
{
	(void)fd, (void)buf, (void)flags;
	__asm__ volatile("" ::: "memory");
	return (ssize_t)n;
}

static ssize_t stub_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *al)
{
	(void)fd, (void)buf, (void)flags;
	if (a && al) {
		socklen_t k = *al < sizeof stub_peer ? *al : sizeof stub_peer;
		memcpy(a, &stub_peer, k);
		*al = sizeof stub_peer;
	}
	__asm__ volatile("" ::: "memory");
	return n < 64 ? (ssize_t)n : 64;
}

static ssize_t stub_recv(int fd, void *buf, size_t n, int flags)
{
	(void)fd, (void)buf, (void)flags;
	__asm__ volatile("" ::: "memory");
	return n < 64 ? (ssize_t)n : 64;
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "udp") && strcmp(argv[1], "pair")))
		return 2;
	int udp = !strcmp(argv[1], "udp");
	long batches = atol(argv[2]), iters = atol(argv[3]);
	if (batches < 1 || iters < 1)
		return 2;
	if (!sc_cfg.enabled) {
		fprintf(stderr, "capture-stub: set SOCKCAP_DIR\n");
		return 1;
	}
	char buf[256];
	memset(buf, 'x', sizeof buf);
	int a, b;
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (udp) {
		a = socket(AF_INET, SOCK_DGRAM, 0);
		b = socket(AF_INET, SOCK_DGRAM, 0);
		socklen_t l = sizeof s;
		if (a < 0 || b < 0 || bind(b, (struct sockaddr *)&s, sizeof s) ||
		    getsockname(b, (struct sockaddr *)&s, &l)) {
			perror("udp socket");
			return 1;
		}
		/* one real datagram names a's port (the library's first-send path) */
		if (sendto(a, buf, 64, 0, (struct sockaddr *)&s, sizeof s) != 64 || recv(b, buf, 64, 0) != 64) {
			perror("udp io");
			return 1;
		}
		l = sizeof stub_peer;
		getsockname(a, (struct sockaddr *)&stub_peer, &l);
	} else {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
			perror("socketpair");
			return 1;
		}
		a = sv[0];
		b = sv[1];
	}
	/* from here on the library calls the stubs */
#ifdef SC_REAL /* the real functions on the hot page (libsockcap since cap3) */
	SC_REAL(sendto) = stub_sendto;
	SC_REAL(send) = stub_send;
	SC_REAL(recvfrom) = stub_recvfrom;
	SC_REAL(recv) = stub_recv;
#else
	real_sendto = stub_sendto;
	real_send = stub_send;
	real_recvfrom = stub_recvfrom;
	real_recv = stub_recv;
#endif
	ssize_t (*volatile p_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t) = stub_sendto;
	ssize_t (*volatile p_send)(int, const void *, size_t, int) = stub_send;
	ssize_t (*volatile p_recv)(int, void *, size_t, int) = stub_recv;

	double *lib = calloc((size_t)batches, sizeof *lib), *raw = calloc((size_t)batches, sizeof *raw),
	       *diff = calloc((size_t)batches, sizeof *diff);
	if (!lib || !raw || !diff)
		return 1;
	for (long k = 0; k < batches; k++) {
		for (int pass = 0; pass < 2; pass++) {
			int through_lib = (pass == 0) == (k % 2 == 0);
			double t0 = mono();
			if (through_lib && udp) {
				for (long i = 0; i < iters; i++)
					if (sendto(a, buf, 64, 0, (struct sockaddr *)&s, sizeof s) != 64 ||
					    recv(b, buf, 64, 0) != 64)
						abort();
			} else if (through_lib) {
				for (long i = 0; i < iters; i++)
					if (send(a, buf, 64, 0) != 64 || recv(b, buf, 64, 0) != 64)
						abort();
			} else if (udp) {
				ssize_t (*ps)(int, const void *, size_t, int, const struct sockaddr *, socklen_t) = p_sendto;
				ssize_t (*pr)(int, void *, size_t, int) = p_recv;
				for (long i = 0; i < iters; i++)
					if (ps(a, buf, 64, 0, (struct sockaddr *)&s, sizeof s) != 64 || pr(b, buf, 64, 0) != 64)
						abort();
			} else {
				ssize_t (*ps)(int, const void *, size_t, int) = p_send;
				ssize_t (*pr)(int, void *, size_t, int) = p_recv;
				for (long i = 0; i < iters; i++)
					if (ps(a, buf, 64, 0) != 64 || pr(b, buf, 64, 0) != 64)
						abort();
			}
			double ns = (mono() - t0) / (double)(2 * iters);
			if (through_lib)
				lib[k] = ns;
			else
				raw[k] = ns;
		}
		diff[k] = lib[k] - raw[k];
	}
	qsort(lib, (size_t)batches, sizeof *lib, cmp);
	qsort(raw, (size_t)batches, sizeof *raw, cmp);
	qsort(diff, (size_t)batches, sizeof *diff, cmp);
	printf("lib_min_ns %.1f\nlib_median_ns %.1f\nstub_min_ns %.1f\nstub_median_ns %.1f\n", lib[0],
	       lib[batches / 2], raw[0], raw[batches / 2]);
	printf("added_min_ns %.1f\nadded_median_ns %.1f\n", lib[0] - raw[0], diff[batches / 2]);
	return 0;
}
