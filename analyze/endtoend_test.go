package analyze

import (
	"math"
	"testing"

	"wap5/trace"
)

func TestEndToEnd(t *testing.T) {
	tr := trace.New()
	c, s, db := tr.Node("c"), tr.Node("s"), tr.Node("db")
	msg := func(src, dst trace.NodeID, send, recv int64) int32 {
		tr.Add(trace.Message{Send: send, Recv: recv, Src: src, Dst: dst, ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
		return int32(len(tr.Messages) - 1)
	}
	// Instance 1: c→s, s→db, db→s, s→c: 10 ms at c (s's and db's clocks
	// far off, which must not matter).
	a := []int32{msg(c, s, 0, 5e9), msg(s, db, 5e9+1e6, 9e9), msg(db, s, 9e9+1e6, 5e9+3e6), msg(s, c, 5e9+4e6, 10e6)}
	// Instance 2: 20 ms, half the weight.
	b := []int32{msg(c, s, 100e6, 5e9), msg(s, c, 5e9+1e6, 120e6)}
	// Instance 3: never returns to c; instance 4: root send unknown.
	x := []int32{msg(c, s, 200e6, 5e9)}
	y := []int32{msg(c, s, trace.Unknown, 5e9), msg(s, c, 5e9+1e6, 400e6)}
	p := &trace.Paths{Instances: []trace.Instance{
		{Pattern: 1, Prob: 1, Messages: a}, {Pattern: 1, Prob: 0.5, Messages: b},
		{Pattern: 2, Prob: 1, Messages: x}, {Pattern: 3, Prob: 1, Messages: y},
	}}
	got := endToEnd(tr, p)
	for _, c := range []struct {
		rank  int
		known bool
		mean  float64
		w     float64
	}{
		{1, true, (0.010 + 0.5*0.020) / 1.5, 1.5},
		{2, false, 0, 0},
		{3, false, 0, 0},
	} {
		s, ok := got[c.rank]
		if ok != c.known || (ok && (math.Abs(s.Mean-c.mean) > 1e-12 || s.W != c.w || s.Min != 0.010 || s.Max != 0.020)) {
			t.Errorf("pattern %d: %+v (present %v); want mean %v weight %v", c.rank, s, ok, c.mean, c.w)
		}
	}
}
