/* capture-clock: the library's record clock (sc_now) against CLOCK_REALTIME
 * read through the vDSO — how far the TSC clock's stamps are from the clock,
 * whether a thread's stamps ever step back, and what one read costs.
 *
 * The library's sources are compiled in (as in capture-stub.c), so the clock
 * is set up as under LD_PRELOAD: the TSC clock is on unless libfaketime (or
 * another interposer) provides clock_gettime, SOCKCAP_CLOCK=vdso, or the CPU
 * has no invariant TSC.
 *
 *   capture-clock MILLISECONDS [THREADS [READS]]
 *
 * Each thread, for MILLISECONDS: reads the vDSO clock (a), sc_now (t), the
 * vDSO clock again (b), with a varying pause in between; after the first
 * 20 ms (the first fit) it records how far t lies outside [a, b]. Prints
 * tsc_ok, the worst distance ahead of b and behind a (ns), the largest step
 * back between consecutive stamps of a thread, and the CPU time of one read
 * of each clock (min over 9 runs of READS reads, default 10^6, first thread). */
#include "../libsockcap/c/intercept.c"

#include <stdio.h>
#include <stdlib.h>

static int64_t limit_ns;
static int64_t worst_ahead, worst_behind, worst_back;
static long reads;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *run(void *arg)
{
	(void)arg;
	int64_t start = sc_now_vdso(), ahead = 0, behind = 0, back = 0, prev = 0;
	long n = 0;
	while (sc_now_vdso() - start < limit_ns) {
		int64_t a = sc_now_vdso();
		int64_t t = sc_now();
		int64_t b = sc_now_vdso();
		if (prev && prev - t > back)
			back = prev - t;
		prev = t;
		if (a - start > 20000000) {
			if (t - b > ahead)
				ahead = t - b;
			if (a - t > behind)
				behind = a - t;
		}
		n++;
		for (volatile int k = 0; k < (int)(n % 300); k++)
			;
	}
	pthread_mutex_lock(&mu);
	if (ahead > worst_ahead)
		worst_ahead = ahead;
	if (behind > worst_behind)
		worst_behind = behind;
	if (back > worst_back)
		worst_back = back;
	reads += n;
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: capture-clock MILLISECONDS [THREADS]\n");
		return 2;
	}
	limit_ns = atoll(argv[1]) * 1000000;
	int nt = argc > 2 ? atoi(argv[2]) : 1;
	if (nt < 1 || nt > 64)
		nt = 1;
	int m = argc > 3 ? atoi(argv[3]) : 1000000;
	if (m < 1)
		m = 1;
	ENSURE();
	pthread_t th[64];
	for (int i = 1; i < nt; i++)
		pthread_create(&th[i], NULL, run, NULL);
	run(NULL);
	for (int i = 1; i < nt; i++)
		pthread_join(th[i], NULL);
	double best[2] = {1e9, 1e9};
	int64_t sink = 0;
	for (int r = 0; r < 9; r++) {
		for (int v = 0; v < 2; v++) {
			int64_t c0 = cpu_ns();
			if (v)
				for (int i = 0; i < m; i++)
					sink += sc_now();
			else
				for (int i = 0; i < m; i++)
					sink += sc_now_vdso();
			double x = (double)(cpu_ns() - c0) / m;
			if (x < best[v])
				best[v] = x;
		}
	}
	printf("tsc_ok %d\nreads %ld\nmax_ahead_ns %lld\nmax_behind_ns %lld\nmax_step_back_ns %lld\n", sc_tsc_ok, reads,
	       (long long)worst_ahead, (long long)worst_behind, (long long)worst_back);
	printf("vdso_read_ns %.2f\nsc_now_read_ns %.2f\nsink %d\n", best[0], best[1], (int)(sink & 1));
	return 0;
}
