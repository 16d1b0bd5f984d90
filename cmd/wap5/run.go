package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/urfave/cli/v2"

	"wap5/libsockcap"
	"wap5/libsockcap/preflight"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "run",
			Usage:     "run a command (and every process it starts) with libsockcap preloaded",
			ArgsUsage: "-- CMD [ARG...]",
			Description: "Logs go under --out/<node>/, one per process; they are sealed (compressed) when\n" +
				"CMD exits and a one-line summary is printed on stderr. wap5 exits with CMD's status\n" +
				"(128+N when CMD was killed by signal N). SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1\n" +
				"and SIGUSR2 sent to wap5 are forwarded to CMD.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "out", Value: "wap5-logs", Usage: "log directory (SOCKCAP_DIR)"},
				&cli.StringFlag{Name: "node", Usage: "node name recorded in the logs (SOCKCAP_NODE; default: hostname)"},
				&cli.StringFlag{Name: "lib", Usage: "libsockcap.so to preload (default: $WAP5_LIB, else next to the wap5 binary)"},
			},
			Action: runAction,
		}
	})
}

// forwardedSignals are passed on to the traced command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2}

// watchInterval is how often the traced processes' fds are sampled.
const watchInterval = 100 * time.Millisecond

func runAction(c *cli.Context) error {
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return usagef("run: missing command (wap5 run [--out DIR] [--node NAME] -- CMD [ARG...])")
	}
	stderr := c.App.ErrWriter
	lib, err := findLib(c.String("lib"))
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(c.String("out"))
	if err != nil {
		return err
	}
	if err := makeLogDir(dir); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	env := captureEnv(os.Environ(), lib, dir, c.String("node"))

	target, err := preflight.Inspect(argv[0], lookupEnv(env, "PATH"), lib)
	if err != nil {
		fmt.Fprintf(stderr, "wap5: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return exitStatus{127}
		}
		return exitStatus{126}
	}
	for _, w := range target.Warnings {
		fmt.Fprintf(stderr, "wap5: warning: %s\n", w)
	}

	before := map[string]bool{}
	if logs, err := libsockcap.FindLogs(dir); err == nil {
		for _, l := range logs {
			before[l] = true
		}
	}

	code, root, seen, err := runTraced(c, target.Path, argv, env)
	if err != nil {
		return err
	}
	if err := finishRun(stderr, dir, before, root, seen); err != nil {
		fmt.Fprintf(stderr, "wap5: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if code != 0 {
		return exitStatus{code}
	}
	return nil
}

// findLib picks libsockcap.so: the flag, then $WAP5_LIB, then the file next
// to the running wap5 binary (bin/ after make).
func findLib(flag string) (string, error) {
	var tried []string
	candidates := []string{flag, os.Getenv("WAP5_LIB")}
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), "libsockcap.so"))
	}
	for i, p := range candidates {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() {
			return abs, nil
		} else if i < 2 {
			// An explicit choice that does not exist is an error, not a fallback.
			return "", fmt.Errorf("libsockcap.so: %s: %v", abs, err)
		}
		tried = append(tried, abs)
	}
	return "", fmt.Errorf("cannot find libsockcap.so (tried %s); run make, or pass --lib or set WAP5_LIB",
		strings.Join(tried, ", "))
}

// captureEnv returns env with the preload library and the log directory set.
// An existing LD_PRELOAD is kept after ours.
func captureEnv(env []string, lib, dir, node string) []string {
	out := make([]string, 0, len(env)+3)
	preload := lib
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "LD_PRELOAD":
			for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' }) {
				if p != lib {
					preload += ":" + p
				}
			}
		case k == "SOCKCAP_DIR", k == "SOCKCAP_NODE" && node != "":
		default:
			out = append(out, kv)
		}
	}
	out = append(out, "LD_PRELOAD="+preload, "SOCKCAP_DIR="+dir)
	if node != "" {
		out = append(out, "SOCKCAP_NODE="+node)
	}
	return out
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// runTraced starts the command, forwards signals to it, samples its process
// tree, and returns its exit status (128+N when killed by signal N).
func runTraced(c *cli.Context, path string, argv, env []string) (code, pid int, seen []preflight.Seen, err error) {
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env,
		Stdin: c.App.Reader, Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
		// A daemon that keeps our stdout (when it is a pipe we copy from)
		// must not keep us waiting after the command exits.
		WaitDelay: time.Second}
	// The command gets its own process group so that a signal sent to
	// ours reaches it once (forwarded), not twice. On a terminal, its group
	// becomes the foreground one, so ^C goes straight to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tty := foregroundTTY(c.App)
	if tty >= 0 {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = tty
		defer setForeground(tty, syscall.Getpgrp())
	}
	// A subreaper inherits the traced tree's orphans (daemons that double
	// fork), so the /proc sampling still finds them.
	setSubreaper(true)
	defer setSubreaper(false)

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, 0, nil, err
	}
	pid = cmd.Process.Pid
	watch := preflight.Watch(cmd.Process.Pid, watchInterval)
	type result struct {
		ws  syscall.WaitStatus
		err error
	}
	done := make(chan result, 1)
	if tty >= 0 {
		// Stdio are the terminal's files: nothing to copy, so we can wait
		// for the process ourselves and follow job control.
		go func() { ws, err := waitJob(pid, tty); done <- result{ws, err} }()
	} else {
		go func() {
			err := cmd.Wait()
			if cmd.ProcessState == nil {
				done <- result{err: err}
				return
			}
			done <- result{ws: cmd.ProcessState.Sys().(syscall.WaitStatus)}
		}()
	}
	var r result
