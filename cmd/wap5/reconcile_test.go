package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wap5/trace"
)

const reconcileLogs = "../../reconcile/testdata/logs"

func TestReconcileCLI(t *testing.T) {
	loop := filepath.Join(reconcileLogs, "loopback")
	foreign := filepath.Join(reconcileLogs, "foreign.sclog")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings, in order
		stderr   []string
		noStdout bool
		messages int
	}{
		{name: "text by host", args: []string{loop}, code: 0,
			stdout: []string{trace.TextHeader, " hA 127.0.0.1:56802 ", " hA 127.0.0.1:42299 15 id=0 kind=call call=0",
				"unix:@145287", "unix:@145288 3 id=7"}, messages: 8},
		{name: "process granularity", args: []string{"--granularity", "process", loop}, code: 0,
			stdout: []string{" hA/python3.11/28589 127.0.0.1:56802 "}, messages: 8},
		{name: "aggregate clients", args: []string{"--aggregate-clients", loop}, code: 0,
			stdout: []string{" hA 127.0.0.1:* ", " hA 127.0.0.1:42299 15 "}, messages: 8},
		{name: "foreign file is a warning", args: []string{loop, foreign}, code: 0,
			stderr: []string{"wap5: warning: " + foreign + ": not a libsockcap log"}, messages: 8},
		{name: "damaged log: warning with offset, the rest reconciled",
			args: []string{filepath.Join(reconcileLogs, "damaged.sclog.zst")}, code: 0,
			stderr:   []string{"wap5: warning: " + filepath.Join(reconcileLogs, "damaged.sclog.zst") + ": offset 4166: bad varint"},
			stdout:   []string{"- 127.0.0.1 127.0.0.1:56802 1795310117.487083546 hA 127.0.0.1:42299 15 "},
			messages: 6},
		{name: "only foreign", args: []string{foreign}, code: 1,
			stderr: []string{"wap5: nothing readable in 1 inputs"}, noStdout: true},
		{name: "bad granularity", args: []string{"--granularity", "thread", loop}, code: 2,
			stderr: []string{"wap5: reconcile: unknown granularity"}, noStdout: true},
		{name: "no input", args: nil, code: 2, stderr: []string{"wap5: reconcile: no INPUT"}, noStdout: true},
		{name: "missing input", args: []string{"/nonexistent/x"}, code: 1, stderr: []string{"no such file"}, noStdout: true},
		{name: "bad recv-at", args: []string{"--recv-at", "middle", loop}, code: 2, noStdout: true},
		{name: "zero packet-reorder", args: []string{"--packet-reorder", "0", loop}, code: 2,
			stderr: []string{"--packet-reorder must be positive"}, noStdout: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", append([]string{"reconcile"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errs)
			}
			rest := out
			for _, s := range tc.stdout {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order):\n%s", s, out)
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errs, s) {
					t.Fatalf("stderr lacks %q:\n%s", s, errs)
				}
			}
			if tc.noStdout && out != "" {
				t.Fatalf("unexpected stdout:\n%s", out)
			}
			if tc.messages > 0 {
				tr, err := trace.Read(strings.NewReader(out), "stdout")
				if err != nil {
					t.Fatal(err)
				}
				if len(tr.Messages) != tc.messages {
					t.Fatalf("%d messages, want %d:\n%s", len(tr.Messages), tc.messages, out)
				}
				if err := tr.CheckValid(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// The binary output (by file name) reads back as the same trace as the text.
func TestReconcileBinaryOutput(t *testing.T) {
	loop := filepath.Join(reconcileLogs, "loopback")
	dir := t.TempDir()
	bin := filepath.Join(dir, "t.w5t")
	if code, _, errs := runCLI(t, "", "reconcile", "-o", bin, loop); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), trace.BinaryMagic) {
		t.Fatalf("%s is not a binary trace", bin)
	}
	code, text, _ := runCLI(t, "", "reconcile", loop)
	if code != 0 {
		t.Fatal("text run failed")
	}
	a, err := trace.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	b, err := trace.Read(strings.NewReader(text), "text")
	if err != nil {
		t.Fatal(err)
	}
	var sa, sb strings.Builder
	trace.WriteText(&sa, a)
	trace.WriteText(&sb, b)
	if sa.String() != sb.String() {
		t.Fatalf("binary and text differ:\n%s\n---\n%s", sa.String(), sb.String())
	}
	// --format binary to stdout: the same bytes as the file; with
	// --aggregate-clients (the whole trace first, then the writer) too.
	code, out, errs := runCLI(t, "", "reconcile", "--format", "binary", loop)
	if code != 0 || out != string(data) {
		t.Fatalf("binary on stdout: exit %d (%s), %d bytes, the file has %d", code, errs, len(out), len(data))
	}
	code, out, errs = runCLI(t, "", "reconcile", "--format", "binary", "--aggregate-clients", "-o", "-", loop)
	_, text, _ = runCLI(t, "", "reconcile", "--aggregate-clients", loop)
	c, err := trace.Read(strings.NewReader(out), "stdout")
	if code != 0 || err != nil {
		t.Fatalf("aggregated binary on stdout: exit %d (%s), %v", code, errs, err)
	}
	var sc strings.Builder
	trace.WriteText(&sc, c)
	if sc.String() != text || len(c.Messages) == 0 {
		t.Fatalf("aggregated binary and text differ:\n%s\n---\n%s", sc.String(), text)
	}
}

