package capturetest

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// cpythonModules are CPython's own socket-heavy test modules (Debian package
// libpython3.11-testsuite).
var cpythonModules = []string{"test_socketserver", "test_selectors", "test_httpservers",
	"test_asyncio.test_sock_lowlevel", "test_asyncio.test_streams", "test_urllib2_localnet"}

type junit struct {
	Cases []struct {
		Name    string    `xml:"name,attr"`
		Result  string    `xml:"result,attr"`
		Skipped *struct{} `xml:"skipped"`
		Failure *struct{} `xml:"failure"`
		Error   *struct{} `xml:"error"`
	} `xml:"testsuite>testcase"`
}

// outcomes reads regrtest's --junit-xml output: test name -> outcome.
func outcomes(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j junit
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m := map[string]string{}
	for _, c := range j.Cases {
		o := "pass"
		switch {
		case c.Failure != nil:
			o = "FAIL"
		case c.Error != nil:
			o = "ERROR"
		case c.Skipped != nil:
			o = "skipped"
		}
		m[c.Name] = o
	}
	return m
}

// TestCPythonTransparency runs CPython's socket test modules with and
// without libsockcap, at the same time, and requires the same outcome for
// every test case. Modules whose outcomes differ are run once more both ways
// (timing-sensitive tests on a loaded machine); a difference that repeats fails.
func TestCPythonTransparency(t *testing.T) {
	bin := binDir(t)
	if _, err := os.Stat("/usr/lib/python3.11/test/test_socketserver.py"); err != nil {
		if os.Getenv("WAP5_BIN") != "" {
			t.Fatalf("CPython's test suite is missing (libpython3.11-testsuite): %v", err)
		}
		t.Skip("CPython's test suite is missing (apt-get install libpython3.11-testsuite)")
	}
	plain, traced := runBothWays(t, bin, "first", cpythonModules)
	if len(plain) < 300 {
		t.Errorf("only %d test cases ran", len(plain))
	}
	diffs := compareOutcomes(plain, traced)
	if len(diffs) == 0 {
		return
	}
	t.Logf("differences in the first run, running their modules again:\n  %s", strings.Join(diffs, "\n  "))
	again := map[string]bool{}
	for _, d := range diffs {
		for _, m := range cpythonModules {
			if strings.HasPrefix(d, "test."+m+".") {
				again[m] = true
			}
		}
	}
	var modules []string
	for m := range again {
		modules = append(modules, m)
	}
	sort.Strings(modules)
	plain2, traced2 := runBothWays(t, bin, "second", modules)
	var repeated []string
	for _, d := range compareOutcomes(plain2, traced2) {
		for _, first := range diffs {
			if strings.SplitN(d, ":", 2)[0] == strings.SplitN(first, ":", 2)[0] {
				repeated = append(repeated, d)
			}
		}
	}
	if len(repeated) > 0 {
		t.Errorf("%d of %d test cases differ twice with libsockcap:\n  %s", len(repeated), len(plain), strings.Join(repeated, "\n  "))
	}
}

// runBothWays runs the modules with and without wap5 run, concurrently, and
// returns the outcomes of each test case.
func runBothWays(t *testing.T, bin, round string, modules []string) (plain, traced map[string]string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	runs := map[string][]string{
		"plain":  {"/usr/bin/python3"},
		"traced": {filepath.Join(bin, "wap5"), "run", "--out", filepath.Join(dir, "logs"), "--", "/usr/bin/python3"},
	}
	done := map[string]chan result{}
	for name, prefix := range runs {
		args := append(append([]string{}, prefix...), "-m", "test", "-u", "network",
			"--junit-xml", filepath.Join(dir, name+".xml"))
		args = append(args, modules...)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		ch := make(chan result, 1)
		done[name] = ch
		go func() {
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			ch <- result{out.Bytes(), err}
		}()
	}
	for name, ch := range done {
		r := <-ch
		if ctx.Err() != nil {
			t.Fatalf("%s run (%s) timed out:\n%s", name, round, tail(r.out))
		}
		t.Logf("%s run, %s: exit %v\n%s", round, name, r.err, tail(r.out))
	}
	return outcomes(t, filepath.Join(dir, "plain.xml")), outcomes(t, filepath.Join(dir, "traced.xml"))
}

// compareOutcomes lists the test cases whose outcome differs.
func compareOutcomes(plain, traced map[string]string) []string {
	var diffs []string
	for name, o := range plain {
		if traced[name] != o {
			diffs = append(diffs, name+": "+o+" without libsockcap, "+orNone(traced[name])+" with it")
		}
	}
	for name, o := range traced {
		if _, ok := plain[name]; !ok {
			diffs = append(diffs, name+": "+o+" with libsockcap only")
		}
	}
	sort.Strings(diffs)
	return diffs
}

func orNone(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}
