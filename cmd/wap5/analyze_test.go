package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"wap5/render"
	"wap5/trace"
)

// testbedLogs are real logs of three network namespaces on one machine
// (client, forking server, threaded server with a Unix helper; DNAT, SNAT).
const testbedLogs = "../../reconcile/testdata/logs/testbed"

func TestAnalyzeGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// files that must (not) be in DIR
		want, absent []string
	}{
		{"testbed", nil, []string{"trace.bin", "trace.txt", "skew.json", "link.json", "instances.jsonl", "nest.json", "report.txt"}, nil},
		{"testbed-skew-always", []string{"--skew", "always"}, []string{"skew.json"}, nil},
		{"testbed-no-skew-wap5", []string{"--no-skew", "--method", "wap5", "--no-nest", "--top", "1"}, []string{"link.json"},
			[]string{"skew.json", "nest.json"}},
		{"testbed-process", []string{"--granularity", "process"}, []string{"skew.json"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			args := append(append([]string{"analyze", "-o", dir}, tc.args...), testbedLogs)
			code, stdout, stderr := runCLI(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			goldenFile(t, "analyze", tc.name+".golden", []byte(stdout))
			report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if string(report) != stdout {
				t.Errorf("report.txt differs from what was printed")
			}
			for _, f := range tc.want {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("missing %s: %v", f, err)
				}
			}
			for _, f := range tc.absent {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s written though not asked for", f)
				}
			}
			// Every stage's warnings reach stderr, prefixed by the stage.
			if !strings.Contains(stderr, "wap5: warning: reconcile: nat: dnat tcp") {
				t.Errorf("reconcile's NAT warnings missing from stderr:\n%s", stderr)
			}
			if !strings.Contains(stderr, "wap5: analyze: reconcile") {
				t.Errorf("no closing line on stderr:\n%s", stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "skew.json")); err == nil {
				b, _ := os.ReadFile(filepath.Join(dir, "skew.json"))
				goldenFile(t, "analyze", tc.name+".skew.json", b)
			}
		})
	}
}

