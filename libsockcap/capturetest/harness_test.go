package capturetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wap5/libsockcap"
)

// binDir is the directory holding wap5 and libsockcap.so. Under make test
// (WAP5_BIN set) everything must be there; otherwise tests skip.
func binDir(t *testing.T) string {
	t.Helper()
	dir, strict := os.Getenv("WAP5_BIN"), true
	if dir == "" {
		dir, strict = "../../bin", false
	}
	dir, _ = filepath.Abs(dir)
	for _, f := range []string{"wap5", "libsockcap.so"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			if strict {
				t.Fatalf("WAP5_BIN=%s: %v", dir, err)
			}
			t.Skipf("%s missing (run make, or make test): %v", f, err)
		}
	}
	if os.Geteuid() == 0 && !othersCanRead(dir) {
		// Privilege-dropping servers (postgres under setpriv) load the
		// library as their own user: give them a copy they can open.
		shared.Do(func() { shared.dir, shared.err = shareBin(dir) })
		if shared.err != nil {
			t.Fatalf("copying %s where unprivileged servers can load it: %v", dir, shared.err)
		}
		return shared.dir
	}
	return dir
}

// shared is the world-readable copy of the bin directory, when one is needed.
var shared struct {
	sync.Once
	dir string
	err error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// othersCanRead says whether a user other than the owner can reach dir and
// read its files.
func othersCanRead(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, f := range []string{"wap5", "libsockcap.so"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm()&0o004 == 0 {
			return false
		}
	}
	return true
}

// shareBin copies wap5 and libsockcap.so into a new directory under the
// system's temporary directory that every user can read.
func shareBin(dir string) (string, error) {
	to, err := os.MkdirTemp("", "wap5-bin-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(to, 0o755); err != nil {
		return "", err
	}
	for _, f := range []string{"wap5", "libsockcap.so"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(to, f), b, 0o755); err != nil {
			return "", err
		}
	}
	return to, nil
}

// need returns the path of a program the test runs; missing programs fail
// under make test and skip otherwise.
func need(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		if os.Getenv("WAP5_BIN") != "" {
			t.Fatalf("%s not installed (scripts/install-deps.sh installs it): %v", prog, err)
		}
		t.Skipf("%s not installed (scripts/install-deps.sh installs it)", prog)
	}
	return p
}

// python is Debian's interpreter: it is the one whose test suite is
// installed, and a pyenv shim in $PATH would add a bash process.
func python(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return need(t, "python3")
}

// session is one test's log directory and the traced processes it started.
type session struct {
	t      *testing.T
	bin    string
	dir    string
	daemon []*traced
}

func newSession(t *testing.T) *session {
	t.Helper()
	s := &session{t: t, bin: binDir(t), dir: filepath.Join(t.TempDir(), "logs")}
	t.Cleanup(func() {
		for _, d := range s.daemon {
			d.kill()
		}
	})
	return s
}

// traced is a `wap5 run` of one command.
type traced struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

func (s *session) command(node string, args ...string) *traced {
	wargs := []string{"run", "--out", s.dir}
	if node != "" {
		wargs = append(wargs, "--node", node)
	}
	wargs = append(append(wargs, "--"), args...)
	tr := &traced{t: s.t, cmd: exec.Command(filepath.Join(s.bin, "wap5"), wargs...), done: make(chan struct{})}
	tr.cmd.Stdout, tr.cmd.Stderr = &tr.stdout, &tr.stderr
	tr.cmd.WaitDelay = 5 * time.Second // daemons may keep the pipes open
	return tr
}

