/* capture-bench: per-call cost of socket calls, for bench/capture-overhead.sh.
 *   capture-bench pair N     send+recv of 64 bytes over a Unix stream socketpair
 *   capture-bench udp N      sendto+recv of 64-byte datagrams over UDP loopback
 *   capture-bench udpconn N  send+recv of 64-byte datagrams over connected UDP sockets
 *   capture-bench file N     write of 64 bytes to /dev/null (the non-socket fast path)
 *   capture-bench reqresp N  TCP loopback request/response between two processes,
 *                            random sizes (for bytes per event on disk)
 * Prints "ns_per_call <float>" (wall time of the loop / calls made),
 * "user_ns_per_call <float>" (user CPU time / calls, getrusage) and
 * "cpu_ns_per_call <float>" (user + system CPU time of the loop / calls,
 * CLOCK_PROCESS_CPUTIME_ID). getrusage's split between user and system time
 * is sampled at the scheduler tick (CONFIG_TICK_CPU_ACCOUNTING, HZ=250 here:
 * a 0.2 s run holds ~5 user ticks, so user ns/call moves by ~10 ns per tick);
 * the CPU clock is exact (the scheduler's runtime in ns), and what capture adds
 * — user-space code, its log pages' faults, the kernel's copy of a datagram's
 * sender — all shows in it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double user_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec * 1e9 + (double)ru.ru_utime.tv_usec * 1e3;
}

static void die(const char *w)
{
	perror(w);
	exit(1);
}

static size_t readfull(int fd, char *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, b + got, n - got, 0);
		if (r <= 0)
			die("recv");
		got += (size_t)r;
	}
	return got;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = atol(argv[2]);
	char buf[8192];
	memset(buf, 'x', sizeof buf);
	double t0, t1, u0 = user_ns(), c0 = cpu_ns(), c1;
	long calls;
	if (!strcmp(argv[1], "pair")) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			die("socketpair");
		c0 = cpu_ns();
		t0 = now();
		for (long i = 0; i < n; i++) {
			if (send(sv[0], buf, 64, 0) != 64 || recv(sv[1], buf, 64, 0) != 64)
				die("io");
		}
		t1 = now();
		c1 = cpu_ns();
		calls = 2 * n;
	} else if (!strcmp(argv[1], "udp")) {
		int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in s = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t l = sizeof s;
		if (bind(b, (struct sockaddr *)&s, sizeof s) || getsockname(b, (struct sockaddr *)&s, &l))
			die("bind");
		c0 = cpu_ns();
		t0 = now();
		for (long i = 0; i < n; i++) {
			if (sendto(a, buf, 64, 0, (struct sockaddr *)&s, sizeof s) != 64 || recv(b, buf, 64, 0) != 64)
				die("udp io");
		}
		t1 = now();
		c1 = cpu_ns();
		calls = 2 * n;
	} else if (!strcmp(argv[1], "udpconn")) {
		int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)}, sb = sa;
		socklen_t l = sizeof sa;
		if (bind(a, (struct sockaddr *)&sa, sizeof sa) || getsockname(a, (struct sockaddr *)&sa, &l) ||
		    bind(b, (struct sockaddr *)&sb, sizeof sb) || (l = sizeof sb, getsockname(b, (struct sockaddr *)&sb, &l)) ||
		    connect(a, (struct sockaddr *)&sb, sizeof sb) || connect(b, (struct sockaddr *)&sa, sizeof sa))
			die("udp connect");
		c0 = cpu_ns();
		t0 = now();
		for (long i = 0; i < n; i++) {
			if (send(a, buf, 64, 0) != 64 || recv(b, buf, 64, 0) != 64)
				die("udp io");
		}
		t1 = now();
		c1 = cpu_ns();
		calls = 2 * n;
	} else if (!strcmp(argv[1], "file")) {
		int f = open("/dev/null", O_WRONLY);
		c0 = cpu_ns();
		t0 = now();
		for (long i = 0; i < n; i++)
			if (write(f, buf, 64) != 64)
				die("write");
		t1 = now();
		c1 = cpu_ns();
		calls = n;
	} else if (!strcmp(argv[1], "reqresp")) {
		int l = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in s = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t sl = sizeof s;
		if (bind(l, (struct sockaddr *)&s, sizeof s) || listen(l, 1) || getsockname(l, (struct sockaddr *)&s, &sl))
			die("listen");
		pid_t p = fork();
		if (p == 0) {
			int c = accept(l, NULL, NULL);
			int one = 1;
			setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			unsigned seed = 7;
			for (long i = 0; i < n; i++) {
				uint32_t hdr;
				readfull(c, (char *)&hdr, 4);
				readfull(c, buf, hdr);
				uint32_t resp = 100 + (uint32_t)(rand_r(&seed) % 4000);
				if (send(c, &resp, 4, 0) != 4 || send(c, buf, resp, 0) != (ssize_t)resp)
					die("server send");
			}
			_exit(0);
		}
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&s, sizeof s))
			die("connect");
		int one = 1;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		unsigned seed = 3;
		c0 = cpu_ns();
		t0 = now();
		for (long i = 0; i < n; i++) {
			uint32_t req = 50 + (uint32_t)(rand_r(&seed) % 450), resp;
			if (send(c, &req, 4, 0) != 4 || send(c, buf, req, 0) != (ssize_t)req)
				die("client send");
			readfull(c, (char *)&resp, 4);
			readfull(c, buf, resp);
		}
		t1 = now();
		c1 = cpu_ns();
		calls = 4 * n;
		waitpid(p, NULL, 0);
	} else
		return 2;
	printf("ns_per_call %.1f\nuser_ns_per_call %.1f\ncpu_ns_per_call %.1f\n", (t1 - t0) / (double)calls,
	       (user_ns() - u0) / (double)calls, (c1 - c0) / (double)calls);
	return 0;
}