// TestReconcileDocExamples runs every `$ wap5 ...` example of
// docs/reconcile.md and compares the output shown there.
func TestReconcileDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/reconcile.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```console\n")[1:]
	if len(blocks) == 0 {
		t.Fatal("no console examples in docs/reconcile.md")
	}
	for _, b := range blocks {
		b = b[:strings.Index(b, "```")]
		lines := strings.SplitAfter(b, "\n")
		cmdline := strings.TrimSpace(strings.TrimPrefix(lines[0], "$ "))
		args := strings.Fields(cmdline)[1:]
		for i, a := range args {
			if strings.HasPrefix(a, "reconcile/testdata/") {
				args[i] = "../../" + a
			}
		}
		code, stdout, stderr := runCLI(t, "", args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", cmdline, code, stderr)
		}
		if want := strings.Join(lines[1:], ""); stdout != want {
			t.Errorf("%s:\n%s\ndocs/reconcile.md shows:\n%s", cmdline, stdout, want)
		}
	}
}

// TestReconcileSyncedClocks: on hosts whose clocks agree (the testbed's
// namespaces share one kernel clock), the offset pass changes nothing, and
// --synced-clocks, which skips it, gives the same trace.
func TestReconcileSyncedClocks(t *testing.T) {
	dir := filepath.Join(reconcileLogs, "testbed")
	code, with, stderr := runCLI(t, "", "reconcile", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "clocks: ") {
		t.Errorf("offsets reported for one kernel's clock: %s", stderr)
	}
	code, without, stderr := runCLI(t, "", "reconcile", "--synced-clocks", dir)
	if code != 0 {
		t.Fatalf("--synced-clocks: exit %d: %s", code, stderr)
	}
	if with != without || strings.Count(with, "\n") < 10 {
		t.Errorf("traces differ or are empty:\n%s\n--- with --synced-clocks\n%s", with, without)
	}
}

// BenchmarkReconcileCLI runs `wap5 reconcile -o FILE.w5t DIR` in-process on
// the logs in WAP5_BENCH_LOGS (bench/reconcile.sh makes them), with the
// options in WAP5_BENCH_ARGS, for profiles of the whole command.
func BenchmarkReconcileCLI(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		b.Skip("set WAP5_BENCH_LOGS to a log directory")
	}
	out := filepath.Join(b.TempDir(), "out.w5t")
	for i := 0; i < b.N; i++ {
		var so, se bytes.Buffer
		args := append([]string{"wap5", "reconcile"}, strings.Fields(os.Getenv("WAP5_BENCH_ARGS"))...)
		if code := run(append(args, "-o", out, dir), strings.NewReader(""), &so, &se); code != 0 {
			b.Fatalf("exit %d: %s", code, se.String())
		}
	}
}
