package nesting

import (
	"cmp"
	"math/rand"
	"slices"
	"testing"
	"time"

	"wap5/trace"
)

// refPairKinds is step 1a as it was before pairKinds took messages through
// a queue: every call and return message keyed, all sorted stably by key
// and kind in time order, then paired on (caller, callee, call id) in that
// order, each return taking the earliest open call. It returns the pairs
// in the order they are made and the number of unpaired messages.
func refPairKinds(s *state) (pairs []msgPair, unpaired int) {
	msgs := s.msgs
	order := make([]int32, len(msgs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmp.Compare(msgs[a].Time(), msgs[b].Time())
	})
	var ks []pairKey
	for _, i := range order {
		m := &msgs[i]
		if m.Kind == trace.KindCall || m.Kind == trace.KindReturn {
			ks = append(ks, pairKey{s.pairingKey(m), i, m.Kind})
		}
	}
	slices.SortStableFunc(ks, func(a, b pairKey) int {
		switch {
		case a.k < b.k || a.k == b.k && a.kind < b.kind:
			return -1
		case b.k < a.k || a.k == b.k && b.kind < a.kind:
			return 1
		}
		return 0
	})
	type key struct {
		a, b trace.NodeID
		id   int32
	}
	open := map[key][]int32{}
	for _, o := range ks {
		m := &msgs[o.j]
		if o.kind == trace.KindCall {
			k := key{m.Src, m.Dst, m.Call}
			open[k] = append(open[k], o.j)
			continue
		}
		k := key{m.Dst, m.Src, m.Call}
		q := open[k]
		if len(q) == 0 {
			unpaired++
			continue
		}
		pairs = append(pairs, msgPair{q[0], o.j})
		open[k] = q[1:]
	}
	for _, q := range open {
		unpaired += len(q)
	}
	return pairs, unpaired
}

// TestPairKindsQueue checks step 1a against refPairKinds on random traces:
// in time order or not, clock offsets between nodes of up to a second
// either way (so that keys run far ahead of or behind the times), calls
// with one time only, repeated call ids, lone returns, both time modes and
// a skew window; the guess that the trace is in order, the order and lead
// found by a pass, and no lead at all must all give the reference's pairs.
func TestPairKindsQueue(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for iter := 0; iter < 300; iter++ {
		tr := trace.New()
		nodes := 2 + rng.Intn(4)
		for k := 0; k < nodes; k++ {
			tr.Node(string(rune('A' + k)))
		}
		off := make([]int64, nodes)
		for k := range off {
			if rng.Intn(2) == 0 {
				off[k] = rng.Int63n(2e9) - 1e9
			}
		}
		var ts int64 = 1e12
		n := 1 + rng.Intn(400)
		for j := 0; j < n; j++ {
			ts += rng.Int63n(5e6)
			a, b := trace.NodeID(rng.Intn(nodes)), trace.NodeID(rng.Intn(nodes))
			m := trace.Message{Send: ts, Recv: ts + rng.Int63n(1e6) + off[b] - off[a], Src: a, Dst: b,
				Kind: trace.Kind(rng.Intn(3)), Call: int32(rng.Intn(1 + n/4)), ID: trace.NoRef, Truth: trace.NoRef}
			switch rng.Intn(10) {
			case 0:
				m.Recv = trace.Unknown
			case 1:
				if iter%2 == 0 { // else the trace is in time order but for the shuffle below
					m.Send = trace.Unknown
				}
			}
			if rng.Intn(8) == 0 {
				m.Call = trace.NoRef
			}
			tr.Add(m)
		}
		if iter%3 == 0 { // out of time order
			rng.Shuffle(len(tr.Messages)/4, func(i, j int) { tr.Messages[i], tr.Messages[j] = tr.Messages[j], tr.Messages[i] })
		}
		for _, mode := range []TimeMode{TimeLocal, TimeSend} {
			o := DefaultOptions()
			o.Time, o.SkewWindow = mode, time.Duration(rng.Int63n(3e6))
			env := trace.Envelopes(tr.Messages)
			want, wantUn := refPairKinds(&state{t: tr, msgs: env, opt: o})
			check := func(what string, run func(s *state)) {
				t.Helper()
				s := &state{t: tr, msgs: env, opt: o}
				defer s.ar.free()
				s.calls = make([]call, 0, len(env)/2)
				s.pairs = make([]msgPair, 0, len(env)/2)
				run(s)
				if s.unpaired != wantUn || !slices.Equal(s.pairs, want) {
					t.Fatalf("iter %d mode %d, %s: %d pairs, %d unpaired; want %d, %d\n%v\n%v", iter, mode, what, len(s.pairs), s.unpaired, len(want), wantUn, s.pairs, want)
				}
			}
			check("guess", func(s *state) {
				if _, ok := s.pairKinds(nil, pairSpec{guess: true, lead: 1 << 62}); !ok {
					s.calls, s.pairs, s.actors, s.unpaired = s.calls[:0], s.pairs[:0], nil, 0
					order, sp := s.timeOrder()
					s.pairKinds(order, sp)
				}
			})
			check("lead", func(s *state) {
				order, sp := s.timeOrder()
				s.pairKinds(order, sp)
			})
			check("no lead", func(s *state) {
				order, _ := s.timeOrder()
				s.pairKinds(order, pairSpec{})
			})
		}
	}
}

// TestPairKindsTimeOrderTies: calls with the same key and the same
// pairing time are queued in time order, not in the order of the file
// (here the reverse): the return takes the call sent first.
func TestPairKindsTimeOrderTies(t *testing.T) {
	tr := trace.New()
	a, b := tr.Node("A"), tr.Node("B")
	for _, m := range []trace.Message{
		{Send: 10, Recv: 20, Src: a, Dst: b, Kind: trace.KindCall, Call: 1},
		{Send: 5, Recv: 20, Src: a, Dst: b, Kind: trace.KindCall, Call: 1},
		{Send: 30, Recv: 40, Src: b, Dst: a, Kind: trace.KindReturn, Call: 1},
	} {
		m.ID, m.Truth = trace.NoRef, trace.NoRef
		tr.Add(m)
	}
	s := &state{t: tr, msgs: trace.Envelopes(tr.Messages), opt: DefaultOptions()}
	defer s.ar.free()
	s.findCallPairs()
	if len(s.pairs) != 1 || s.pairs[0] != (msgPair{1, 2}) || s.unpaired != 1 {
		t.Fatalf("pairs %v, %d unpaired; want [{1 2}], 1", s.pairs, s.unpaired)
	}
}
