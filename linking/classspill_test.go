package linking

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"wap5/trace"
)

// TestStreamClassSpill: a joint stream whose carried classes are spilled at
// the end of every chunk (budget 1) and read back when met again links
// exactly as one that keeps them all: the same patterns, instances and fit
// (compared over the spilled classes too).
func TestStreamClassSpill(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	tr := simulate(simConfig{clients: 6, perClient: 150, think: gauss{ms(100), ms(30)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(5, false), seed: 11, spread: 3})
	tr.Sort()
	run := func(budget int64) (*Result, []StreamInstance, *classSpill) {
		o := Options{Window: 200 * time.Millisecond, Stream: 3 * time.Second, StreamMemory: budget}
		var inst []StreamInstance
		o.OnInstance = func(in StreamInstance) {
			in.Messages, in.Seq = append([]trace.Message(nil), in.Messages...), append([]int64(nil), in.Seq...)
			inst = append(inst, in)
		}
		s, err := NewStream(tr, o)
		if err != nil {
			t.Fatal(err)
		}
		s.shared = true
		for i := range tr.Messages {
			s.Push(tr.Messages[i])
		}
		sp := s.mod.spill
		res := s.Close()
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return res, inst, sp
	}
	want, wantInst, sp := run(-1)
	if sp != nil {
		t.Fatal("classes spilled without a budget")
	}
	if want.Fit.Samples == 0 || len(want.Fit.LogLik) != 3 {
		t.Fatalf("no fit to compare: %+v", want.Fit)
	}
	got, inst, sp := run(1)
	if sp == nil || sp.spills < 2 || sp.reads == 0 {
		t.Fatalf("class spill %+v, want several spills and classes read back", sp)
	}
	if !reflect.DeepEqual(got.Paths, want.Paths) || !reflect.DeepEqual(inst, wantInst) {
		t.Error("patterns or instances differ from the unbounded stream's")
	}
	if !reflect.DeepEqual(got.Fit, want.Fit) {
		t.Errorf("fit %+v, want %+v", got.Fit, want.Fit)
	}
}

// TestClassSpillCollision: a key whose index hash another spilled key holds
// is found through the collision map, and a key never spilled is not
// mistaken for the record its hash points to.
func TestClassSpillCollision(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	m := newModels()
	defer m.free()
	keys := []classKey{{trig: 1, node: 2, act: 3}, {trig: 4, node: 5, act: 6, reply: true}, {trig: 7, node: 8, act: 9, ret: true}}
	add := func(k classKey, v float64) {
		c := m.newClass()
		*c = classModel{logTrans: v, pool: 7}
		m.newMoments(c).add(v)
		m.class.set(k, classRef{c: c, rec: -1})
	}
	add(keys[0], 0.5)
	m.chunk++
	m.evict(1)
	if m.class.n != 0 || m.spill == nil || m.spill.recs != 1 {
		t.Fatalf("after the first spill: %d resident, spill %+v", m.class.n, m.spill)
	}
	// keys[1]'s hash taken (by keys[0]'s record), as by a collision.
	m.spill.idx.put(keyTag(keys[1]), 0)
	m.spill.idx.put(keyTag(keys[2]), 0)
	add(keys[1], 0.25)
	m.chunk++
	m.evict(1)
	if len(m.spill.collided) != 1 {
		t.Fatalf("%d keys in the collision map, want 1", len(m.spill.collided))
	}
	for i, want := range []float64{0.5, 0.25} {
		c := m.reload(keys[i])
		if c == nil || c.logTrans != want || c.pool != 7 || c.momAt == 0 || m.moms[c.momAt-1].s1 != want {
			t.Errorf("key %d read back as %+v", i, c)
		}
	}
	if c := m.reload(keys[2]); c != nil {
		t.Errorf("never spilled key %v read back as %+v", keys[2], c)
	}
}

// TestStreamClassSpillError: where the class spill file cannot be made
// (TMPDIR missing), a joint stream with a budget keeps its classes in memory
// and says so in a warning: the same patterns and fit as the unbounded
// stream's, not an error after the whole trace was linked.
func TestStreamClassSpillError(t *testing.T) {
	tr := simulate(simConfig{clients: 6, perClient: 150, think: gauss{ms(100), ms(30)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(5, false), seed: 11, spread: 3})
	tr.Sort()
	run := func(budget int64) *Result {
		o := Options{Window: 200 * time.Millisecond, Stream: 3 * time.Second, StreamMemory: budget}
		s, err := NewStream(tr, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tr.Messages {
			s.Push(tr.Messages[i])
		}
		res := s.Close()
		if err := s.Err(); err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		return res
	}
	want := run(-1)
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	got := run(1)
	var class int
	var rest []string
	for _, w := range got.Warnings {
		switch {
		case strings.Contains(w, "class spill file"):
			class++
		case strings.Contains(w, "pattern spill file"):
		default:
			rest = append(rest, w)
		}
	}
	if class != 1 {
		t.Fatalf("warnings %q, want one about the class spill file", got.Warnings)
	}
	if len(rest) != len(want.Warnings) {
		t.Errorf("other warnings %q, want the unbounded run's %q", rest, want.Warnings)
	}
	got.Warnings = want.Warnings // compared above
	if !reflect.DeepEqual(got.Paths, want.Paths) {
		t.Error("patterns differ from the unbounded stream's")
	}
	if !reflect.DeepEqual(got.Fit, want.Fit) {
		t.Errorf("fit %+v, want %+v", got.Fit, want.Fit)
	}
}
