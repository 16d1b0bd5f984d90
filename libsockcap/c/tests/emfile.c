/* emfile: the fd table is full, so the library cannot open its log to take a
 * new chunk: the program runs unchanged, the lost events are counted, and a
 * gap record marks where logging resumed once fds were freed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	struct rlimit rl = {64, 64};
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
		return 1;
	int fds[64], n = 0;
	while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	char b[8];
	int ok = 0;
	/* more than a chunk's worth while no fd is free */
	for (int i = 0; i < 20000; i++)
		if (send(sv[0], "abcd", 4, 0) == 4 && recv(sv[1], b, sizeof b, 0) == 4)
			ok++;
	for (int i = 0; i < n; i++)
		close(fds[i]);
	usleep(150000); /* the library retries 100 ms after a failure */
	for (int i = 0; i < 10; i++)
		if (send(sv[0], "abcd", 4, 0) == 4 && recv(sv[1], b, sizeof b, 0) == 4)
			ok++;
	printf("pairs %d\n", ok);
	return 0;
}
