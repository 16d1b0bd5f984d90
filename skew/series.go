package skew

import (
	"math"

	"wap5/trace"
)

// series holds the one-way delay samples of one node pair (a < b), both
// ways, on a's clock (step 1): dir[0] is a→b with x = send time on a,
// dir[1] is b→a with x = receive time on a. x is relative to base so that
// float64 keeps nanosecond resolution.
type series struct {
	a, b trace.NodeID
	base int64
	dir  [2][]point
}

// Accumulator collects the delay series of every node pair from messages
// given one at a time, so a caller can feed it while streaming a trace.
// Memory is 16 bytes per message with both timestamps.
type Accumulator struct {
	dense  []int32 // pair index+1 by a*denseN+b, for small node counts
	denseN int
	sparse pairMap
	pairs  []*series
	// local time range per node (either end of any message), for the
	// reference time T0.
	lo, hi []int64
	n      int // messages used
}

// NewAccumulator returns an empty accumulator; nodes is a hint of the number
// of nodes.
func NewAccumulator(nodes int) *Accumulator {
	acc := &Accumulator{}
	if nodes > 0 && nodes <= 2048 {
		acc.denseN = nodes
		acc.dense = make([]int32, nodes*nodes)
	}
	return acc
}

func (acc *Accumulator) seen(n trace.NodeID, ts int64) {
	for int(n) >= len(acc.lo) {
		acc.lo = append(acc.lo, math.MaxInt64)
		acc.hi = append(acc.hi, math.MinInt64)
	}
	if ts < acc.lo[n] {
		acc.lo[n] = ts
	}
	if ts > acc.hi[n] {
		acc.hi[n] = ts
	}
}

// Add adds one message. Messages without both timestamps, and messages
// inside one node, carry no clock information and are ignored.
func (acc *Accumulator) Add(m *trace.Message) {
	if m.Send != trace.Unknown {
		acc.seen(m.Src, m.Send)
	}
	if m.Recv != trace.Unknown {
		acc.seen(m.Dst, m.Recv)
	}
	if m.Send == trace.Unknown || m.Recv == trace.Unknown || m.Src == m.Dst || m.Src < 0 || m.Dst < 0 {
		return
	}
	a, b, dir, x := m.Src, m.Dst, 0, m.Send
	if b < a {
		a, b, dir, x = b, a, 1, m.Recv
	}
	s := acc.pair(a, b, x)
	s.dir[dir] = append(s.dir[dir], point{x: float64(x - s.base), d: float64(m.Recv - m.Send)})
	acc.n++
}

func (acc *Accumulator) pair(a, b trace.NodeID, x int64) *series {
	return acc.pairs[acc.pairIndex(a, b, x)]
}

// pairIndex returns the index of pair (a, b), a < b, adding it (with its
// time base x) if new.
func (acc *Accumulator) pairIndex(a, b trace.NodeID, x int64) int32 {
	if int(b) < acc.denseN {
		k := int(a)*acc.denseN + int(b)
		if acc.dense[k] == 0 {
			acc.dense[k] = acc.newPair(a, b, x)
		}
		return acc.dense[k] - 1
	}
	k := uint64(a)<<32 | uint64(uint32(b))
	slot := acc.sparse.find(k)
	if acc.sparse.keys[slot] == 0 {
		acc.sparse.put(slot, k, acc.newPair(a, b, x))
		slot = acc.sparse.find(k)
	}
	return acc.sparse.vals[slot] - 1
}

// pairMap is the sparse pair index: open addressing (linear probing, at
// most half full) over the keys a<<32|b of pairs a < b (never 0, which
// marks a free slot), for the two lookups per message of AddAll and
// AddAllEnvelopes (a Go map's lookup took three times as long).
type pairMap struct {
	keys []uint64
	vals []int32
	n    int
}

// find returns k's slot, or the free slot where it would go.
func (m *pairMap) find(k uint64) int {
	if m.keys == nil {
		m.keys, m.vals = make([]uint64, 64), make([]int32, 64)
	}
	mask := len(m.keys) - 1
	h := k * 0x9e3779b97f4a7c15
	for i := int(h>>32) & mask; ; i = (i + 1) & mask {
		if m.keys[i] == k || m.keys[i] == 0 {
			return i
		}
	}
}

// put sets free slot i to key k and value v, doubling the table when it
// is half full.
func (m *pairMap) put(i int, k uint64, v int32) {
	m.keys[i], m.vals[i] = k, v
	m.n++
	if 2*m.n <= len(m.keys) {
		return
	}
	keys, vals := m.keys, m.vals
	m.keys, m.vals = make([]uint64, 2*len(keys)), make([]int32, 2*len(keys))
	for j, k := range keys {
		if k != 0 {
			s := m.find(k)
			m.keys[s], m.vals[s] = k, vals[j]
		}
	}
}