loop:
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case r = <-done:
			break loop
		}
	}
	if tty >= 0 {
		cmd.Process.Release()
	}
	seen = watch.Stop()
	switch {
	case r.err != nil:
		return 0, pid, seen, r.err
	case r.ws.Signaled():
		return 128 + int(r.ws.Signal()), pid, seen, nil
	}
	return r.ws.ExitStatus(), pid, seen, nil
}

// waitJob waits for the command the way a shell waits for a job. When ^Z
// stops it, wap5 takes the terminal back and stops itself, so the shell
// regains control; when continued (fg), it hands the terminal to the
// command again and continues it.
func waitJob(pid, tty int) (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || !ws.Stopped() {
			return ws, err
		}
		setForeground(tty, syscall.Getpgrp())
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		// Continued: in the foreground (fg) or not (bg).
		if foregroundPgrp(tty) == syscall.Getpgrp() {
			setForeground(tty, pid) // the command leads its own group
		}
		syscall.Kill(-pid, syscall.SIGCONT)
	}
}

// foregroundTTY returns the fd of the terminal when stdin, stdout and
// stderr are files, stdin is a terminal, and our process group is its
// foreground group; else -1.
func foregroundTTY(app *cli.App) int {
	in, ok1 := app.Reader.(*os.File)
	_, ok2 := app.Writer.(*os.File)
	_, ok3 := app.ErrWriter.(*os.File)
	if !ok1 || !ok2 || !ok3 {
		return -1
	}
	fd := int(in.Fd())
	if foregroundPgrp(fd) != syscall.Getpgrp() {
		return -1
	}
	return fd
}

// foregroundPgrp is the terminal's foreground process group (-1 if fd is
// not a terminal).
func foregroundPgrp(fd int) int {
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP,
		uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return -1
	}
	return int(pgrp)
}

// setForeground makes pgrp the terminal's foreground process group. We may
// be in the background when we do it, hence SIGTTOU ignored.
func setForeground(fd, pgrp int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	p := int32(pgrp)
	syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&p)))
}

func setSubreaper(on bool) {
	const prSetChildSubreaper = 36
	v := 0
	if on {
		v = 1
	}
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, uintptr(v), 0)
}

// logStats is what one run's logs hold, per process and in total.
type logStats struct {
	processes, events, logBytes, dropped int64
	unsealed                             []string // logs of processes still running
	socketEvents                         map[int32]int64
	hasLog                               map[int32]bool
}

// runLog is one log file read after the run.
type runLog struct {
	path                     string
	proc                     libsockcap.Process
	events, sockets, dropped int64
}

// finishRun seals this run's logs, prints the summary line, and warns about
// processes whose sockets the logs do not show.
func finishRun(stderr io.Writer, dir string, before map[string]bool, root int, seen []preflight.Seen) error {
	all, err := libsockcap.FindLogs(dir)
	if err != nil {
		return err
	}
	var fresh []*runLog
	for _, path := range all {
		if before[path] {
			continue
		}
		l, warnings := readRunLog(path)
		for _, w := range warnings {
			fmt.Fprintf(stderr, "wap5: warning: %s\n", w)
		}
		if l != nil {
			fresh = append(fresh, l)
		}
	}
	st, warnings := sealLogs(ownLogs(fresh, root, seen))
	for _, w := range warnings {
		fmt.Fprintf(stderr, "wap5: warning: %s\n", w)
	}
	fmt.Fprintf(stderr, "wap5: %d processes, %d events, %d log bytes (sealed), %d events dropped, in %s\n",
		st.processes, st.events, st.logBytes, st.dropped, dir)
	if len(st.unsealed) > 0 {
		fmt.Fprintf(stderr, "wap5: warning: %d processes still running; their logs were left unsealed: %s\n",
			len(st.unsealed), strings.Join(st.unsealed, " "))
	}
	for _, w := range blindSpots(seen, st) {
		fmt.Fprintf(stderr, "wap5: warning: %s\n", w)
	}
	return nil
}

