package linking

import (
	"math"
	"testing"

	"wap5/internal/hugemem"
	"wap5/trace"
)

// TestScratchGivenBack: the front's large scratch tables live outside the
// Go heap (offMake) and are given back when their step ends — J1's call
// table (pairRPCs) and FixedEndpoints' records — so that, where the
// process keeps memory (wap5 link), it is in the pool the next arrays take
// (hugemem.Kept grows by the table), and nothing stays mapped (offMapped,
// the bytes mapped outside the heap, is as before the step; the peers and
// roles J1 returns are below offMake's 4 MB and in the heap here).
func TestScratchGivenBack(t *testing.T) {
	hugemem.KeepUpTo(math.MaxInt, math.MaxInt, false)
	defer hugemem.Keep(false)
	const pairs = 300000 // a call table of 1M slots (8 MB)
	calls := func() *trace.Trace {
		tr := trace.New()
		a, b := tr.Node("a"), tr.Node("b")
		for i := range pairs {
			at := int64(10 * i)
			tr.Add(trace.Message{Send: at, Recv: at + 1, Src: a, Dst: b, ID: trace.NoRef, Call: int32(i), Kind: trace.KindCall, Truth: trace.NoRef})
			tr.Add(trace.Message{Send: at + 2, Recv: at + 3, Src: b, Dst: a, ID: trace.NoRef, Call: int32(i), Kind: trace.KindReturn, Truth: trace.NoRef})
		}
		return tr
	}
	endpoints := func() *trace.Trace {
		// 500,000 endpoints: records of 3 slots each (6 MB) at 3 peers
		// (with a quarter as many messages: else FixedEndpoints keeps
		// records for the messages' endpoints alone).
		tr := trace.New()
		n := tr.Node("n")
		tr.Endpoints = make([]string, 500000)
		tr.Endpoints[0] = "-"
		for i := range 130000 {
			tr.Messages = append(tr.Messages, trace.Message{Send: int64(i), Recv: int64(i) + 1, Src: n, Dst: n,
				SrcEP: trace.EndpointID(1 + i%7), DstEP: trace.EndpointID(1000 + i%200000), ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
		}
		return tr
	}
	cases := []struct {
		name  string
		tr    func() *trace.Trace
		step  func(tr *trace.Trace) bool // runs the step, reports whether its result is right
		size  int                        // of the table, bytes
		check string
	}{
		{"J1 call table", calls, func(tr *trace.Trace) bool {
			l := newLinker(tr, Options{}.Defaults(), nil)
			before := offMapped.Load()
			r := l.pairRPCs()
			if offMapped.Load() != before {
				return false
			}
			return r.peer[0] == 1 && r.peer[2*pairs-1] == 2*pairs-2 && r.role[0] == roleRequest
		}, 8 << 20, "the table given back, calls paired"},
		{"FixedEndpoints records", endpoints, func(tr *trace.Trace) bool {
			before := offMapped.Load()
			fixed := FixedEndpoints(tr, 3)
			return offMapped.Load() == before && fixed[1] && !fixed[1000]
		}, 6000000, "the records given back, endpoint 1 fixed"},
	}
	for _, c := range cases {
		tr := c.tr()
		hugemem.Trim() // (else the step takes its table from what the one before gave back)
		kept, _, _ := hugemem.Kept()
		if !c.step(tr) {
			t.Errorf("%s: want %s (mapped outside the heap now %d bytes)", c.name, c.check, offMapped.Load())
		}
		if now, _, _ := hugemem.Kept(); now < kept+c.size {
			t.Errorf("%s: %d bytes kept after the step, want at least %d more than the %d before", c.name, now, c.size, kept)
		}
	}
}
