package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wap5/trace"
)

// TestLinkGolden: the contract's JSON and the text table, for both methods
// (golden files named after the options).
func TestLinkGolden(t *testing.T) {
	trace := filepath.Join("testdata", "link", "small.txt")
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"small.joint.json", []string{"link", "--json", trace}},
		{"small.wap5.json", []string{"link", "--json", "--method", "wap5", "--max-delay", "100ms", trace}},
		{"small.joint.txt", []string{"link", trace}},
		{"small.clients.json", []string{"link", "--json", "--aggregate-clients", trace}},
	} {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %s", tc.args, code, stderr)
		}
		goldenFile(t, "link", tc.golden, []byte(stdout))
	}
}

// TestLinkContract checks the JSON shape the contract fixes and the
// --instances lines.
func TestLinkContract(t *testing.T) {
	dir := t.TempDir()
	inst := filepath.Join(dir, "inst.jsonl")
	code, stdout, stderr := runCLI(t, "", "link", "--json", "--instances", inst, filepath.Join("testdata", "link", "small.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Algorithm string `json:"algorithm"`
		Patterns  []struct {
			Rank     int             `json:"rank"`
			Count    int             `json:"count"`
			Expected float64         `json:"expected"`
			MaxProb  float64         `json:"max_prob"`
			Root     json.RawMessage `json:"root"`
		} `json:"patterns"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Algorithm != "linking" || len(out.Patterns) != 3 || out.Warnings == nil {
		t.Fatalf("algorithm %q, %d patterns, warnings %v", out.Algorithm, len(out.Patterns), out.Warnings)
	}
	for i, p := range out.Patterns {
		if p.Rank != i+1 || (i > 0 && p.Expected > out.Patterns[i-1].Expected) {
			t.Errorf("pattern %d: rank %d expected %v out of order", i, p.Rank, p.Expected)
		}
	}
	var root struct {
		From, To string
		Net      *float64 `json:"net_s"`
		Wait     *float64 `json:"wait_s"`
		Children []struct {
			From, To string
			Net      *float64 `json:"net_s"`
			Wait     *float64 `json:"wait_s"`
		} `json:"children"`
	}
	// The static page (one call) ties with the two full paths; take c1's
	// full path.
	found := false
	for _, p := range out.Patterns {
		if err := json.Unmarshal(p.Root, &root); err != nil {
			t.Fatal(err)
		}
		if root.From == "c1" && len(root.Children) == 1 && root.Children[0].To == "auth" {
			found = true
			break
		}
	}
	if !found {
		t.Fatalf("no c1 → web → auth pattern in %s", stdout)
	}
	// web's clock is 2 ms ahead: corrected, c1→web takes 0.3 ms.
	if root.Net == nil || *root.Net < 0.00029 || *root.Net > 0.00031 || root.Wait != nil {
		t.Errorf("root %+v", root)
	}
	if len(root.Children) != 1 || root.Children[0].To != "auth" || root.Children[0].Wait == nil || *root.Children[0].Wait < 0.0099 || *root.Children[0].Wait > 0.0101 {
		t.Errorf("first child %+v", root.Children)
	}
	f, err := os.ReadFile(inst)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(f))
	lines := 0
	for sc.Scan() {
		var in struct {
			Pattern int      `json:"pattern"`
			Prob    float64  `json:"prob"`
			IDs     []string `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			t.Fatal(err)
		}
		lines++
		if len(in.IDs) != 6 && len(in.IDs) != 2 || in.Prob <= 0 || in.Prob > 1 {
			t.Errorf("instance %+v", in)
		}
		if len(in.IDs) == 6 && in.IDs[0][0] != in.IDs[5][0] {
			t.Errorf("instance %v mixes two requests", in.IDs)
		}
	}
	if lines != 3 {
		t.Errorf("%d instance lines, want 3", lines)
	}
}

