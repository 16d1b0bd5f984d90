package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScoreCLI(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Project 5 §7.5.1's example (shared with package score's tests).
	ex := filepath.Join("..", "..", "testdata", "score")
	truth, result, insts := filepath.Join(ex, "p5-example.trace"), filepath.Join(ex, "p5-example.json"), filepath.Join(ex, "p5-example.instances.jsonl")
	scoreResult, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	bad := write("bad.json", `{"algorithm":"linking","patterns":[{]}`)
	tests := []struct {
		name           string
		stdin          string
		args           []string
		code           int
		stdout, stderr string
	}{
		{name: "text", args: []string{"score", "--truth", truth, result}, stdout: "linking (message trees) against 2 truth instances"},
		{name: "json with instances", args: []string{"score", "--json", "--truth", truth, "--instances", insts, result},
			stdout: `"truth_found": 1`, stderr: `id "99" names no message`},
		{name: "stdin", stdin: string(scoreResult), args: []string{"score", "--top", "2", "--truth", truth, "-"}, stdout: "top-N false negatives"},
		{name: "alias", args: []string{"score", "--alias", "D=E", "--truth", truth, result}, stdout: "A>B(B>C(C>E()))"},
		{name: "no truth", args: []string{"score", result}, code: 2, stderr: "needs --truth"},
		{name: "no result", args: []string{"score", "--truth", truth}, code: 2, stderr: "one RESULT"},
		{name: "bad alias", args: []string{"score", "--alias", "x", "--truth", truth, result}, code: 2, stderr: "TRUTH=RESULT"},
		{name: "bad json", args: []string{"score", "--truth", truth, bad}, code: 1, stderr: "bad.json: result JSON: offset"},
		{name: "missing truth", args: []string{"score", "--truth", filepath.Join(dir, "nope"), result}, code: 1, stderr: "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout %.400q (want %q)\nstderr %q (want %q)", code, tc.code, stdout, tc.stdout, stderr, tc.stderr)
			}
		})
	}
	code, stdout, _ := runCLI(t, "", "score", "--json", "--truth", truth, "--instances", insts, result)
	var r struct {
		Patterns  struct{ TP, FP, FN float64 }
		Instances struct {
			Correct   int
			Precision float64
		}
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.Patterns.TP != 1 || r.Patterns.FP != 2 || r.Instances.Correct != 1 {
		t.Fatalf("json report %+v (exit %d)", r, code)
	}
}

// gen → a perfect hand-off: the generated trace scores against itself
// through the CLI files (truth read back from text).
func TestGenThenScore(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "t.gen")
	os.WriteFile(cfg, []byte("seed 2\nmessages 40\nnode A client\nnode B port=80\nlink * * delay=1ms\ntracelet x from=A think=10ms\n  send B wait=1ms\n"), 0o644)
	out := filepath.Join(dir, "t.trace")
	if code, _, stderr := runCLI(t, "", "gen", "-o", out, cfg); code != 0 {
		t.Fatal(stderr)
	}
	res := filepath.Join(dir, "r.json")
	os.WriteFile(res, []byte(`{"algorithm":"convolution","patterns":[{"rank":1,"count":40,"nodes":["A","B"],"edges":[{"delays_s":[],"count":40}]}],"warnings":[]}`), 0o644)
	code, stdout, stderr := runCLI(t, "", "score", "--json", "--truth", out, res)
	if code != 0 || !strings.Contains(stdout, `"recall": 1`) || !strings.Contains(stdout, `"view": "chains"`) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}
