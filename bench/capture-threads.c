/* capture-threads: what a short-lived thread costs, as in a thread-per-request
 * server: N threads one after another, each sending one 64-byte message over
 * a Unix socketpair and receiving it (two records: a chunk each thread). Run
 * with and without LD_PRELOAD of libsockcap; prints the process's CPU time
 * (user + system) per thread, which includes a fresh chunk mapping's page
 * faults and munmap, or a parked mapping's reuse (bench/results-cap3.md).
 *
 *   capture-threads N */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

static int sv[2];

static void *one(void *arg)
{
	char buf[64] = {0};
	(void)arg;
	if (send(sv[0], buf, sizeof buf, 0) != sizeof buf || recv(sv[1], buf, sizeof buf, 0) != sizeof buf)
		abort();
	return NULL;
}

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	if (n < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	one(NULL); /* the main thread's own chunk first */
	double c0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, one, NULL) || pthread_join(t, NULL))
			return 1;
	}
	printf("cpu_us_per_thread %.1f\n", (cpu_ns() - c0) / 1e3 / (double)n);
	return 0;
}