func TestLinkUsage(t *testing.T) {
	tr := filepath.Join("testdata", "link", "small.txt")
	for _, args := range [][]string{
		{"link"},
		{"link", "--method", "magic", tr},
		{"link", "--delay-model", "cauchy", tr},
		{"link", "--actor-min", "-1", tr},
	} {
		if code, _, stderr := runCLI(t, "", args...); code != 2 || !strings.HasPrefix(stderr, "wap5: ") {
			t.Errorf("%v: exit %d, stderr %q; want usage error", args, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "", "link", "no-such-file"); code != 1 || !strings.Contains(stderr, "no-such-file") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

// TestLinkActors: on a testbed trace with threads (sa=/da=) the joint
// linker reports the same-thread habit per node that receives requests,
// used at the threaded and forking servers; --actor-min 2 turns it off.
func TestLinkActors(t *testing.T) {
	tr := filepath.Join("..", "..", "e2e", "testdata", "nest-recorded", "actors-clients-3", "trace.txt")
	tests := []struct {
		args []string
		want []string // stderr lines
		not  string
	}{
		{nil, []string{"wap5: link: actors at s2: 36 actors, same actor in 18 of 18", "wap5: link: actors at s1: "}, "actors at c:"},
		{[]string{"--actor-min", "2"}, nil, "actors at"},
	}
	for _, tc := range tests {
		code, _, stderr := runCLI(t, "", append(append([]string{"link", "--json"}, tc.args...), tr)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
		if strings.Contains(stderr, tc.not) {
			t.Errorf("%v: stderr has %q:\n%s", tc.args, tc.not, stderr)
		}
		if len(tc.want) > 0 && !strings.Contains(stderr, "), used") {
			t.Errorf("%v: the hint used nowhere:\n%s", tc.args, stderr)
		}
	}
}

// TestLinkStreaming: --window reads the text trace as a stream.
func TestLinkStreaming(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "link", "--json", "--window", "1s", filepath.Join("testdata", "link", "small.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, `"algorithm": "linking"`) || !strings.Contains(stdout, `"to": "auth"`) {
		t.Errorf("stream output:\n%s", stdout)
	}
}

// TestLinkStreamingInstances: with --window, --instances lists every
// instance once (as many as the patterns count), with valid ranks; each
// joint instance's messages belong to no other, and each instance's ids
// follow its pattern's steps in the JSON's depth-first order.
func TestLinkStreamingInstances(t *testing.T) {
	dir := t.TempDir()
	tr, inst := filepath.Join(dir, "mt.txt"), filepath.Join(dir, "inst.jsonl")
	if code, _, stderr := runCLI(t, "", "gen", "--duration", "30s", "-o", tr, "../../testdata/gen/multitier.gen"); code != 0 {
		t.Fatalf("gen: %d %s", code, stderr)
	}
	for _, method := range []string{"joint", "wap5"} {
		code, out, stderr := runCLI(t, "", "link", "--json", "--method", method, "--window", "5s", "--instances", inst, tr)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", method, code, stderr)
		}
		type edge struct {
			From, To string
			Children []edge
		}
		var res struct {
			Patterns []struct {
				Rank  int
				Count int
				Root  edge
			}
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		steps := map[int][][2]string{}
		total := 0
		for _, p := range res.Patterns {
			var walk func(e edge)
			walk = func(e edge) {
				steps[p.Rank] = append(steps[p.Rank], [2]string{e.From, e.To})
				for _, c := range e.Children {
					walk(c)
				}
			}
			walk(p.Root)
			total += p.Count
		}
		full, err := trace.ReadFile(tr)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]*trace.Message{}
		for i := range full.Messages {
			byID[full.RefString(full.Messages[i].ID)] = &full.Messages[i]
		}
		data, err := os.ReadFile(inst)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != total || total == 0 {
			t.Errorf("%s: %d instance lines, patterns count %d", method, len(lines), total)
		}
		seen := map[string]bool{}
		for _, ln := range lines {
			var in struct {
				Pattern int
				Prob    float64
				IDs     []string
			}
			if err := json.Unmarshal([]byte(ln), &in); err != nil {
				t.Fatalf("%s: %q: %v", method, ln, err)
			}
			st := steps[in.Pattern]
			if len(st) != len(in.IDs) || in.Prob <= 0 || in.Prob > 1 {
				t.Fatalf("%s: %q: pattern %d has %d steps", method, ln, in.Pattern, len(st))
			}
			for k, id := range in.IDs {
				m := byID[id]
				// The joint linker gives every message one parent: one
				// instance each (WAP5's try-both instances share them).
				if m == nil || method == "joint" && seen[id] {
					t.Fatalf("%s: %q: id %s unknown or in two instances", method, ln, id)
				}
				seen[id] = true
				if got := [2]string{full.Nodes[m.Src].Name, full.Nodes[m.Dst].Name}; got != st[k] {
					t.Fatalf("%s: %q: id %s is %v, step %d of pattern %d is %v", method, ln, id, got, k, in.Pattern, st[k])
				}
			}
		}
	}
}

// TestLinkCorrectsClocks: on a trace whose DB clock is 2 s ahead, net_s of
// the edges into and out of DB is the true network delay (~0.3 ms) by
// default, and 2 s off with --no-skew.
func TestLinkCorrectsClocks(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "skewed.txt")
	if code, _, stderr := runCLI(t, "", "gen", "--duration", "20s", "--skew", "DB=2s", "-o", tr, "../../testdata/gen/multitier.gen"); code != 0 {
		t.Fatalf("gen: %d %s", code, stderr)
	}
	worst := func(args ...string) float64 {
		code, out, stderr := runCLI(t, "", append([]string{"link", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("link %v: %d %s", args, code, stderr)
		}
		var res struct {
			Patterns []struct{ Root json.RawMessage } `json:"patterns"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		type edge struct {
			From, To string
			Net      *float64 `json:"net_s"`
			Children []edge
		}
		var w float64
		var walk func(e edge)
		walk = func(e edge) {
			if (e.From == "DB" || e.To == "DB") && e.Net != nil {
				w = math.Max(w, math.Abs(*e.Net))
			}
			for _, c := range e.Children {
				walk(c)
			}
		}
		for _, p := range res.Patterns {
			var e edge
			json.Unmarshal(p.Root, &e)
			walk(e)
		}
		return w
	}
	if w := worst(tr); w > 0.002 {
		t.Errorf("default: worst |net_s| on DB's edges %.6f s, want the ~0.3 ms network delay", w)
	}
	if w := worst("--no-skew", tr); w < 1.9 {
		t.Errorf("--no-skew: worst |net_s| on DB's edges %.6f s, want the raw 2 s offset", w)
	}
}

// TestLinkSkewWarningOnlyWithClocksToCompare: a trace with no message
// between two traced nodes (one host at host granularity, or a host and its
// untraced peers) has no second clock, so `wap5 link` says nothing about
// skew; two traced nodes that talk one way only still get the warning.
func TestLinkSkewWarningOnlyWithClocksToCompare(t *testing.T) {
	const head = "# wap5 message trace v1\n"
	lines := func(f func(i int) string) string {
		s := head
		for i := 0; i < 20; i++ {
			s += f(i)
		}
		return s
	}
	cases := []struct {
		name, trace string
		warn        bool
	}{
		{"one node", lines(func(i int) string {
			t0 := 100 + float64(i)
			return fmt.Sprintf("%.6f vm 127.0.0.1:4%03d %.6f vm 127.0.0.1:80 100\n%.6f vm 127.0.0.1:80 %.6f vm 127.0.0.1:4%03d 900\n",
				t0, i, t0+0.0001, t0+0.002, t0+0.0021, i)
		}), false},
		{"untraced peer", lines(func(i int) string {
			t0 := 100 + float64(i)
			return fmt.Sprintf("%.6f web 10.0.0.1:4%03d - 10.0.0.9 10.0.0.9:5432 100\n- 10.0.0.9 10.0.0.9:5432 %.6f web 10.0.0.1:4%03d 900\n",
				t0, i, t0+0.002, i)
		}), false},
		{"two nodes one way", lines(func(i int) string {
			t0 := 100 + float64(i)
			return fmt.Sprintf("%.6f a 10.0.0.1:4%03d %.6f b 10.0.0.2:80 100\n", t0, i, t0+0.0003)
		}), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.txt")
			if err := os.WriteFile(p, []byte(c.trace), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI(t, "", "link", p)
			if code != 0 {
				t.Fatalf("link: %d %s", code, stderr)
			}
			if got := strings.Contains(stderr, "skew:"); got != c.warn {
				t.Errorf("skew warning %v, want %v; stderr:\n%s", got, c.warn, stderr)
			}
		})
	}
}
