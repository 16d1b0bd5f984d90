package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wap5/reconcile"
	"wap5/render"
	"wap5/trace"
)

const testbed = "../reconcile/testdata/logs/testbed"

func TestParseSkewMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want SkewMode
		ok   bool
	}{
		{"auto", SkewAuto, true},
		{"always", SkewAlways, true},
		{"never", SkewNever, true},
		{"", 0, false},
		{"on", 0, false},
	} {
		got, err := ParseSkewMode(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseSkewMode(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// The testbed's three "hosts" are network namespaces of one machine: their
// logs name one host and boot, so auto mode estimates but does not apply.
func TestRunSkewModes(t *testing.T) {
	for _, c := range []struct {
		name        string
		mode        SkewMode
		estimated   bool
		applied     bool
		clockInNote bool
	}{
		{"auto", SkewAuto, true, false, true},
		{"always", SkewAlways, true, true, false},
		{"never", SkewNever, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Run(reconcile.Inputs{Logs: []string{testbed}}, Options{Skew: c.mode})
			if err != nil {
				t.Fatal(err)
			}
			if (r.Skew != nil) != c.estimated || r.SkewApplied != c.applied {
				t.Fatalf("estimated %v applied %v; want %v %v (note %q)", r.Skew != nil, r.SkewApplied, c.estimated, c.applied, r.SkewNote)
			}
			applied := false
			for _, k := range r.Trace.Clock {
				applied = applied || k.Applied
			}
			if applied != c.applied {
				t.Errorf("trace clock corrections applied = %v, want %v", applied, c.applied)
			}
			if c.clockInNote && r.SkewNote == "" {
				t.Errorf("no note on why offsets were not applied")
			}
			// Only auto mode needs to know the clocks.
			if got := r.NodeClocks(); (len(got) == 1) != (c.mode == SkewAuto) {
				t.Errorf("clocks %q; want the one clock of the testbed machine in auto mode only", got)
			}
			if r.Link == nil || len(r.Link.Patterns) == 0 {
				t.Fatalf("no paths")
			}
			if r.Nest == nil {
				t.Errorf("nesting did not run")
			}
		})
	}
}

func TestRunWarningsCarryStage(t *testing.T) {
	r, err := Run(reconcile.Inputs{Logs: []string{testbed, "../reconcile/testdata/logs/damaged.sclog.zst"}}, Options{NoNest: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Nest != nil {
		t.Errorf("NoNest ran nesting")
	}
	damaged := false
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "reconcile: ") && strings.Contains(w, "damaged.sclog.zst") {
			damaged = true
		}
	}
	if !damaged {
		t.Errorf("no reconcile warning naming the damaged log in %q", r.Warnings)
	}
}

func TestRunNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		in   reconcile.Inputs
	}{
		{"no inputs", reconcile.Inputs{}},
		{"foreign file", reconcile.Inputs{Logs: []string{"../reconcile/testdata/logs/foreign.sclog"}}},
		{"empty dir", reconcile.Inputs{Logs: []string{t.TempDir()}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r, err := Run(c.in, Options{}); err == nil {
				t.Fatalf("no error; %d messages", len(r.Trace.Messages))
			}
		})
	}
}

func TestWriteDir(t *testing.T) {
	r, err := Run(reconcile.Inputs{Logs: []string{testbed}}, Options{Skew: SkewAlways})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	files, err := r.WriteDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(Outputs) {
		t.Errorf("%d files written, want %d", len(files), len(Outputs))
	}
	bin, err := trace.ReadFile(filepath.Join(dir, "trace.bin"))
	if err != nil {
		t.Fatal(err)
	}
	txt, err := trace.ReadFile(filepath.Join(dir, "trace.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bin.Messages) != len(r.Trace.Messages) || len(txt.Messages) != len(r.Trace.Messages) {
		t.Errorf("messages: binary %d, text %d, want %d", len(bin.Messages), len(txt.Messages), len(r.Trace.Messages))
	}
	if len(bin.Clock) == 0 || !bin.Clock[0].Applied {
		t.Errorf("trace.bin does not record the applied corrections: %+v", bin.Clock)
	}
	for i := range bin.Messages {
		if bin.Messages[i].Send != r.Trace.Messages[i].Send || bin.Messages[i].Recv != r.Trace.Messages[i].Recv {
			t.Fatalf("trace.bin message %d differs from the analysed trace", i)
		}
	}
	for _, name := range []string{"link.json", "nest.json"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		p, err := render.ReadJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(p.Patterns) == 0 {
			t.Errorf("%s: no patterns", name)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %q", leftovers)
	}
	// A later analysis without clock offsets or nesting leaves no stale
	// skew.json or nest.json behind.
	r2, err := Run(reconcile.Inputs{Logs: []string{testbed}}, Options{Skew: SkewNever, NoNest: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.WriteDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"skew.json", "nest.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("stale %s left in the directory", name)
		}
	}
	// Incomplete reports are refused, not half written.
	if _, err := (&Report{}).WriteDir(filepath.Join(t.TempDir(), "x"), nil); err == nil {
		t.Errorf("an empty report was written")
	}
}

func TestOneClock(t *testing.T) {
	tr := trace.New()
	tr.Node("a")
	tr.Node("b")
	peer := tr.Node("10.0.0.1")
	tr.Nodes[peer].Untraced = true
	for _, c := range []struct {
		name   string
		clocks map[string]string
		want   bool
	}{
		{"shared", map[string]string{"a": "h1", "b": "h1"}, true},
		{"two hosts", map[string]string{"a": "h1", "b": "h2"}, false},
		{"node without log (capture)", map[string]string{"a": "h1"}, false},
		{"node with mixed clocks", map[string]string{"a": "h1", "b": ""}, false},
		{"nothing known", map[string]string{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk, ok := oneClock(tr, c.clocks)
			if ok != c.want || (ok && clk != "h1") {
				t.Errorf("oneClock = %q, %v; want %v", clk, ok, c.want)
			}
		})
	}
}
