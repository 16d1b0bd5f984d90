package reconcile

import (
	"reflect"
	"testing"
	"time"

	"wap5/trace"
)

// TestRecordReuse: reusing retired connections' records (newConnEnd,
// newEnd) changes nothing: the same messages, order, tables and warnings as
// a run that allocates every record anew, whole or streamed, with
// connections short against the window so that records are reused
// thousands of times (and some lonely ones go through step 6's index).
func TestRecordReuse(t *testing.T) {
	type input struct {
		name    string
		sources func() []Source
		opts    Options
	}
	inputs := []input{
		{"loopback", func() []Source { return loopbackFlows(20000, 64, []int64{100, 200, 300}, 0.2, 7) }, Options{Window: 2 * time.Millisecond}},
		{"loopback-natoff", func() []Source { return loopbackFlows(20000, 64, []int64{100, 200, 300}, 0.2, 8) }, Options{Window: 2 * time.Millisecond, DisableNATDetection: true}},
	}
	run := func(in input, reuse bool, stream *streamCollect) (*trace.Trace, int) {
		old := reuseRecords
		reuseRecords = reuse
		defer func() { reuseRecords = old }()
		tr, m := reconcileWith(t, in.name, in.sources(), in.opts, stream)
		return tr, m.reused
	}
	for _, in := range inputs {
		for _, streamed := range []bool{false, true} {
			var cw, cg *streamCollect
			if streamed {
				cw, cg = &streamCollect{}, &streamCollect{}
			}
			want, n := run(in, false, cw)
			if n != 0 {
				t.Fatalf("%s: %d records reused with reuse off", in.name, n)
			}
			got, n := run(in, true, cg)
			if n < 1000 {
				t.Errorf("%s: only %d records reused", in.name, n)
			}
			wm, gm := want.Messages, got.Messages
			if streamed {
				wm, gm = cw.msgs, cg.msgs
			}
			if len(wm) == 0 || !reflect.DeepEqual(gm, wm) {
				t.Errorf("%s (streamed %v): %d messages, want %d, or they differ", in.name, streamed, len(gm), len(wm))
			}
			if !reflect.DeepEqual(got.Warnings, want.Warnings) || !reflect.DeepEqual(got.Nodes, want.Nodes) ||
				!reflect.DeepEqual(got.Endpoints, want.Endpoints) || !reflect.DeepEqual(got.Actors, want.Actors) {
				t.Errorf("%s (streamed %v): warnings or tables differ", in.name, streamed)
			}
			t.Logf("%s (streamed %v): %d messages, %d records reused", in.name, streamed, len(gm), n)
		}
	}
}

// reconcileWith reconciles srcs with o, streamed to stream when it is not
// nil, and fails the test (naming the input) on an error.
func reconcileWith(t *testing.T, name string, srcs []Source, o Options, stream *streamCollect) (*trace.Trace, *matcher) {
	t.Helper()
	if stream != nil {
		o.Stream = stream
	}
	tr, m, err := reconcileSources(srcs, o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr, m
}