func (acc *Accumulator) newPair(a, b trace.NodeID, x int64) int32 {
	acc.pairs = append(acc.pairs, &series{a: a, b: b, base: x})
	return int32(len(acc.pairs))
}

// AddAll adds many messages at once, like Add for each, with a counting
// pass first so that every series is allocated once from one block instead
// of growing.
func (acc *Accumulator) AddAll(msgs []trace.Message) {
	idx := make([]int32, len(msgs)) // pair index·2 + direction, or −1
	var count []int32
	for i := range msgs {
		m := &msgs[i]
		if m.Send != trace.Unknown {
			acc.seen(m.Src, m.Send)
		}
		if m.Recv != trace.Unknown {
			acc.seen(m.Dst, m.Recv)
		}
		idx[i] = -1
		if m.Send == trace.Unknown || m.Recv == trace.Unknown || m.Src == m.Dst || m.Src < 0 || m.Dst < 0 {
			continue
		}
		a, b, dir, x := m.Src, m.Dst, int32(0), m.Send
		if b < a {
			a, b, dir, x = b, a, 1, m.Recv
		}
		k := acc.pairIndex(a, b, x)
		for int(2*k+1) >= len(count) {
			count = append(count, 0, 0)
		}
		idx[i] = 2*k + dir
		count[idx[i]]++
	}
	total := acc.room(count)
	for i, k := range idx {
		if k < 0 {
			continue
		}
		m := &msgs[i]
		s := acc.pairs[k/2]
		x := m.Send
		if k%2 == 1 {
			x = m.Recv
		}
		s.dir[k%2] = append(s.dir[k%2], point{x: float64(x - s.base), d: float64(m.Recv - m.Send)})
	}
	acc.n += total
}

// room gives every series the room for count more samples (by pair index·2
// + direction), from one block, and returns their total.
func (acc *Accumulator) room(count []int32) int {
	total := 0
	for _, c := range count {
		total += int(c)
	}
	block := make([]point, total)
	off := 0
	for k := 0; 2*k < len(count); k++ {
		s := acc.pairs[k]
		for d := 0; d < 2; d++ {
			c := int(count[2*k+d])
			switch {
			case c == 0:
			case len(s.dir[d]) > 0: // Add was used before: grow once
				s.dir[d] = append(make([]point, 0, len(s.dir[d])+c), s.dir[d]...)
			default:
				s.dir[d] = block[off : off : off+c]
				off += c
			}
		}
	}
	return total
}

// AddAllEnvelopes is AddAll for messages' envelopes (trace.ReadFileEnvelopes):
// the same series, in the same order. Its two passes find each message's
// pair alike (the first adds the pairs), so no index per message is kept
// between them.
func (acc *Accumulator) AddAllEnvelopes(env []trace.Envelope) {
	// 1. Times seen per node; samples counted per pair and direction.
	var count []int32
	for i := range env {
		m := &env[i]
		if m.Send != trace.Unknown {
			acc.seen(m.Src, m.Send)
		}
		if m.Recv != trace.Unknown {
			acc.seen(m.Dst, m.Recv)
		}
		if m.Send == trace.Unknown || m.Recv == trace.Unknown || m.Src == m.Dst || m.Src < 0 || m.Dst < 0 {
			continue
		}
		a, b, dir, x := m.Src, m.Dst, int32(0), m.Send
		if b < a {
			a, b, dir, x = b, a, 1, m.Recv
		}
		k := acc.pairIndex(a, b, x)
		for int(2*k+1) >= len(count) {
			count = append(count, 0, 0)
		}
		count[2*k+dir]++
	}
	// 2. Every series' room, from one block.
	total := acc.room(count)
	// 3. The samples, in message order.
	for i := range env {
		m := &env[i]
		if m.Send == trace.Unknown || m.Recv == trace.Unknown || m.Src == m.Dst || m.Src < 0 || m.Dst < 0 {
			continue
		}
		a, b, dir, x := m.Src, m.Dst, 0, m.Send
		if b < a {
			a, b, dir, x = b, a, 1, m.Recv
		}
		s := acc.pairs[acc.pairIndex(a, b, x)]
		s.dir[dir] = append(s.dir[dir], point{x: float64(x - s.base), d: float64(m.Recv - m.Send)})
	}
	acc.n += total
}
