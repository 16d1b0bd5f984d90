/* capture-paired: what a preloaded interposer adds per socket call, measured
 * inside one process. Run with LD_PRELOAD set: batches of the loop of
 * capture-bench.c (pair, udp, udpconn) alternate between the functions the
 * program would call (dlsym(RTLD_DEFAULT): the interposer's) and libc's own
 * (dlsym of libc.so.6), both through function pointers kept side by side
 * (as a program's PLT would hold them). Each batch's CPU time (user +
 * system, CLOCK_THREAD_CPUTIME_ID: the scheduler's exact runtime) is taken;
 * the difference per call between the two kinds of batch, paired batch by
 * batch, cancels what differs between processes (address layout, the
 * machine's load at that moment) better than comparing separate runs.
 *
 *   capture-paired pair|udp|udpconn BATCHES ITERS
 *
 * Prints "added_median_ns", "added_min_ns" (the minimum difference of paired
 * batches), "lib_median_ns" and "libc_median_ns" per call. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);

static struct {
	send_fn send;
	recv_fn recv;
	sendto_fn sendto;
} fns[2]; /* 0: through the interposer, 1: libc's own */

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void die(const char *w)
{
	perror(w);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	const char *mode = argv[1];
	long batches = atol(argv[2]), iters = atol(argv[3]);
	if (batches < 1 || iters < 1)
		return 2;
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (!libc)
		die("dlopen libc");
	fns[0].send = (send_fn)dlsym(RTLD_DEFAULT, "send");
	fns[0].recv = (recv_fn)dlsym(RTLD_DEFAULT, "recv");
	fns[0].sendto = (sendto_fn)dlsym(RTLD_DEFAULT, "sendto");
	fns[1].send = (send_fn)dlsym(libc, "send");
	fns[1].recv = (recv_fn)dlsym(libc, "recv");
	fns[1].sendto = (sendto_fn)dlsym(libc, "sendto");
	char buf[256];
	memset(buf, 'x', sizeof buf);
	int a, b, udp = 0;
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (!strcmp(mode, "pair")) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			die("socketpair");
		a = sv[0];
		b = sv[1];
	} else if (!strcmp(mode, "udp")) {
		a = socket(AF_INET, SOCK_DGRAM, 0);
		b = socket(AF_INET, SOCK_DGRAM, 0);
		socklen_t l = sizeof s;
		if (bind(b, (struct sockaddr *)&s, sizeof s) || getsockname(b, (struct sockaddr *)&s, &l))
			die("bind");
		udp = 1;
	} else if (!strcmp(mode, "udpconn")) {
		a = socket(AF_INET, SOCK_DGRAM, 0);
		b = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in sa = s, sb = s;
		socklen_t l = sizeof sa;
		if (bind(a, (struct sockaddr *)&sa, sizeof sa) || getsockname(a, (struct sockaddr *)&sa, &l) ||
		    bind(b, (struct sockaddr *)&sb, sizeof sb) || (l = sizeof sb, getsockname(b, (struct sockaddr *)&sb, &l)) ||
		    connect(a, (struct sockaddr *)&sb, sizeof sb) || connect(b, (struct sockaddr *)&sa, sizeof sa))
			die("udp connect");
	} else
		return 2;
	double *lib = calloc((size_t)batches, sizeof *lib), *raw = calloc((size_t)batches, sizeof *raw),
	       *diff = calloc((size_t)batches, sizeof *diff);
	if (!lib || !raw || !diff)
		return 1;
	/* one warm-up batch each way (the first chunk, first-use paths) */
	for (long k = -1; k < batches; k++) {
		for (int pass = 0; pass < 2; pass++) {
			int which = (pass == 0) == (k % 2 == 0) ? 0 : 1;
			send_fn ps = fns[which].send;
			recv_fn pr = fns[which].recv;
			sendto_fn pt = fns[which].sendto;
			double t0 = cpu_ns();
			if (udp) {
				for (long i = 0; i < iters; i++)
					if (pt(a, buf, 64, 0, (struct sockaddr *)&s, sizeof s) != 64 || pr(b, buf, 64, 0) != 64)
						die("udp io");
			} else {
				for (long i = 0; i < iters; i++)
					if (ps(a, buf, 64, 0) != 64 || pr(b, buf, 64, 0) != 64)
						die("io");
			}
			double ns = (cpu_ns() - t0) / (double)(2 * iters);
			if (k < 0)
				continue;
			if (which == 0)
				lib[k] = ns;
			else
				raw[k] = ns;
		}
		if (k >= 0)
			diff[k] = lib[k] - raw[k];
	}
	qsort(lib, (size_t)batches, sizeof *lib, cmp);
	qsort(raw, (size_t)batches, sizeof *raw, cmp);
	qsort(diff, (size_t)batches, sizeof *diff, cmp);
	printf("added_median_ns %.1f\nadded_min_ns %.1f\nlib_median_ns %.1f\nlibc_median_ns %.1f\n",
	       diff[batches / 2], diff[0], lib[batches / 2], raw[batches / 2]);
	return 0;
}
