package libsockcap

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The C snippets under c/tests are built here and run with the library
// preloaded. SOCKCAP_LIB selects the library (default: $WAP5_BIN or ../bin);
// SOCKCAP_PRELOAD_EXTRA is put first in LD_PRELOAD (the ASan runtime when
// c/tests/Makefile runs these tests against a sanitized build).

func libPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("SOCKCAP_LIB")
	if p == "" {
		if b := os.Getenv("WAP5_BIN"); b != "" {
			p = filepath.Join(b, "libsockcap.so")
		} else {
			p, _ = filepath.Abs(filepath.Join("..", "bin", "libsockcap.so"))
		}
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("WAP5_BIN") != "" || os.Getenv("SOCKCAP_LIB") != "" {
			t.Fatalf("libsockcap.so not found: %v", err)
		}
		t.Skipf("libsockcap.so not built (%v); run make", err)
	}
	return p
}

func cc() string {
	if c := os.Getenv("CC"); c != "" {
		return c
	}
	return "cc"
}

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{}
)

// TestMain removes the snippets' build directory after the tests (each
// test binary made one under $TMPDIR and left it behind).
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// snippet compiles c/tests/<name>.c once per test binary.
func snippet(t testing.TB, name string, flags ...string) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("libsockcap is Linux-only")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	key := name + " " + strings.Join(flags, " ")
	if p, ok := built[key]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "sockcap-snippets")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, name+strconv.Itoa(len(built)))
	args := append([]string{"-O1", "-g", "-Wall", "-Werror", "-o", out, filepath.Join("c", "tests", name+".c"), "-lpthread"}, flags...)
	if b, err := exec.Command(cc(), args...).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, b)
	}
	built[key] = out
	return out
}

type runResult struct {
	dir            string
	stdout, stderr string
	code           int
	vals           map[string]int // "key value" lines of stdout
}

// capture runs argv with the library preloaded, logs in a fresh directory.
func capture(t testing.TB, env []string, argv ...string) runResult {
	t.Helper()
	lib := libPath(t)
	dir := t.TempDir()
	cmd := exec.Command(argv[0], argv[1:]...)
	pre := lib
	if x := os.Getenv("SOCKCAP_PRELOAD_EXTRA"); x != "" {
		pre = x + " " + lib
	}
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+pre, "SOCKCAP_DIR="+dir, "SOCKCAP_NODE=testnode")
	cmd.Env = append(cmd.Env, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := runResult{dir: dir, stdout: so.String(), stderr: se.String(), vals: map[string]int{}}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else {
			t.Fatalf("%v: %v", argv, err)
		}
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			if v, err := strconv.Atoi(f[1]); err == nil {
				r.vals[f[0]] = v
			}
		}
	}
	return r
}

type procLog struct {
	P        Process
	Events   []Event
	Warnings []error
}

// readLogs reads every log under dir; damage fails the test.
func readLogs(t testing.TB, dir string) []procLog {
	t.Helper()
	files, err := FindLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []procLog
	for _, f := range files {
		s, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		pl := procLog{P: *s.Process()}
		for s.Scan() {
			e := *s.Event()
			e.Proc = nil
			pl.Events = append(pl.Events, e)
		}
		pl.Warnings = s.Warnings()
		for _, w := range pl.Warnings {
			t.Errorf("damage: %v", w)
		}
		s.Close()
		out = append(out, pl)
	}
	return out
}

// byPid returns the logs of pid, in start order.
func byPid(logs []procLog, pid int) []procLog {
	var out []procLog
	for _, l := range logs {
		if int(l.P.Pid) == pid {
			out = append(out, l)
		}
	}
	return out
}

func (l procLog) filter(f func(e *Event) bool) []Event {
	var out []Event
	for i := range l.Events {
		if f(&l.Events[i]) {
			out = append(out, l.Events[i])
		}
	}
	return out
}

func sumBytes(evs []Event) int64 {
	var n int64
	for _, e := range evs {
		n += e.Bytes
	}
	return n
}