// run runs a traced command to completion and returns its stdout; a
// nonzero exit fails the test.
func (s *session) run(node string, args ...string) string {
	s.t.Helper()
	tr := s.command(node, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr.cmd = exec.CommandContext(ctx, tr.cmd.Path, tr.cmd.Args[1:]...)
	tr.cmd.Stdout, tr.cmd.Stderr = &tr.stdout, &tr.stderr
	tr.cmd.WaitDelay = 5 * time.Second
	if err := tr.cmd.Run(); err != nil {
		s.t.Fatalf("wap5 run %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, tr.stdout.String(), tr.stderr.String())
	}
	s.t.Logf("wap5 run %s:\n%s", args[0], tr.stderr.String())
	return tr.stdout.String()
}

// start starts a traced server in the background; it is stopped by stop or
// at the end of the test.
func (s *session) start(node string, args ...string) *traced {
	s.t.Helper()
	tr := s.command(node, args...)
	if err := tr.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() { tr.err = tr.cmd.Wait(); close(tr.done) }()
	s.daemon = append(s.daemon, tr)
	return tr
}

// pid is the traced command's pid: wap5's only child that signals its exit
// with SIGCHLD. Before starting the command, wap5's first os.StartProcess
// checks clone(CLONE_PIDFD) with a probe child (Go's os.checkPidfd: CLONE_VM,
// CLONE_VFORK, exit signal 0) that exits at once; /proc lists it for a few
// microseconds, longer when the machine is loaded, and taking it for the
// command made TestUDP fail ("logs not found by pid").
func (tr *traced) pid() int {
	tr.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c := commandPid(tr.cmd.Process.Pid); c > 0 {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr.t.Fatalf("wap5 (pid %d) started no child", tr.cmd.Process.Pid)
	return 0
}

// stop sends sig to wap5 (which forwards it) and waits for the summary.
func (tr *traced) stop(sig syscall.Signal) {
	tr.t.Helper()
	tr.cmd.Process.Signal(sig)
	select {
	case <-tr.done:
	case <-time.After(30 * time.Second):
		tr.kill()
		tr.t.Fatalf("%v did not stop on %v\nstderr:\n%s", tr.cmd.Args, sig, tr.stderr.String())
	}
	tr.t.Logf("%s:\n%s", strings.Join(tr.cmd.Args, " "), tr.stderr.String())
}

func (tr *traced) kill() {
	select {
	case <-tr.done:
		return
	default:
	}
	// wap5 runs the command in its own process group.
	for _, child := range childPids(tr.cmd.Process.Pid) {
		syscall.Kill(-child, syscall.SIGKILL)
		syscall.Kill(child, syscall.SIGKILL)
	}
	tr.cmd.Process.Kill()
	<-tr.done
}

// childPids lists the children of every thread of pid (Go starts processes
// from any of its threads).
func childPids(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, file := range files {
		b, _ := os.ReadFile(file)
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

// commandPid is the child of wap5 (pid) that is the traced command, or 0
// while there is none.
func commandPid(pid int) int {
	for _, c := range childPids(pid) {
		if exitSignal(c) == int(syscall.SIGCHLD) {
			return c
		}
	}
	return 0
}

// exitSignal is the signal pid's parent gets when pid exits (field 38 of
// /proc/PID/stat), or -1 when pid is gone.
func exitSignal(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// from the last ')'. Field 3 is the first after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 36 {
		return -1
	}
	n, err := strconv.Atoi(f[35])
	if err != nil {
		return -1
	}
	return n
}

// freePort returns a TCP (or UDP) port on 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitTCP waits until something accepts on 127.0.0.1:port and returns the
// local address of the probe connection that succeeded (the server logs it).
func waitTCP(t *testing.T, port int, tr *traced) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return c.LocalAddr().String()
		}
		select {
		case <-tr.done:
			t.Fatalf("%v exited before listening: %v\nstderr:\n%s", tr.cmd.Args, tr.err, tr.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("nothing listens on port %d\nstderr:\n%s", port, tr.stderr.String())
	return ""
}

// plog is one decoded per-process log.
type plog struct {
	*libsockcap.Process
	Events []libsockcap.Event
}

// logs decodes every log of the session; any damage fails the test.
func (s *session) logs() []*plog {
	s.t.Helper()
	paths, err := libsockcap.FindLogs(s.dir)
	if err != nil {
		s.t.Fatal(err)
	}
	var out []*plog
	for _, p := range paths {
		sc, err := libsockcap.Open(p)
		if err != nil {
			s.t.Fatalf("%s: %v", p, err)
		}
		l := &plog{Process: sc.Process()}
		for sc.Scan() {
			l.Events = append(l.Events, *sc.Event())
		}
		if err := sc.Err(); err != nil {
			s.t.Errorf("%s: %v", p, err)
		}
		for _, w := range sc.Warnings() {
			s.t.Errorf("%s: damage: %v", p, w)
		}
		sc.Close()
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

// byExe returns the logs whose executable's base name is exe.
func byExe(logs []*plog, exe string) []*plog {
	var out []*plog
	for _, l := range logs {
		if filepath.Base(l.Exe) == exe || strings.HasPrefix(filepath.Base(l.Exe), exe+".") {
			out = append(out, l)
		}
	}
	return out
}

func byPid(logs []*plog, pid int) []*plog {
	var out []*plog
	for _, l := range logs {
		if int(l.Pid) == pid {
			out = append(out, l)
		}
	}
	return out
}

func describe(logs []*plog) string {
	var b strings.Builder
	for _, l := range logs {
		fmt.Fprintf(&b, "  pid %d ppid %d exe %s argv %q: %d events\n", l.Pid, l.Ppid, l.Exe, l.Argv, len(l.Events))
	}
	return b.String()
}

// conn is one TCP or Unix connection as one process saw it.
type conn struct {
	pid           int32
	local, remote string
	opened        libsockcap.Op // connect, accept, or none (inherited)
	sent, recvd   int64
	sends, recvs  int
	peerPid       int32
}

func (c *conn) String() string {
	return fmt.Sprintf("pid %d %s->%s (%v) sent %d in %d, received %d in %d", c.pid, c.local, c.remote,
		c.opened, c.sent, c.sends, c.recvd, c.recvs)
}

// conns sums the successful transfers of every connection in the logs, by
// (pid, local, remote). Endpoints come from the event or, when the event
// has none, from the last connect/accept on its fd.
func conns(logs []*plog, proto libsockcap.Proto) map[string]*conn {
	out := map[string]*conn{}
	for _, l := range logs {
		type ends struct{ local, remote string }
		fds := map[int32]ends{}
		for i := range l.Events {
			ev := &l.Events[i]
			if ev.Proto != proto {
				continue
			}
			e := ends{ev.Local.String(), ev.Remote.String()}
			switch ev.Op {
			case libsockcap.OpConnect, libsockcap.OpAccept:
				if ev.Ret < 0 && ev.Errno != int32(syscall.EINPROGRESS) {
					continue
				}
				fds[ev.Fd] = e
			case libsockcap.OpClose:
				defer delete(fds, ev.Fd)
			}
			if e.local == "" || e.remote == "" {
				e = fds[ev.Fd]
			}
			if e.local == "" || e.remote == "" {
				continue
			}
			k := fmt.Sprintf("%d %s %s", l.Pid, e.local, e.remote)
			c := out[k]
			if c == nil {
				c = &conn{pid: l.Pid, local: e.local, remote: e.remote}
				out[k] = c
			}
			switch ev.Op {
			case libsockcap.OpConnect, libsockcap.OpAccept:
				c.opened = ev.Op
			case libsockcap.OpSend:
				if ev.Ret > 0 {
					c.sent += ev.Bytes
					c.sends++
				}
			case libsockcap.OpRecv:
				if ev.Ret > 0 {
					c.recvd += ev.Bytes
					c.recvs++
				}
			}
			if ev.PeerPid != 0 {
				c.peerPid = ev.PeerPid
			}
		}
	}
	return out
}

// find returns the connections of pid (0: any) from local to remote ("" matches any).
func find(cs map[string]*conn, pid int32, local, remote string) []*conn {
	var out []*conn
	for _, c := range cs {
		if (pid == 0 || c.pid == pid) && (local == "" || c.local == local) && (remote == "" || c.remote == remote) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// one returns the single connection that matches, failing otherwise.
func one(t *testing.T, cs map[string]*conn, pid int32, local, remote string) *conn {
	t.Helper()
	m := find(cs, pid, local, remote)
	if len(m) != 1 {
		t.Fatalf("%d connections of pid %d %s -> %s, want 1; all:\n%s", len(m), pid, local, remote, listConns(cs))
	}
	return m[0]
}

func listConns(cs map[string]*conn) string {
	var l []string
	for _, c := range cs {
		l = append(l, "  "+c.String())
	}
	sort.Strings(l)
	return strings.Join(l, "\n")
}

// count counts events of op in a log.
func count(l *plog, op libsockcap.Op) int {
	n := 0
	for _, ev := range l.Events {
		if ev.Op == op {
			n++
		}
	}
	return n
}

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCommandPid: the pid the harness takes for a traced command is the
// command's, even when /proc is read as fast as possible right after wap5
// starts (when Go's clone(CLONE_PIDFD) probe child is also listed: taking
// the first child listed picked the probe in 18 of 50 runs here; 12 runs miss it with
// probability 0.64^12 ≈ 0.5 %).
func TestCommandPid(t *testing.T) {
	s := newSession(t)
	for i := 0; i < 12; i++ {
		tr := s.command("", "/bin/sh", "-c", `echo $$; exec sleep 0.2`)
		if err := tr.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		got := 0
		for deadline := time.Now().Add(10 * time.Second); got == 0 && time.Now().Before(deadline); {
			got = commandPid(tr.cmd.Process.Pid)
		}
		if err := tr.cmd.Wait(); err != nil {
			t.Fatalf("wap5 run: %v\n%s", err, tr.stderr.String())
		}
		want, err := strconv.Atoi(strings.TrimSpace(tr.stdout.String()))
		if err != nil {
			t.Fatalf("no pid in %q", tr.stdout.String())
		}
		if got != want {
			t.Fatalf("run %d: took pid %d for the command, which is %d", i, got, want)
		}
	}
}
