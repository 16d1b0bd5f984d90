// Package preflight tells whether libsockcap can see a program's sockets:
// before a run it inspects the target executable (static, Go, musl,
// setuid/setgid, file capabilities, wrong ELF class), and during a run it
// samples the socket descriptors of the traced processes in /proc, so that
// `wap5 run` can say which processes used sockets that the log does not show
// (io_uring, raw syscall(), static helpers) instead of leaving an empty log
// unexplained.
package preflight