// readRunLog counts one log's events; damage comes back as warnings.
func readRunLog(path string) (*runLog, []string) {
	sc, err := libsockcap.Open(path)
	if err != nil {
		return nil, []string{err.Error()}
	}
	defer sc.Close()
	l := &runLog{path: path, proc: *sc.Process()}
	for sc.Scan() {
		switch ev := sc.Event(); ev.Op {
		case libsockcap.OpGap:
			l.dropped += ev.Bytes
		case libsockcap.OpFork, libsockcap.OpExec, libsockcap.OpExit:
			l.events++
		default:
			l.events++
			l.sockets++
		}
	}
	// Events lost without a gap record after them (the process could not
	// reach its log again and never resumed) are counted only in the header.
	l.dropped = max(l.dropped, sc.Process().Dropped)
	var warnings []string
	for _, w := range sc.Warnings() {
		warnings = append(warnings, w.Error())
	}
	if err := sc.Err(); err != nil {
		warnings = append(warnings, err.Error())
	}
	return l, warnings
}

// ownLogs keeps the logs written by the traced command's process tree: the
// root, every process /proc showed in the tree, and, transitively, every
// process whose parent (recorded at its start) is one of those. Other runs
// may write into the same directory at the same time.
func ownLogs(logs []*runLog, root int, seen []preflight.Seen) []*runLog {
	host, _ := os.Hostname()
	ours := map[int32]bool{int32(root): true}
	for _, s := range seen {
		ours[int32(s.Pid)] = true
	}
	keep := make([]bool, len(logs))
	for changed := true; changed; {
		changed = false
		for i, l := range logs {
			if keep[i] || (l.proc.Host != host && host != "") {
				continue
			}
			if ours[l.proc.Pid] || ours[l.proc.Ppid] {
				keep[i], changed = true, true
				ours[l.proc.Pid] = true
			}
		}
	}
	var out []*runLog
	for i, l := range logs {
		if keep[i] {
			out = append(out, l)
		}
	}
	return out
}

// sealLogs seals each log unless the process that writes it is still
// running, and totals them.
func sealLogs(logs []*runLog) (logStats, []string) {
	st := logStats{socketEvents: map[int32]int64{}, hasLog: map[int32]bool{}}
	var warnings []string
	pids := map[int32]bool{}
	for _, l := range logs {
		st.events += l.events
		st.dropped += l.dropped
		st.socketEvents[l.proc.Pid] += l.sockets
		st.hasLog[l.proc.Pid] = true
		pids[l.proc.Pid] = true
		if l.proc.Sealed {
			st.logBytes += fileSize(l.path)
			continue
		}
		if stillWriting(l.proc.Pid) {
			st.unsealed = append(st.unsealed, l.path)
			st.logBytes += fileSize(l.path)
			continue
		}
		sealed, err := libsockcap.Seal(l.path)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("sealing %s: %v", l.path, err))
			sealed = l.path
		}
		st.logBytes += fileSize(sealed)
	}
	st.processes = int64(len(pids))
	return st, warnings
}

// stillWriting reports whether pid is alive with libsockcap mapped: its log
// may still grow, so it must not be sealed.
func stillWriting(pid int32) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	return err == nil && strings.Contains(string(b), "libsockcap")
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if st.IsDir() {
		var n int64
		filepath.WalkDir(path, func(_ string, d fs.DirEntry, _ error) error {
			if d != nil && d.Type().IsRegular() {
				if i, err := d.Info(); err == nil {
					n += i.Size()
				}
			}
			return nil
		})
		return n
	}
	return st.Size()
}

// blindSpots compares the /proc samples with the logs: a process that held
// sockets but logged no socket call was invisible to interposition.
func blindSpots(seen []preflight.Seen, st logStats) []string {
	var out []string
	for _, s := range seen {
		name := fmt.Sprintf("pid %d (%s)", s.Pid, s.Exe)
		if s.IOUring {
			out = append(out, name+" uses io_uring: socket I/O submitted through io_uring is not captured")
		}
		if s.Sockets == 0 {
			continue
		}
		switch {
		case !st.hasLog[int32(s.Pid)]:
			out = append(out, fmt.Sprintf("%s held %d sockets but wrote no log: not captured "+
				"(static, Go, musl or setuid program, or LD_PRELOAD removed from its environment)", name, s.Sockets))
		case st.socketEvents[int32(s.Pid)] == 0:
			out = append(out, fmt.Sprintf("%s held %d sockets but logged no socket calls: "+
				"it bypasses libc (raw syscall(), io_uring or statically linked code)", name, s.Sockets))
		}
	}
	return out
}

// makeLogDir creates the log directory. Run as root it is 0711: daemons that
// drop privileges (nginx workers become nobody) must be able to reach their
// own log again, which the library hands to them (chown, mode 0600), to grow
// it; nobody can list the directory or read another process's log.
// Otherwise it is 0700, as the library itself would create it.
func makeLogDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		return os.Chmod(dir, 0o711)
	}
	return nil
}
