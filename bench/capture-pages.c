/* capture-pages: what a log chunk costs in memory management on this machine,
 * the ways libsockcap could get one (bench/results-cap2.md):
 *   map      open, posix_fallocate, mmap MAP_SHARED 64 KiB, close, then write
 *            every page (a store per 64 bytes), munmap — libsockcap before
 *            staged chunks (per chunk: a fault per page, an munmap)
 *   populate the same with MADV_POPULATE_WRITE after mmap
 *   anon     anonymous 64 KiB, written, munmap (no file at all)
 *   pwrite   a 64 KiB pwrite of an already mapped and written buffer to a
 *            new offset of the file, then the buffer zeroed — staged chunks
 *   capture-pages DIR CHUNKS
 * Prints per chunk the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) of each
 * step and the minor+major faults, the median over CHUNKS chunks. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define CH 65536

static double cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long faults(void)
{
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_minflt + r.ru_majflt;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void touch(char *p, char v)
{
	for (size_t o = 0; o < CH; o += 64)
		p[o] = v;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[2]);
	if (n < 1)
		return 2;
	char path[4096];
	snprintf(path, sizeof path, "%s/capture-pages.%d", argv[1], (int)getpid());
	double *setup = calloc((size_t)n, sizeof(double)), *write = calloc((size_t)n, sizeof(double)),
	       *unmap = calloc((size_t)n, sizeof(double)), *flt = calloc((size_t)n, sizeof(double));
	const char *modes[] = {"map", "populate", "anon", "pwrite"};
	char *buf = mmap(NULL, CH, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	touch(buf, 1);
	for (int m = 0; m < 4; m++) {
		int fd0 = open(path, O_RDWR | O_CREAT | O_TRUNC | O_EXCL, 0600);
		if (fd0 < 0) {
			perror(path);
			return 1;
		}
		close(fd0);
		for (int i = 0; i < n; i++) {
			off_t off = (off_t)i * CH;
			long f0 = faults();
			double a = cpu(), b, c, d;
			if (m == 3) {
				int fd = open(path, O_WRONLY);
				if (fd < 0 || pwrite(fd, buf, CH, off) != CH)
					return 1;
				close(fd);
				b = cpu();
				memset(buf, 0, CH); /* the staged chunk's records cleared */
				buf[0] = 1;
				c = d = cpu();
			} else {
				char *p;
				if (m == 2) {
					p = mmap(NULL, CH, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				} else {
					int fd = open(path, O_RDWR);
					if (fd < 0 || posix_fallocate(fd, off, CH) != 0)
						return 1;
					p = mmap(NULL, CH, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
					close(fd);
				}
				if (p == MAP_FAILED)
					return 1;
				if (m == 1)
					madvise(p, CH, MADV_POPULATE_WRITE);
				b = cpu();
				touch(p, 1);
				c = cpu();
				munmap(p, CH);
				d = cpu();
			}
			setup[i] = (b - a) / 1000;
			write[i] = (c - b) / 1000;
			unmap[i] = (d - c) / 1000;
			flt[i] = (double)(faults() - f0);
		}
		unlink(path);
		printf("%-8s per 64 KiB chunk (us, median of %d): setup %.1f, writing %.1f, munmap %.1f; faults %.0f\n",
		       modes[m], n, median(setup, n), median(write, n), median(unmap, n), median(flt, n));
	}
	return 0;
}
