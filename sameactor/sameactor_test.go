package sameactor

import (
	"math"
	"testing"

	"wap5/trace"
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name       string
		recv, sent []trace.ActorID // per request / call
		pairs      [][2]trace.ActorID
		used       bool
		chance     float64
	}{
		{"none", nil, nil, nil, false, 0},
		{"one actor (event loop)", []trace.ActorID{1, 1, 1}, []trace.ActorID{1, 1, 1},
			rep([2]trace.ActorID{1, 1}, 50), false, 1},
		{"per request, 50 agree", []trace.ActorID{1, 2, 3, 4}, []trace.ActorID{1, 2, 3, 4},
			append(rep([2]trace.ActorID{1, 1}, 25), rep([2]trace.ActorID{2, 2}, 25)...), true, 0.25},
		{"per request, too few to beat chance", []trace.ActorID{1, 2}, []trace.ActorID{1, 2},
			rep([2]trace.ActorID{1, 1}, 5), false, 0.5},
		{"one disagrees in 50 (< 99 %)", []trace.ActorID{1, 2, 3, 4}, []trace.ActorID{1, 2, 3, 4},
			append(rep([2]trace.ActorID{1, 1}, 49), [2]trace.ActorID{1, 2}), false, 0.25},
		{"unknown actors ignored", []trace.ActorID{0, 1, 2}, []trace.ActorID{0, 1, 2},
			append(rep([2]trace.ActorID{1, 1}, 40), [2]trace.ActorID{0, 2}, [2]trace.ActorID{2, 0}), true, 0.5},
	}
	var ta Tally // reused: Decide resets it
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range tc.recv {
				ta.Received(a)
			}
			for _, a := range tc.sent {
				ta.Sent(a)
			}
			for _, p := range tc.pairs {
				ta.Pair(p[0], p[1])
			}
			h := ta.Decide(0.99, 1e-6)
			if h.Used != tc.used || math.Abs(h.Chance-tc.chance) > 1e-12 {
				t.Errorf("%+v: used %v chance %v, want %v %v", h, h.Used, h.Chance, tc.used, tc.chance)
			}
			if h.Any != (len(tc.recv)+len(tc.sent) > 0) {
				t.Errorf("Any %v", h.Any)
			}
		})
	}
}

func rep(p [2]trace.ActorID, n int) [][2]trace.ActorID {
	out := make([][2]trace.ActorID, n)
	for i := range out {
		out[i] = p
	}
	return out
}

func TestChanceTail(t *testing.T) {
	tests := []struct {
		n, s int
		p    float64
		want float64
	}{
		{10, 0, 0.5, 1},
		{10, 10, 0.5, math.Pow(0.5, 10)},
		{10, 9, 0.5, math.Min(1, 10*math.Pow(0.5, 9))},
		{5, 5, 1, 1},
		{5, 5, 0, 0},
	}
	for _, tc := range tests {
		if got := ChanceTail(tc.n, tc.s, tc.p); math.Abs(got-tc.want) > 1e-12*math.Max(1, tc.want) {
			t.Errorf("ChanceTail(%d, %d, %v) = %v, want %v", tc.n, tc.s, tc.p, got, tc.want)
		}
	}
}
