/* signal: a signal handler calls send() while the main loop is itself in the
 * library (an interval timer fires every 50 us). Every send is either logged
 * or counted as dropped; the process runs normally. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int sv[2];
static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	(void)sig;
	if (send(sv[0], "h", 1, MSG_DONTWAIT) == 1)
		handled++;
}

int main(void)
{
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
		return 1;
	int big = 1 << 22;
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_REAL, &it, NULL);
	int main_sends = 0;
	char b[4];
	for (int i = 0; i < 200000; i++) {
		if (send(sv[0], "m", 1, MSG_DONTWAIT) == 1)
			main_sends++;
		while (recv(sv[1], b, sizeof b, MSG_DONTWAIT) > 0)
			;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("main %d\nhandler %d\n", main_sends, (int)handled);
	return 0;
}
