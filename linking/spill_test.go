package linking

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"wap5/trace"
)

// streamRun links tr through a Stream with the pattern table's budget
// (StreamMemory), and returns the result, the instances handed over, the
// patterns handed over (with OnPattern set) and how often the table spilled.
func streamRun(t *testing.T, tr *trace.Trace, o Options, budget int64, handOver bool) (*Result, []StreamInstance, []*trace.Pattern, int) {
	t.Helper()
	o.StreamMemory = budget
	var inst []StreamInstance
	o.OnInstance = func(in StreamInstance) {
		in.Messages, in.Seq = append([]trace.Message(nil), in.Messages...), append([]int64(nil), in.Seq...)
		inst = append(inst, in)
	}
	var got []*trace.Pattern
	if handOver {
		o.OnPattern = func(p *trace.Pattern) error {
			got = append(got, p)
			return nil
		}
	}
	s, err := NewStream(tr, o)
	if err != nil {
		t.Fatal(err)
	}
	s.shared = true
	for i := range tr.Messages {
		s.Push(tr.Messages[i])
	}
	res := s.Close()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return res, inst, got, s.tab.spills
}

// TestStreamSpill: a pattern table that spills (at the end of every chunk,
// or beyond a few kilobytes) gives exactly the result, instances, stream
// patterns and handed-over patterns of one that never does: every
// accumulator is read back and goes on bit for bit.
func TestStreamSpill(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	tr := simulate(simConfig{clients: 6, perClient: 150, think: gauss{ms(100), ms(30)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(5, false), seed: 11, spread: 3})
	tr.Sort()
	for _, method := range []string{MethodJoint, MethodWAP5} {
		o := Options{Method: method, Window: 200 * time.Millisecond, Stream: 3 * time.Second}
		want, wantInst, _, spills := streamRun(t, tr, o, -1, false)
		if spills != 0 {
			t.Fatalf("%s: spilled without a budget", method)
		}
		if len(want.Patterns) < 10 || want.Iterations < 5 {
			t.Fatalf("%s: %d patterns in %d chunks, want more", method, len(want.Patterns), want.Iterations)
		}
		for _, c := range []struct {
			budget, guess int64
		}{{1, readGuess}, {4 << 10, readGuess}, {1, spillHead}} {
			budget := c.budget
			name := fmt.Sprintf("%s budget %d first read %d", method, budget, c.guess)
			defer func(g int64) { readGuess = g }(readGuess)
			readGuess = c.guess // spillHead: every record read in two
			got, inst, _, spills := streamRun(t, tr, o, budget, false)
			if spills < 2 {
				t.Errorf("%s: %d spills, want several", name, spills)
			}
			if !reflect.DeepEqual(got.Paths, want.Paths) {
				t.Errorf("%s: patterns differ from the unbounded table's", name)
			}
			if !reflect.DeepEqual(got.StreamPatterns, want.StreamPatterns) || !reflect.DeepEqual(inst, wantInst) {
				t.Errorf("%s: instances or stream patterns differ", name)
			}
			// Handed over (as wap5 link does), top 5 shown in full.
			o2 := o
			o2.Top, o2.Shown = 8, 5
			_, _, gotH, _ := streamRun(t, tr, o2, budget, true)
			_, _, wantH, _ := streamRun(t, tr, o2, -1, true)
			if len(gotH) != 8 || !reflect.DeepEqual(gotH, wantH) {
				t.Errorf("%s: %d patterns handed over, equal %v", name, len(gotH), reflect.DeepEqual(gotH, wantH))
			}
		}
	}
	// The spill file is unlinked as soon as it is made.
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "*")); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

// TestStreamSpillError: a spill file that cannot be made (TMPDIR missing)
// is a warning, not an error: the patterns stay in memory and the result
// is the unbounded table's.
func TestStreamSpillError(t *testing.T) {
	tr := simulate(simConfig{clients: 3, perClient: 60, think: gauss{ms(100), ms(30)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(3, false), seed: 12})
	tr.Sort()
	o := Options{Window: 200 * time.Millisecond, Stream: 2 * time.Second}
	want, _, _, _ := streamRun(t, tr, o, -1, false)
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	got, _, _, spills := streamRun(t, tr, o, 1, false)
	if spills != 0 {
		t.Errorf("%d spills without a spill file", spills)
	}
	// One warning per spill file that could not be made: the patterns'
	// and (joint method) the carried classes'.
	var files, rest []string
	for _, w := range got.Warnings {
		if strings.Contains(w, "spill file") {
			files = append(files, w)
		} else {
			rest = append(rest, w)
		}
	}
	if len(files) == 0 || !strings.Contains(files[0], "pattern spill file") || len(rest) != len(want.Warnings) {
		t.Fatalf("warnings %q, want the unbounded run's %q and one per spill file", got.Warnings, want.Warnings)
	}
	got.Warnings = want.Warnings // compared above
	if !reflect.DeepEqual(got.Paths, want.Paths) {
		t.Error("patterns differ from the unbounded table's")
	}
}

// TestStreamSpillTags: patterns whose hashes share the index's tag (one tag
// in four, or one for all) are told apart by their full hashes, resident or
// read back from the spill file: the result, instances and stream patterns
// are the unbounded table's.
func TestStreamSpillTags(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Cleanup(func() { patTagMask = ^uint32(0) })
	tr := simulate(simConfig{clients: 6, perClient: 150, think: gauss{ms(100), ms(30)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(5, false), seed: 11, spread: 3})
	tr.Sort()
	for _, method := range []string{MethodJoint, MethodWAP5} {
		o := Options{Method: method, Window: 200 * time.Millisecond, Stream: 3 * time.Second}
		patTagMask = ^uint32(0)
		want, wantInst, _, _ := streamRun(t, tr, o, -1, false)
		for _, tc := range []struct {
			mask   uint32
			budget int64
		}{{3, -1}, {3, 1}, {3, 4 << 10}, {0, -1}, {0, 1}} {
			patTagMask = tc.mask
			got, inst, _, spills := streamRun(t, tr, o, tc.budget, false)
			name := fmt.Sprintf("%s tags %#x budget %d (%d spills)", method, tc.mask, tc.budget, spills)
			if !reflect.DeepEqual(got.Paths, want.Paths) {
				t.Errorf("%s: patterns differ from the unbounded table's (%d, want %d)", name, len(got.Patterns), len(want.Patterns))
			}
			if !reflect.DeepEqual(got.StreamPatterns, want.StreamPatterns) || !reflect.DeepEqual(inst, wantInst) {
				t.Errorf("%s: instances or stream patterns differ", name)
			}
		}
	}
}
