package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// figure3 is Project 5's Figure 3 example as a text trace.
const figure3 = `# wap5 message trace v1
1.000 A - 1.001 B - 10 kind=call call=1 truth=1
3.000 B - 3.001 C - 10 kind=call call=2 truth=1
5.000 C - 5.001 B - 10 kind=return call=2 truth=1
7.000 B - 7.001 D - 10 kind=call call=3 truth=1
9.000 D - 9.001 B - 10 kind=return call=3 truth=1
11.000 B - 11.001 A - 10 kind=return call=1 truth=1
12.000 B - 12.001 A - 10 kind=return call=9
`

func writeTemp(t *testing.T, name, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNestCLI(t *testing.T) {
	p := writeTemp(t, "fig3.trace", figure3)
	inst := filepath.Join(t.TempDir(), "inst.jsonl")
	code, out, stderr := runCLI(t, "", "nest", "--json", "--instances", inst, p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Algorithm string
		Patterns  []struct {
			Rank, Count int
			Root        struct {
				From, To   string
				CallDelayS *float64 `json:"call_delay_s"`
				LatencyS   float64  `json:"latency_s"`
				Children   []struct {
					To         string
					CallDelayS float64 `json:"call_delay_s"`
				}
			}
		}
		Warnings []string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := got.Patterns[0].Root
	if got.Algorithm != "nesting" || len(got.Patterns) != 1 || r.From != "A" || r.To != "B" || r.CallDelayS != nil || r.LatencyS != 10.001 ||
		len(r.Children) != 2 || r.Children[1].To != "D" || r.Children[1].CallDelayS != 5.999 {
		t.Fatalf("output %s", out)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "1 of 7 messages") || !strings.Contains(stderr, "warning: 1 of 7") {
		t.Fatalf("warnings %q, stderr %q", got.Warnings, stderr)
	}
	b, _ := os.ReadFile(inst)
	// No id=: messages are named by their lines in the file (line 1 is the header).
	if !strings.Contains(string(b), `"ids":["L2","L7","L3","L4","L5","L6"]`) {
		t.Fatalf("instances %s", b)
	}
	code, out, _ = runCLI(t, "", "nest", p)
	if code != 0 || !strings.Contains(out, "B → D   call delay  5999.0 ms") {
		t.Fatalf("text output %q", out)
	}
}

func TestNestCLIUsage(t *testing.T) {
	for _, args := range [][]string{{"nest"}, {"nest", "--time", "bogus", "x"}, {"nest", "a", "b"}} {
		if code, _, stderr := runCLI(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d (%s)", args, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "", "nest", "/no/such/file"); code != 1 || !strings.Contains(stderr, "wap5: ") {
		t.Errorf("missing file: exit %d (%s)", code, stderr)
	}
}

func TestConvolveCLI(t *testing.T) {
	// A relays to B, B to C after 2 s, every 10 s or so (irregularly).
	var b strings.Builder
	b.WriteString("# wap5 message trace v1\n")
	ts := 1000.0
	for i := 0; i < 300; i++ {
		ts += 7 + float64(i%5)*1.3
		b.WriteString(ftoa(ts) + " A - " + ftoa(ts) + " B - 10\n")
		b.WriteString(ftoa(ts+2) + " B - " + ftoa(ts+2) + " C - 10\n")
	}
	p := writeTemp(t, "relay.trace", b.String())
	code, out, stderr := runCLI(t, "", "convolve", "--json", "--quantum", "0.5", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Algorithm string
		Patterns  []struct {
			Count int
			Nodes []string
			Edges []struct {
				Delays []float64 `json:"delays_s"`
				Count  int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Algorithm != "convolution" || len(got.Patterns) != 1 || strings.Join(got.Patterns[0].Nodes, ">") != "A>B>C" ||
		got.Patterns[0].Count != 300 || len(got.Patterns[0].Edges[1].Delays) != 1 || got.Patterns[0].Edges[1].Delays[0] != 2 ||
		!strings.Contains(stderr, "μ = 500ms") {
		t.Fatalf("output %s\nstderr %s", out, stderr)
	}
	for _, args := range [][]string{{"convolve"}, {"convolve", "--quantum", "-1", p}, {"convolve", "--n", "2", "--s", "3", p}, {"convolve", "--root", "nobody", p}} {
		if code, _, _ := runCLI(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func ftoa(x float64) string { return strings.TrimRight(strings.TrimRight(fmtF(x), "0"), ".") }

func fmtF(x float64) string { return strconvFormat(x) }

func strconvFormat(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }

// TestNestActorsCLI: on the recorded three-client testbed run (sa=/da= on
// every message) nest reports per node what it learnt about the threads,
// uses the hint at s1 and s2, and finds exactly the three real call trees;
// --actor-min 2 turns the hint off.
func TestNestActorsCLI(t *testing.T) {
	p := filepath.Join("..", "..", "e2e", "testdata", "nest-recorded", "actors-clients-3", "trace.txt")
	for _, tc := range []struct {
		args     []string
		used     bool
		patterns int // 3: the real call trees; more: some misassembled
	}{
		{nil, true, 3},
		{[]string{"--actor-min", "2"}, false, 0},
	} {
		code, out, stderr := runCLI(t, "", append(append([]string{"nest", "--json"}, tc.args...), p)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		for _, node := range []string{"s1", "s2"} {
			line := ""
			for _, l := range strings.Split(stderr, "\n") {
				if strings.Contains(l, "actors at "+node+":") {
					line = l
				}
			}
			if line == "" || strings.Contains(line, "used:") != tc.used {
				t.Errorf("%v: %s: %q, want used=%v\n%s", tc.args, node, line, tc.used, stderr)
			}
		}
		var got struct{ Patterns []json.RawMessage }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if tc.patterns > 0 && len(got.Patterns) != tc.patterns || tc.patterns == 0 && len(got.Patterns) <= 3 {
			t.Errorf("%v: %d patterns, want %v", tc.args, len(got.Patterns), map[bool]string{true: "3", false: "more than 3"}[tc.patterns > 0])
		}
	}
	if code, _, _ := runCLI(t, "", "nest", "--actor-chance", "-1", p); code != 2 {
		t.Errorf("--actor-chance -1: exit %d, want 2", code)
	}
}
