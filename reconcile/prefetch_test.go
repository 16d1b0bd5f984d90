package reconcile

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

// TestPrefetchSameTrace: prefetching (prefetchObs, prefetchTimers, the
// connection keys an open's prefetch makes for endOf, and the logs'
// decoders' prefetch, heapItem.prefetch) changes nothing but
// the time: every scenario, the test logs and generated loopback flows
// reconciled with prefetching from the first connection give the trace of
// a run that never prefetches — whole and streamed, with step 6 on (whose
// translations, learnt mid-run, make keys made earlier out of date).
func TestPrefetchSameTrace(t *testing.T) {
	type input struct {
		name    string
		sources func() []Source
		opts    Options
	}
	var inputs []input
	files, _ := filepath.Glob("testdata/scenarios/*.txtar")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := parseTxtar(string(data))
		events := sc.sections["events"]
		inputs = append(inputs, input{filepath.Base(f), func() []Source { return buildSources(t, events) }, parseOptions(t, sc.sections["options"])})
	}
	for _, dir := range []string{"testdata/logs/testbed", "testdata/logs/loopback"} {
		inputs = append(inputs, input{dir, func() []Source {
			var ss []Source
			fs, err := libsockcap.FindLogs(dir) // the logs under dir (one directory per host)
			if err != nil || len(fs) == 0 {
				t.Fatalf("%s: no logs (%v)", dir, err)
			}
			for _, f := range fs {
				if s, err := NewLogSource(f); err == nil {
					ss = append(ss, s)
				}
			}
			return ss
		}, Options{}})
	}
	inputs = append(inputs,
		input{"loopback flows", func() []Source { return loopbackFlows(20000, 64, []int64{100, 200, 300}, 0.2, 9) }, Options{Window: 2 * time.Millisecond}},
		input{"loopback flows, no step 6", func() []Source { return loopbackFlows(20000, 64, []int64{100, 200, 300}, 0.2, 10) }, Options{Window: 2 * time.Millisecond, DisableNATDetection: true}})
	run := func(in input, from int, stream *streamCollect) (*trace.Trace, *matcher) {
		old, oldSources := prefetchFrom, prefetchSources
		prefetchFrom, prefetchSources = from, from
		defer func() { prefetchFrom, prefetchSources = old, oldSources }()
		tr, m := reconcileWith(t, in.name, in.sources(), in.opts, stream)
		return tr, m
	}
	hits, stale := 0, 0
	for _, in := range inputs {
		for _, streamed := range []bool{false, true} {
			var cw, cg *streamCollect
			if streamed {
				cw, cg = &streamCollect{}, &streamCollect{}
			}
			want, wm := run(in, math.MaxInt, cw)
			if wm.preHits+wm.preStale != 0 {
				t.Fatalf("%s: keys made in advance without prefetching", in.name)
			}
			got, gm := run(in, 0, cg)
			hits, stale = hits+gm.preHits, stale+gm.preStale
			wmsg, gmsg := want.Messages, got.Messages
			if streamed {
				wmsg, gmsg = cw.msgs, cg.msgs
			}
			if !reflect.DeepEqual(gmsg, wmsg) {
				t.Errorf("%s (streamed %v): %d messages, want %d, or they differ", in.name, streamed, len(gmsg), len(wmsg))
			}
			if !reflect.DeepEqual(got.Warnings, want.Warnings) || !reflect.DeepEqual(got.Nodes, want.Nodes) ||
				!reflect.DeepEqual(got.Endpoints, want.Endpoints) || !reflect.DeepEqual(got.Actors, want.Actors) {
				t.Errorf("%s (streamed %v): warnings or tables differ", in.name, streamed)
			}
		}
	}
	if hits < 10000 {
		t.Errorf("only %d keys made in advance were used", hits)
	}
	t.Logf("%d inputs: %d keys made in advance used, %d out of date", len(inputs), hits, stale)
}
