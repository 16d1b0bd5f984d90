package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wap5/libsockcap"
	"wap5/libsockcap/preflight"
)

// testLib returns libsockcap.so from bin/ when built, else a trivial shared
// library (the environment and exit status tests only need a loadable file).
func testLib(t *testing.T) (path string, real bool) {
	t.Helper()
	dir := os.Getenv("WAP5_BIN")
	if dir == "" {
		dir = "../../bin"
	}
	if p, err := filepath.Abs(filepath.Join(dir, "libsockcap.so")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("neither bin/libsockcap.so nor gcc")
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "empty.c")
	os.WriteFile(src, []byte("int wap5_empty;\n"), 0o644)
	p := filepath.Join(tmp, "libempty.so")
	if b, err := exec.Command("gcc", "-shared", "-fPIC", "-o", p, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return p, false
}

func TestCaptureEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		node string
		want []string
	}{
		{"fresh", []string{"PATH=/bin", "HOME=/root"}, "",
			[]string{"PATH=/bin", "HOME=/root", "LD_PRELOAD=/l/libsockcap.so", "SOCKCAP_DIR=/logs"}},
		{"existing preload kept after ours", []string{"LD_PRELOAD=/a.so /b.so:/l/libsockcap.so"}, "n1",
			[]string{"LD_PRELOAD=/l/libsockcap.so:/a.so:/b.so", "SOCKCAP_DIR=/logs", "SOCKCAP_NODE=n1"}},
		{"old capture settings replaced", []string{"SOCKCAP_DIR=/old", "SOCKCAP_NODE=keep"}, "",
			[]string{"SOCKCAP_NODE=keep", "LD_PRELOAD=/l/libsockcap.so", "SOCKCAP_DIR=/logs"}},
		{"node overrides", []string{"SOCKCAP_NODE=old"}, "new",
			[]string{"LD_PRELOAD=/l/libsockcap.so", "SOCKCAP_DIR=/logs", "SOCKCAP_NODE=new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := captureEnv(tc.env, "/l/libsockcap.so", "/logs", tc.node)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestRunExitStatus(t *testing.T) {
	lib, _ := testLib(t)
	out := filepath.Join(t.TempDir(), "logs")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"success", []string{"/bin/sh", "-c", "echo hello"}, 0, "hello\n", ""},
		{"exit code", []string{"/bin/sh", "-c", "exit 3"}, 3, "", ""},
		{"killed by signal", []string{"/bin/sh", "-c", "kill -TERM $$"}, 128 + 15, "", ""},
		{"stdin passed", []string{"/bin/sh", "-c", "read x; echo got $x"}, 0, "got input\n", ""},
		{"not found", []string{"wap5-no-such-program"}, 127, "", "executable file not found"},
		{"not executable", []string{"/etc/passwd"}, 126, "", "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "input\n", append([]string{"run", "--lib", lib, "--out", out, "--"}, tc.args...)...)
			if code != tc.code || stdout != tc.stdout || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d stdout %q stderr %q; want %d, %q, stderr with %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestRunEnvironment(t *testing.T) {
	lib, _ := testLib(t)
	out := filepath.Join(t.TempDir(), "logs")
	t.Setenv("LD_PRELOAD", "")
	code, stdout, stderr := runCLI(t, "", "run", "--lib", lib, "--out", out, "--node", "n7", "--",
		"/bin/sh", "-c", `echo "$LD_PRELOAD|$SOCKCAP_DIR|$SOCKCAP_NODE"`)
	want := lib + "|" + out + "|n7\n"
	if code != 0 || stdout != want {
		t.Fatalf("exit %d stdout %q, want %q (stderr %q)", code, stdout, want, stderr)
	}
	// Root: traversable so privilege-dropping daemons reach their own logs;
	// never listable or writable by others.
	mode := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		mode = 0o711
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != mode {
		t.Errorf("log directory: %v %v, want mode %v", st.Mode(), err, mode)
	}
}

func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run"}, 2, "missing command"},
		{[]string{"run", "--lib", "/nonexistent/libsockcap.so", "--", "true"}, 1, "/nonexistent/libsockcap.so"},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestRunForwardsSignals sends SIGUSR1 and SIGTERM to wap5 (this process)
// and expects the command's trap to see them.
func TestRunForwardsSignals(t *testing.T) {
	lib, _ := testLib(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{
		{syscall.SIGUSR1, "USR1", 71},
		{syscall.SIGTERM, "TERM", 72},
		{syscall.SIGHUP, "HUP", 73},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ready := filepath.Join(dir, "ready")
			script := `trap "exit ` + strconv.Itoa(tc.code) + `" ` + tc.name + `; touch ` + ready + `; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exit 9`
			go func() {
				for i := 0; i < 400; i++ {
					if _, err := os.Stat(ready); err == nil {
						syscall.Kill(os.Getpid(), tc.sig)
						return
					}
					time.Sleep(25 * time.Millisecond)
				}
			}()
			code, _, stderr := runCLI(t, "", "run", "--lib", lib, "--out", filepath.Join(dir, "logs"), "--", "/bin/sh", "-c", script)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
		})
	}
}

// TestRunSummary needs the real library: a traced python process opens a
// socketpair and exchanges bytes; the summary line counts its log.
func TestRunSummary(t *testing.T) {
	lib, real := testLib(t)
	if !real {
		t.Skip("bin/libsockcap.so not built")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no python3")
	}
	out := filepath.Join(t.TempDir(), "logs")
	code, _, stderr := runCLI(t, "", "run", "--lib", lib, "--out", out, "--", py, "-c",
		"import socket; a, b = socket.socketpair(); a.send(b'x' * 10); b.recv(10)")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	re := regexp.MustCompile(`(?m)^wap5: 1 processes, (\d+) events, (\d+) log bytes \(sealed\), 0 events dropped, in ` + regexp.QuoteMeta(out) + `$`)
	m := re.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary line in %q", stderr)
	}
	logs, err := libsockcap.FindLogs(out)
	if err != nil || len(logs) != 1 || !strings.HasSuffix(logs[0], libsockcap.SealedSuffix) {
		t.Fatalf("logs %v (%v), want one sealed log", logs, err)
	}
	if st, _ := os.Stat(logs[0]); strconv.FormatInt(st.Size(), 10) != m[2] {
		t.Errorf("summary says %s log bytes, the sealed log has %d", m[2], st.Size())
	}
	sc, err := libsockcap.Open(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	n := 0
	for sc.Scan() {
		n++
	}
	if strconv.Itoa(n) != m[1] {
		t.Errorf("summary says %s events, the log has %d", m[1], n)
	}
}

// TestRunPreflightWarning runs a static program: it still runs, with a warning.
func TestRunPreflightWarning(t *testing.T) {
	lib, _ := testLib(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "s.c"), filepath.Join(dir, "static")
	os.WriteFile(src, []byte("int main(void){return 5;}\n"), 0o644)
	if b, err := exec.Command("gcc", "-static", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("gcc -static: %v\n%s", err, b)
	}
	code, _, stderr := runCLI(t, "", "run", "--lib", lib, "--out", filepath.Join(dir, "logs"), "--", bin)
	if code != 5 || !strings.Contains(stderr, "wap5: warning: "+bin+" is statically linked") {
		t.Errorf("exit %d stderr %q; want 5 and the static warning", code, stderr)
	}
}

func TestBlindSpots(t *testing.T) {
	st := logStats{hasLog: map[int32]bool{10: true, 11: true}, socketEvents: map[int32]int64{10: 5}}
	seen := []preflight.Seen{
		{Pid: 10, Exe: "/bin/ok", Sockets: 2},
		{Pid: 11, Exe: "/bin/raw", Sockets: 1},
		{Pid: 12, Exe: "/bin/static", Sockets: 3},
		{Pid: 13, Exe: "/bin/nosock"},
		{Pid: 14, Exe: "/bin/uring", IOUring: true},
	}
	got := blindSpots(seen, st)
	want := []string{"pid 11 (/bin/raw) held 1 sockets but logged no socket calls",
		"pid 12 (/bin/static) held 3 sockets but wrote no log", "pid 14 (/bin/uring) uses io_uring"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestOwnLogs(t *testing.T) {
	host, _ := os.Hostname()
	mk := func(pid, ppid int32) *runLog {
		return &runLog{path: strconv.Itoa(int(pid)), proc: libsockcap.Process{Host: host, Pid: pid, Ppid: ppid}}
	}
	logs := []*runLog{mk(100, 1), mk(101, 100), mk(102, 101), mk(200, 1), mk(201, 200), mk(300, 55)}
	got := ownLogs(logs, 100, []preflight.Seen{{Pid: 300}})
	var paths []string
	for _, l := range got {
		paths = append(paths, l.path)
	}
	if strings.Join(paths, " ") != "100 101 102 300" {
		t.Errorf("own logs %v, want 100 101 102 300 (another run wrote 200, 201)", paths)
	}
}

// rawSource opens a socket with a raw system call (invisible to
// interposition) and an io_uring instance, and lives long enough for the
// /proc sampling to see both.
const rawSource = `#include <sys/socket.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>
int main(void) {
	unsigned char params[120];
	memset(params, 0, sizeof params);
	long s = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	long r = syscall(SYS_io_uring_setup, 4, params);
	usleep(400000);
	return s < 0 || r < 0;
}
`

// TestRunWarnsBlindSpots: after the run, wap5 names the process whose
// socket it never saw in the log, and the io_uring user.
func TestRunWarnsBlindSpots(t *testing.T) {
	lib, real := testLib(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "raw.c"), filepath.Join(dir, "raw")
	os.WriteFile(src, []byte(rawSource), 0o644)
	if b, err := exec.Command("gcc", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	code, _, stderr := runCLI(t, "", "run", "--lib", lib, "--out", filepath.Join(dir, "logs"), "--", bin)
	if code != 0 {
		t.Skipf("io_uring or socket unavailable here (exit %d): %s", code, stderr)
	}
	want := []string{"(" + bin + ") uses io_uring", "(" + bin + ") held 1 sockets but wrote no log"}
	if real {
		want[1] = "(" + bin + ") held 1 sockets but logged no socket calls"
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}
