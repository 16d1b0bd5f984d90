package nesting

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"wap5/trace"
)

// actorTrace is a server B called by A that calls C for every request.
// Requests arrive every ~gap ms and overlap; B serves each on a thread of
// a pool (a thread serves one request at a time). mode says which thread
// makes the call to C: "same" (the one that received the request), "loop"
// (B is one event loop: every message on one thread), "handoff" (another
// thread of the pool), "none" (no actors at all). truth= is the request.
func actorTrace(n int, gap float64, mode string, seed uint64) *trace.Trace {
	tr := trace.New()
	r := rand.New(rand.NewPCG(seed, 7))
	A, B, C := tr.Node("A"), tr.Node("B"), tr.Node("C")
	ms := func(x float64) int64 { return int64(x * 1e6) }
	busy := []int64{} // per pool thread: busy until
	actor := func(node trace.NodeID, name string) trace.ActorID {
		if mode == "none" {
			return trace.NoActor
		}
		return tr.Actor(node, name)
	}
	add := func(send, recv int64, src, dst trace.NodeID, k trace.Kind, call, truth int, sa, da trace.ActorID) {
		tr.Add(trace.Message{Send: send, Recv: recv, Src: src, Dst: dst, Kind: k, Call: int32(call), ID: trace.NoRef, Truth: int32(truth), SrcActor: sa, DstActor: da})
	}
	t := ms(10)
	for i := 0; i < n; i++ {
		t += ms(gap * (0.2 + 1.6*r.Float64()))
		arrive := t + ms(0.2)
		callC := arrive + ms(1+9*r.Float64())
		backC := callC + ms(1+4*r.Float64())
		reply := backC + ms(1+9*r.Float64())
		// The thread: the first free one of the pool.
		th := 0
		for th < len(busy) && busy[th] > arrive {
			th++
		}
		if th == len(busy) {
			busy = append(busy, 0)
		}
		busy[th] = reply + 1
		recvName, sendName := fmt.Sprintf("100/%d", 101+th), fmt.Sprintf("100/%d", 101+th)
		switch mode {
		case "loop":
			recvName, sendName = "100/100", "100/100"
		case "handoff":
			sendName = fmt.Sprintf("100/%d", 900+i%3)
		}
		ra, sa := actor(B, recvName), actor(B, sendName)
		ca, cl := actor(A, "1/1"), actor(C, "200/200")
		add(t, arrive, A, B, trace.KindCall, 2*i, i, ca, ra)
		add(callC, callC+ms(0.2), B, C, trace.KindCall, 2*i+1, i, sa, cl)
		add(backC-ms(0.2), backC, C, B, trace.KindReturn, 2*i+1, i, cl, sa)
		add(reply, reply+ms(0.2), B, A, trace.KindReturn, 2*i, i, ra, ca)
	}
	return tr
}

func TestActors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		mode   string
		used   bool
		exact  bool // every instance its request's path
		stats  bool // Result.Actors has B
		minAmb int  // at least this many unambiguous calls at B
	}{
		{"thread per request", 600, "same", true, true, true, 10},
		{"event loop", 600, "loop", false, false, true, 10},
		{"hand-off to another thread", 600, "handoff", false, false, true, 10},
		{"too few unambiguous calls", 12, "same", false, false, true, 0},
		{"no actors", 600, "none", false, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := actorTrace(tc.n, 4, tc.mode, 1)
			if err := tr.CheckValid(); err != nil {
				t.Fatal(err)
			}
			r := Nest(tr, DefaultOptions())
			off := DefaultOptions()
			off.ActorMin = 2
			plain := Nest(tr, off)
			var st *ActorStat
			for i := range r.Actors {
				if tr.NodeName(r.Actors[i].Node) == "B" {
					st = &r.Actors[i]
				}
			}
			if (st != nil) != tc.stats {
				t.Fatalf("actor statistics for B: %v, want %v (%+v)", st != nil, tc.stats, r.Actors)
			}
			if st == nil {
				if !sameInstances(r, plain) {
					t.Error("without actors the result differs from --actor-min 2's")
				}
				return
			}
			t.Logf("B: %s", st)
			if st.Used != tc.used || st.Unambiguous < tc.minAmb {
				t.Fatalf("B: used %v with %d unambiguous calls; want used %v, ≥ %d", st.Used, st.Unambiguous, tc.used, tc.minAmb)
			}
			acc, accPlain := instanceAccuracy(tr, r), instanceAccuracy(tr, plain)
			t.Logf("instances exact: %.3f with actors, %.3f without; parallelism %.2f", acc, accPlain, r.Parallelism)
			if tc.exact {
				if acc != 1 {
					t.Errorf("instance accuracy %.3f with actors, want 1", acc)
				}
				if accPlain >= 1 || st.Narrowed == 0 {
					t.Errorf("the case is not ambiguous: %.3f without actors, %d calls narrowed", accPlain, st.Narrowed)
				}
			}
			if !st.Used && !sameInstances(r, plain) {
				t.Error("filter not used, yet the result differs from --actor-min 2's")
			}
			if r.Parallelism != plain.Parallelism {
				t.Errorf("parallelism %.3f with actors, %.3f without: it is the data's, before step 2b", r.Parallelism, plain.Parallelism)
			}
		})
	}
}

// TestActorFallback: a call sent by a thread that received none of its
// candidates keeps them all and still gets a parent.
func TestActorFallback(t *testing.T) {
	tr := actorTrace(600, 4, "same", 2)
	// Find a call B→C with several candidates and give it a stranger thread.
	s := &state{t: tr, msgs: trace.Envelopes(tr.Messages), opt: DefaultOptions()}
	s.findCallPairs()
	victim := -1
	for i := range s.calls {
		c := &s.calls[i]
		if tr.NodeName(c.caller) != "B" {
			continue
		}
		// Step 2a's candidates (no skew window): calls into B open
		// around c.
		n := 0
		for j := range s.calls {
			if p := &s.calls[j]; j != i && p.callee == c.caller && p.ca <= c.cs && p.rd >= c.cr {
				n++
			}
		}
		if n > 1 {
			victim = int(s.pairs[i].call)
			break
		}
	}
	if victim < 0 {
		t.Fatal("no ambiguous call")
	}
	stranger := tr.Actor(tr.Node("B"), "100/4242")
	tr.Messages[victim].SrcActor = stranger
	r := Nest(tr, DefaultOptions())
	st := r.Actors[slices.IndexFunc(r.Actors, func(a ActorStat) bool { return tr.NodeName(a.Node) == "B" })]
	if !st.Used || st.Fallback != 1 {
		t.Fatalf("B: %s; want used with 1 call keeping all", st)
	}
	n := 0
	for _, in := range r.Instances {
		n += len(in.Messages)
	}
	if n != len(tr.Messages) || r.Roots != 600 {
		t.Fatalf("%d roots, instances hold %d of %d messages", r.Roots, n, len(tr.Messages))
	}
}

func sameInstances(a, b *Result) bool {
	if len(a.Instances) != len(b.Instances) {
		return false
	}
	for i := range a.Instances {
		if !slices.Equal(a.Instances[i].Messages, b.Instances[i].Messages) || a.Instances[i].Pattern != b.Instances[i].Pattern {
			return false
		}
	}
	return true
}