// The files in DIR are the ones the single-stage commands write: the same
// trace, and JSON of the contract's shape.
func TestAnalyzeFilesMatchStages(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "", "analyze", "-q", "-o", dir, "--skew", "always", testbedLogs); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// skew.json is what `wap5 skew --json` says of the uncorrected trace.
	raw := filepath.Join(t.TempDir(), "raw.txt")
	if code, _, stderr := runCLI(t, "", "reconcile", "-o", raw, testbedLogs); code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", code, stderr)
	}
	code, skewOut, stderr := runCLI(t, "", "skew", "--json", raw)
	if code != 0 {
		t.Fatalf("skew: exit %d\n%s", code, stderr)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "skew.json"))
	if string(got) != skewOut {
		t.Errorf("skew.json differs from wap5 skew --json:\n%s\nwant\n%s", got, skewOut)
	}
	var sj struct {
		Reference string `json:"reference"`
		Offsets   []struct {
			Node    string   `json:"node"`
			OffsetS *float64 `json:"offset_s"`
			Drift   *float64 `json:"drift_ppm"`
			ErrorS  *float64 `json:"error_s"`
			Samples int      `json:"samples"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal(got, &sj); err != nil || sj.Reference == "" || len(sj.Offsets) != 3 {
		t.Errorf("skew.json: %v %+v", err, sj)
	}
	// link.json is what `wap5 link --json` says of the corrected trace.
	code, linkOut, stderr := runCLI(t, "", "link", "--json", "--instances", filepath.Join(t.TempDir(), "i.jsonl"), filepath.Join(dir, "trace.bin"))
	if code != 0 {
		t.Fatalf("link: exit %d\n%s", code, stderr)
	}
	got, _ = os.ReadFile(filepath.Join(dir, "link.json"))
	if string(got) != linkOut {
		t.Errorf("link.json differs from wap5 link --json trace.bin:\n%s\nwant\n%s", got, linkOut)
	}
	// Instances name messages by the ids of trace.txt.
	tr, err := trace.ReadFile(filepath.Join(dir, "trace.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i := range tr.Messages {
		ids[render.MessageID(tr, i)] = true
	}
	inst, _ := os.ReadFile(filepath.Join(dir, "instances.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(inst)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no instances")
	}
	for _, l := range lines {
		var in struct {
			Pattern int      `json:"pattern"`
			Prob    float64  `json:"prob"`
			IDs     []string `json:"ids"`
		}
		if err := json.Unmarshal([]byte(l), &in); err != nil {
			t.Fatalf("instances.jsonl: %v: %s", err, l)
		}
		for _, id := range in.IDs {
			if !ids[id] {
				t.Errorf("instance names message %q, not in trace.txt", id)
			}
		}
	}
}

func TestAnalyzeUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no input", []string{"analyze"}, 2, "no INPUT"},
		{"bad granularity", []string{"analyze", "--granularity", "rack", testbedLogs}, 2, "granularity"},
		{"bad method", []string{"analyze", "--method", "guess", testbedLogs}, 2, "--method"},
		{"bad skew", []string{"analyze", "--skew", "sometimes", testbedLogs}, 2, "--skew"},
		{"bad top", []string{"analyze", "--top", "0", testbedLogs}, 2, "--top"},
		{"missing input", []string{"analyze", "-o", "x", "/nonexistent/logs"}, 1, "/nonexistent/logs"},
		{"nothing readable", []string{"analyze", "-o", "x", "../../reconcile/testdata/logs/foreign.sclog"}, 1, "foreign.sclog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, _ := os.Getwd()
			t.Chdir(t.TempDir())
			args := append([]string(nil), tc.args...)
			for i, a := range args {
				if strings.HasPrefix(a, "../../") {
					args[i] = filepath.Join(old, a)
				}
			}
			code, _, stderr := runCLI(t, "", args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.msg)
			}
			if tc.code == 1 {
				if _, err := os.Stat("x"); err == nil {
					t.Errorf("a failed analysis created its directory")
				}
			}
		})
	}
}

// TestAnalyzeDemo runs `make demo`'s script on the real system it traces
// (curl → nginx → python3 app → redis, under bin/wap5 run) and checks that
// the real request path is the top pattern. It needs bin/ (WAP5_BIN, set by
// make test), nginx and redis-server.
func TestAnalyzeDemo(t *testing.T) {
	bin := os.Getenv("WAP5_BIN")
	if bin == "" {
		t.Skip("WAP5_BIN not set (make test sets it)")
	}
	for _, p := range []string{"nginx", "redis-server", "curl", "ss"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s not installed (scripts/install-deps.sh installs it)", p)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(bin, "wap5")); err != nil {
		t.Skipf("%s/wap5 not built", bin)
	}
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), "DEMO_DIR="+dir, "REQUESTS=20", "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "report", "link.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p, err := render.ReadJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Patterns) == 0 {
		t.Fatalf("no patterns\n%s", out)
	}
	// 20 requests for 5 items: 15 cache hits (GET, INCR), 5 misses (GET,
	// SET, INCR). The hit path is the top pattern, complete.
	top := p.Patterns[0]
	var edges []string
	top.Root.Walk(func(s *trace.Step, d int) { edges = append(edges, strings.Repeat(" ", d)+s.From+">"+s.To) })
	want := []string{"client>frontend", " frontend>app", "  app>cache", "   cache>app", "    app>cache", "     cache>app",
		"      app>frontend", "       frontend>client"}
	if strings.Join(edges, "\n") != strings.Join(want, "\n") || top.Count < 12 {
		t.Errorf("top pattern (count %d):\n%s\nwant the request path (count ≥ 12):\n%s\n%s", top.Count,
			strings.Join(edges, "\n"), strings.Join(want, "\n"), out)
	}
	// Plausible delays on loopback: every network delay under 50 ms, and the
	// miss path's build (~3 ms in the app) visible as a node delay.
	top.Root.Walk(func(s *trace.Step, _ int) {
		if !s.Net.Known() || s.Net.Mean < 0 || s.Net.Mean > 0.05 {
			t.Errorf("%s → %s: network delay %+v", s.From, s.To, s.Net)
		}
	})
	build := false
	for _, pat := range p.Patterns[1:] {
		pat.Root.Walk(func(s *trace.Step, _ int) {
			if s.From == "app" && s.To == "cache" && s.Wait.Known() && s.Wait.Mean > 0.002 {
				build = true
			}
		})
	}
	if !build {
		t.Errorf("no pattern shows the app's ~3 ms build before a cache SET\n%s", out)
	}
	if !strings.Contains(string(out), "Path patterns") || !strings.Contains(string(out), "end to end at client: ") {
		t.Errorf("the demo does not show the report with end-to-end times:\n%s", out)
	}
}

// Every flag of wap5 analyze is in the synopsis of docs/analyze.md, so the
// documentation cannot fall behind the command.
func TestAnalyzeDocsListFlags(t *testing.T) {
	doc, err := os.ReadFile("../../docs/analyze.md")
	if err != nil {
		t.Fatal(err)
	}
	synopsis, _, _ := strings.Cut(string(doc), "\n```\n\n")
	for _, f := range commandByName(t, "analyze").Flags {
		found := false
		for _, n := range f.Names() {
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			found = found || strings.Contains(synopsis, "["+dash+n+" ") || strings.Contains(synopsis, "["+dash+n+"]") ||
				strings.Contains(synopsis, "| "+dash+n+"]")
		}
		if !found {
			t.Errorf("docs/analyze.md synopsis lacks the flag %v", f.Names())
		}
	}
}

func commandByName(t *testing.T, name string) *cli.Command {
	t.Helper()
	for _, f := range commandFactories {
		if c := f(); c.Name == name {
			return c
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}
