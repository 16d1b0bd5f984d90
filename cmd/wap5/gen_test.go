package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wap5/trace"
)

const genTestConfig = `
seed 5
messages 200
node c client count=2
node s port=80
node o untraced port=81
link * * delay=1ms
tracelet t from=c think=uniform(0ms,10ms) parallel=2
  call s reply=2ms
    call o wait=1ms reply=3ms
`

func TestGenCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "t.gen")
	if err := os.WriteFile(cfg, []byte(genTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.gen")
	os.WriteFile(bad, []byte("node a\nnode a\n"), 0o644)

	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  string // substring
		stderr  string
		outFile string
	}{
		{name: "stdout", args: []string{"gen", cfg}, stdout: "# wap5 message trace v1\n"},
		{name: "json dry run", args: []string{"gen", "--json", cfg}, stdout: `"instances":`},
		{name: "json and file", args: []string{"gen", "--json", "--parallel", "1", "-o", filepath.Join(dir, "o.trace"), cfg},
			stdout: `"mean_parallelism":`, outFile: filepath.Join(dir, "o.trace")},
		{name: "binary", args: []string{"gen", "--binary", "-o", filepath.Join(dir, "o.bin"), cfg}, outFile: filepath.Join(dir, "o.bin")},
		{name: "overrides", args: []string{"gen", "--seed", "7", "--messages", "100", "--stddev-scale", "2", "--loss", "0.1",
			"--sniffer", "1000:16", "--skew", "s=5ms", "--drift", "s=10", "--parents", cfg}, stdout: " parent="},
		{name: "stdout dash", args: []string{"gen", "-o", "-", cfg}, stdout: "# wap5 message trace v1\n"},
		{name: "dash and json", args: []string{"gen", "-o", "-", "--json", cfg}, code: 2, stderr: "both write to stdout"},
		{name: "no config", args: []string{"gen"}, code: 2, stderr: "wap5: gen wants one CONFIG"},
		{name: "binary without -o", args: []string{"gen", "--binary", cfg}, code: 2, stderr: "--binary needs -o"},
		{name: "bad skew node", args: []string{"gen", "--skew", "zz=1ms", cfg}, code: 2, stderr: `no node or group "zz"`},
		{name: "bad sniffer", args: []string{"gen", "--sniffer", "fast", cfg}, code: 2, stderr: "RATE:QUEUE"},
		{name: "bad config", args: []string{"gen", bad}, code: 1, stderr: "bad.gen:2: node \"a\" declared twice"},
		{name: "missing config", args: []string{"gen", filepath.Join(dir, "nope.gen")}, code: 1, stderr: "nope.gen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout %.300q (want %q)\nstderr %q (want %q)", code, tc.code, stdout, tc.stdout, stderr, tc.stderr)
			}
			if tc.outFile != "" {
				tr, err := trace.ReadFile(tc.outFile)
				if err != nil || len(tr.Messages) < 100 {
					t.Fatalf("reading %s: %v", tc.outFile, err)
				}
			}
		})
	}
}

func TestGenJSONSummary(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "t.gen")
	os.WriteFile(cfg, []byte(genTestConfig), 0o644)
	code, stdout, stderr := runCLI(t, "", "gen", "--json", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Messages, Instances int64
		Tracelets           []struct {
			Name     string
			Variants map[string]int
		}
		Clocks []struct {
			Node     string
			Untraced bool
		}
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Messages < 200 || sum.Instances*4 != sum.Messages || len(sum.Tracelets) != 1 ||
		sum.Tracelets[0].Variants[">s(>o())"] != int(sum.Instances) || len(sum.Clocks) != 4 || !sum.Clocks[3].Untraced {
		t.Fatalf("summary %+v", sum)
	}
}

// Every `wap5 gen` example in docs/gen.md runs (shortened to a few hundred
// messages, output files in a temporary directory), so the docs cannot drift.
func TestGenDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/gen.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := 0
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "wap5 gen ") || strings.Contains(line, "[") {
			continue // not an example (the synopsis)
		}
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		args := strings.Fields(line)[1:]
		for i, a := range args {
			switch {
			case a == ">":
				args = args[:i] // stdout is captured anyway
			case strings.HasPrefix(a, "testdata/"):
				args[i] = filepath.Join("..", "..", a)
			case i > 0 && args[i-1] == "-o":
				args[i] = filepath.Join(dir, a)
			}
			if a == ">" {
				break
			}
		}
		args = append([]string{args[0], "--messages", "300"}, args[1:]...)
		n++
		if code, _, stderr := runCLI(t, "", args...); code != 0 {
			t.Errorf("%s: exit %d: %s", line, code, stderr)
		}
	}
	if n < 5 {
		t.Fatalf("found %d examples in docs/gen.md", n)
	}
}
