/* durable: threads send UDP datagrams as fast as they can and, after each
 * send returns, publish how many returned in a shared file (argv[1]). The
 * test SIGKILLs the process at a random moment: every send published must be
 * in the log. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 3

struct slot {
	volatile int32_t tid;
	int32_t pad;
	volatile int64_t returned;
};
static struct slot *slots;
static struct sockaddr_in dst;

static void *run(void *arg)
{
	struct slot *s = arg;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	char b[128] = {0};
	s->tid = (int32_t)syscall(SYS_gettid);
	for (int64_t i = 0;; i++) {
		if (sendto(fd, b, (size_t)(i % 100) + 1, 0, (struct sockaddr *)&dst, sizeof dst) > 0) {
			__atomic_store_n(&s->returned, s->returned + 1, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int f = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (f < 0 || ftruncate(f, 4096) != 0)
		return 1;
	slots = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (slots == MAP_FAILED)
		return 1;
	int sink = socket(AF_INET, SOCK_DGRAM, 0); /* bound, never read: the kernel drops the overflow */
	dst.sin_family = AF_INET;
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(sink, (struct sockaddr *)&dst, sizeof dst);
	socklen_t l = sizeof dst;
	getsockname(sink, (struct sockaddr *)&dst, &l);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, run, &slots[i]);
	for (;;)
		pause();
}
