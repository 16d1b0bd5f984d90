/* privdrop: a root process that becomes "nobody" (as nginx workers do) keeps
 * logging: the library hands its log over and reserves chunks before setuid.
 * 30000 send/recv pairs fill more than one chunk. Prints "skipped 1" when not
 * run as root. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	if (geteuid() != 0) {
		printf("skipped 1\n");
		return 0;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
		return 1;
	char b[8];
	int n = 0;
	for (int i = 0; i < 30000; i++)
		if (send(sv[0], "abcd", 4, 0) == 4 && recv(sv[1], b, sizeof b, 0) == 4)
			n++;
	printf("uid %d\npairs %d\n", (int)getuid(), n);
	return 0;
}
