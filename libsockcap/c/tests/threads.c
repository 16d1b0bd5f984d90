/* threads: several threads send concurrently over their own socketpairs
 * (each thread gets its own chunk), enough to fill several chunks; then
 * waves of short-lived threads, which start in the mappings the exited ones
 * parked (some fill more than a chunk). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define SENDS 20000

static void *run(void *arg)
{
	(void)arg;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
		abort();
	char b[8] = "abcdefg";
	for (int i = 0; i < SENDS; i++) {
		if (send(sv[0], b, (size_t)(i % 8) + 1, 0) < 0)
			abort();
		if (recv(sv[1], b, sizeof b, 0) < 0)
			abort();
	}
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

#define SHORT_THREADS 64
#define WAVE 4

static void *run_short(void *arg)
{
	long n = (long)arg;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
		abort();
	char b[16] = "0123456789abcde";
	for (long i = 0; i < n; i++) {
		if (send(sv[0], b, sizeof b, 0) != sizeof b)
			abort();
		if (recv(sv[1], b, sizeof b, 0) < 0)
			abort();
	}
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, run, NULL);
	/* fork while the other threads are in the library: the child starts its
	 * own log from a clean state */
	usleep(1000);
	pid_t c = fork();
	if (c == 0) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0 || send(sv[0], "child", 5, 0) != 5)
			_exit(1);
		_exit(0);
	}
	int st = 0;
	waitpid(c, &st, 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	long total = 0;
	for (int w = 0; w < SHORT_THREADS; w += WAVE) {
		pthread_t s[WAVE];
		for (int i = 0; i < WAVE; i++) {
			long n = 200 + ((w + i) * 2477L) % 6000;
			total += n;
			pthread_create(&s[i], NULL, run_short, (void *)n);
		}
		for (int i = 0; i < WAVE; i++)
			pthread_join(s[i], NULL);
	}
	printf("short_threads %d\nshort_sends %ld\n", SHORT_THREADS, total);
	printf("child %d\nchild_status %d\n", (int)c, st);
	printf("threads %d\nsends %d\n", THREADS, SENDS);
	return 0;
}
