package linking

import (
	"testing"
	"time"
)

// TestStreamMatchesBatch: linking in chunks finds the same patterns with
// nearly the same counts as linking the trace at once.
func TestStreamMatchesBatch(t *testing.T) {
	for _, method := range []string{MethodJoint, MethodWAP5} {
		tr := simulate(simConfig{clients: 5, perClient: 200, think: gauss{ms(300), ms(100)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: multiTier(5, false), seed: 6, clientName: "CLIENT"})
		o := Options{Method: method, Window: 200 * time.Millisecond}
		batch, err := Link(tr, o)
		if err != nil {
			t.Fatal(err)
		}
		o.Stream = 15 * time.Second
		stream, err := Link(tr, o)
		if err != nil {
			t.Fatal(err)
		}
		if stream.Iterations < 4 {
			t.Errorf("%s: %d chunks, want several", method, stream.Iterations)
		}
		if len(stream.Instances) != 0 {
			t.Errorf("%s: stream kept %d instances", method, len(stream.Instances))
		}
		if method == MethodWAP5 {
			// WAP5's own instances are too few and too noisy here to
			// compare pattern by pattern: compare the totals.
			sum := func(r *Result) (n int) {
				for _, p := range r.Patterns {
					n += p.Count
				}
				return
			}
			if a, b := sum(stream), sum(batch); a < b*9/10 || a > b*11/10 {
				t.Errorf("wap5: %d instances in the stream, %d in batch", a, b)
			}
			continue
		}
		want := map[string]int{}
		for _, p := range batch.Patterns[:4] {
			want[shape(p.Root)] = p.Count
		}
		for _, p := range stream.Patterns[:4] {
			w, ok := want[shape(p.Root)]
			if !ok {
				t.Errorf("%s: stream pattern %s not among the batch's top 4", method, shape(p.Root))
				continue
			}
			if d := p.Count - w; d < -w/10 || d > w/10 {
				t.Errorf("%s: %s count %d in the stream, %d in batch", method, shape(p.Root), p.Count, w)
			}
		}
	}
}

// TestStreamOnInstance: a stream reports every instance it aggregates, once,
// with its messages' positions in the trace, and the result places every
// reported pattern at a rank whose count is the number reported.
func TestStreamOnInstance(t *testing.T) {
	tr := simulate(simConfig{clients: 5, perClient: 100, think: gauss{ms(300), ms(100)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(5, false), seed: 7, clientName: "CLIENT"})
	for _, method := range []string{MethodJoint, MethodWAP5} {
		got := map[int]int{}
		o := Options{Method: method, Window: 200 * time.Millisecond, Stream: 10 * time.Second}
		o.OnInstance = func(in StreamInstance) {
			got[in.Pattern]++
			if len(in.Seq) != len(in.Messages) || len(in.Messages) == 0 || in.Prob <= 0 || in.Prob > 1 {
				t.Fatalf("%s: instance with %d messages, %d positions, prob %v", method, len(in.Messages), len(in.Seq), in.Prob)
			}
			for k, q := range in.Seq {
				if tr.Messages[q] != in.Messages[k] {
					t.Fatalf("%s: message %d of an instance is not the trace's message %d", method, k, q)
				}
			}
		}
		res, err := Link(tr, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || len(res.StreamPatterns) != len(res.Patterns) {
			t.Fatalf("%s: %d patterns reported, %d placed, %d in the result", method, len(got), len(res.StreamPatterns), len(res.Patterns))
		}
		for id, n := range got {
			sp := res.StreamPatterns[id]
			if c := res.Patterns[sp.Rank-1].Count; c != n {
				t.Errorf("%s: pattern %d (rank %d): %d instances reported, count %d", method, id, sp.Rank, n, c)
			}
		}
	}
}
