/* proc: process creation. fork, vfork (+exec), _Fork, posix_spawn, and an
 * execve whose environment lacks LD_PRELOAD/SOCKCAP_* (re-inserted by the
 * library unless SOCKCAP_REINJECT=0). Every child image sends one byte over an
 * inherited socketpair so its log must exist. argv[1] "child" = exec'd image. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "proc: %s failed: %s\n", #x, strerror(errno)); exit(1); } } while (0)

extern char **environ;

static int fd_arg(const char *s) { return atoi(s); }

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "child")) {
		int fd = fd_arg(argv[2]);
		CHECK(send(fd, "c", 1, 0) == 1);
		return 0;
	}
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	char fdstr[16];
	snprintf(fdstr, sizeof fdstr, "%d", sv[1]);
	char *cargv[] = {argv[0], "child", fdstr, NULL};

	pid_t p = fork();
	if (p == 0) {
		send(sv[1], "f", 1, 0);
		_exit(0);
	}
	CHECK(p > 0);
	waitpid(p, NULL, 0);
	printf("fork %d\n", p);

	p = vfork();
	if (p == 0) {
		execv(argv[0], cargv);
		_exit(127);
	}
	CHECK(p > 0);
	waitpid(p, NULL, 0);
	printf("vfork %d\n", p);

	p = _Fork();
	if (p == 0) {
		send(sv[1], "F", 1, 0);
		_exit(0);
	}
	CHECK(p > 0);
	waitpid(p, NULL, 0);
	printf("_Fork %d\n", p);

	CHECK(posix_spawn(&p, argv[0], NULL, NULL, cargv, environ) == 0);
	waitpid(p, NULL, 0);
	printf("posix_spawn %d\n", p);

	/* exec with a stripped environment */
	p = fork();
	if (p == 0) {
		char *env[] = {"PATH=/usr/bin:/bin", NULL};
		execve(argv[0], cargv, env);
		_exit(127);
	}
	waitpid(p, NULL, 0);
	printf("stripped %d\n", p);

	/* the rest of the exec family, each in a forked child */
	const char *kinds[] = {"execvp", "execle", "fexecve", "execveat"};
	for (int k = 0; k < 4; k++) {
		p = fork();
		if (p == 0) {
			switch (k) {
			case 0:
				execvp(argv[0], cargv);
				break;
			case 1:
				execle(argv[0], argv[0], "child", fdstr, (char *)NULL, environ);
				break;
			case 2: {
				int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
				fexecve(fd, cargv, environ);
				break;
			}
			case 3:
				execveat(AT_FDCWD, argv[0], cargv, environ, 0);
				break;
			}
			_exit(127);
		}
		int st = 0;
		waitpid(p, &st, 0);
		printf("%s %d\n", kinds[k], p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}

	/* a failing exec is recorded and the program goes on */
	errno = 0;
	CHECK(execl("/nonexistent/prog", "prog", (char *)NULL) == -1 && errno == ENOENT);

	char b[16];
	int n = 0;
	close(sv[1]);
	for (;;) {
		ssize_t r = recv(sv[0], b, sizeof b, 0);
		if (r <= 0)
			break;
		n += (int)r;
	}
	printf("bytes %d\n", n);
	return 0;
}
