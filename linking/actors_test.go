package linking

import (
	"fmt"
	"math/rand"
	"testing"

	"wap5/trace"
)

// actorTrace builds a thread-per-request server B (client A, back-end C):
// every request A→B makes one call B→C from the thread that received it,
// 1 ms after the request; C answers in 1 ms and B replies 1 ms after the
// return. First `alone` requests one at a time (the calls with one possible
// span teach the habit), then `pairs` pairs of concurrent requests where
// timing misleads: the first request's call leaves 1 ms after the second
// request arrived, the second's 4 ms after it. Truth is the request's
// number. mode names B's threads: "" none; "per-request": four threads,
// each request served by one; "event-loop": one thread; "hand-off": four,
// the call sent by any of them.
func actorTrace(alone, pairs int, mode string) *trace.Trace {
	tr := trace.New()
	a, b, c := tr.Node("A"), tr.Node("B"), tr.Node("C")
	rng := rand.New(rand.NewSource(1))
	jit := func() int64 { return int64(rng.Intn(200_000)) - 100_000 } // ±0.1 ms
	id, call := int64(0), int32(0)
	add := func(send, recv int64, src, dst trace.NodeID, k trace.Kind, cl int32, truth int, sa, da trace.ActorID) {
		tr.Add(trace.Message{Send: send, Recv: recv, Src: src, Dst: dst, Kind: k, Call: cl, ID: id, Truth: int32(truth), Bytes: 100, SrcActor: sa, DstActor: da})
		id++
	}
	thread := func(n int) trace.ActorID {
		switch mode {
		case "":
			return trace.NoActor
		case "event-loop":
			n = 0
		}
		return tr.Actor(b, fmt.Sprintf("100/%d", 101+n%4))
	}
	sender := func(th trace.ActorID) trace.ActorID {
		if mode == "hand-off" {
			return thread(rng.Intn(4))
		}
		return th
	}
	const ms = int64(1e6)
	net := 100_000 * int64(1) // 0.1 ms on the wire
	// request: A→B at t; call B→C at tc; return at tc+1 ms; reply at tr.
	request := func(truth int, t, tc, trep int64, th trace.ActorID) {
		add(t-net, t, a, b, trace.KindCall, call, truth, trace.NoActor, th)
		cth := sender(th)
		add(tc, tc+net, b, c, trace.KindCall, call+1, truth, cth, trace.NoActor)
		add(tc+ms-net, tc+ms, c, b, trace.KindReturn, call+1, truth, trace.NoActor, cth)
		add(trep, trep+net, b, a, trace.KindReturn, call, truth, th, trace.NoActor)
		call += 2
	}
	t, n := int64(10*ms), 0
	for ; n < alone; n++ {
		tc := t + ms + jit()
		request(n, t, tc, tc+2*ms+jit(), thread(n))
		t += 10 * ms
	}
	for p := 0; p < pairs; p++ {
		t1, t2 := t, t+5*ms
		c1, c2 := t2+ms+jit(), t2+4*ms+jit()
		request(n, t1, c1, c2+2*ms+jit(), thread(n))
		request(n+1, t2, c2, c2+2*ms+ms/2+jit(), thread(n+1))
		n += 2
		t += 20 * ms
	}
	return tr
}

// exactInstances counts the instances that are exactly one request's
// messages (by Truth), and the requests.
func exactInstances(tr *trace.Trace, res *Result) (exact, requests int) {
	size := map[int32]int{}
	for i := range tr.Messages {
		size[tr.Messages[i].Truth]++
	}
	for _, in := range res.Instances {
		t := tr.Messages[in.Messages[0]].Truth
		ok := len(in.Messages) == size[t]
		for _, i := range in.Messages {
			ok = ok && tr.Messages[i].Truth == t
		}
		if ok {
			exact++
		}
	}
	return exact, len(size)
}

// TestActorHint: timing alone gives each concurrent pair's first call to
// the second request (its call leaves 1 ms after the second request arrived,
// the usual delay); the threads say otherwise, and the joint linker learns
// from the requests served alone that B's calls leave from the receiving
// thread. With the hint every instance is exact; without actors, with the
// hint off (ActorMin > 1), or where the habit does not hold (one thread, or
// calls handed to any thread), the pairs are swapped.
func TestActorHint(t *testing.T) {
	const alone, pairs = 200, 20
	tests := []struct {
		name      string
		mode      string
		actorMin  float64
		wantExact bool // every instance exact
		wantUsed  bool // the hint used at B
	}{
		{"per-request", "per-request", 0, true, true},
		{"per-request, hint off", "per-request", 2, false, false},
		{"no actors", "", 0, false, false},
		{"event-loop", "event-loop", 0, false, false},
		{"hand-off", "hand-off", 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := actorTrace(alone, pairs, tc.mode)
			res, err := Link(tr, Options{ActorMin: tc.actorMin})
			if err != nil {
				t.Fatal(err)
			}
			exact, requests := exactInstances(tr, res)
			t.Logf("%d of %d requests' instances exact; habits %+v", exact, requests, res.Actors)
			if got := exact == requests; got != tc.wantExact {
				t.Errorf("all %d instances exact: %v (%d exact), want %v", requests, got, exact, tc.wantExact)
			}
			if !tc.wantExact && exact > requests-pairs/2 {
				t.Errorf("without the hint %d of %d exact: timing should swap most of the %d pairs", exact, requests, pairs)
			}
			used := false
			for _, h := range res.Actors {
				if tr.NodeName(h.Node) == "B" {
					used = h.Used
					if tc.wantUsed && (h.Unambiguous < alone || h.Same != h.Unambiguous || h.Actors != 4) {
						t.Errorf("habit at B: %+v, want %d unambiguous calls all on the receiving thread of 4", h, alone)
					}
				}
			}
			if used != tc.wantUsed {
				t.Errorf("hint used at B: %v, want %v (%+v)", used, tc.wantUsed, res.Actors)
			}
		})
	}
}

// BenchmarkLinkActors links actorTrace's server with and without threads:
// the cost of learning the habit and of the hint's terms.
func BenchmarkLinkActors(b *testing.B) {
	for _, mode := range []string{"", "per-request", "hand-off"} {
		tr := actorTrace(2000, 500, mode)
		name := mode
		if name == "" {
			name = "none"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Link(tr, Options{NoInstances: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
