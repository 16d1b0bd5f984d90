package nesting

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"wap5/trace"
)

// findCallPairs is step 1: it fills s.calls and counts unpaired messages.
func (s *state) findCallPairs() {
	msgs := s.msgs
	// The calls and pairs, then step 1's scratch: in one block when there
	// is no kept mapping for the calls (Nest has reserved one for the
	// envelopes and the pass).
	n := len(msgs)
	s.ar.reserve(n / 2 * (callWords + pairWords(s.opt)))
	s.calls = grabDirty[call](&s.ar, n/2)[:0] // appended to: at most one call per two messages
	if !s.opt.NoInstances {
		s.pairs = grabDirty[msgPair](&s.ar, n/2)[:0]
	}
	s.ar.reserve(scratchWords)
	scratch := s.ar.mark()
	defer s.ar.release(scratch)
	// 1a. Messages marked call/return, matched on (caller, callee, call id);
	// open calls with the same key queue up and returns take the earliest.
	// First on the guess that the messages are in time order and that
	// the least lead seen so far bounds the keys to come (pairKinds
	// checks both); where that fails, again with the time order and the
	// lead of all messages.
	sp := pairSpec{guess: true, lead: math.MaxInt64}
	none, ok := s.pairKinds(nil, sp)
	var order []int32
	if !ok {
		s.calls, s.pairs, s.actors, s.unpaired = s.calls[:0], s.pairs[:0], nil, 0
		s.ar.release(scratch)
		order, sp = s.timeOrder()
		none, _ = s.pairKinds(order, sp)
	}
	if none > 0 {
		s.pairByConnection(order, none)
	}
}

// pairKinds is pairKinds on keys of the trace's size.
func (s *state) pairKinds(order []int32, sp pairSpec) (none int, ok bool) {
	if len(s.t.Nodes) <= 1<<16 {
		return pairKinds(s, order, sp, func(a, b trace.NodeID, id int32) uint64 {
			return uint64(a)<<48 | uint64(b)<<32 | uint64(uint32(id))
		}, func(k uint64) uint64 { return k })
	}
	type key struct {
		a, b trace.NodeID
		id   int32
	}
	return pairKinds(s, order, sp, func(a, b trace.NodeID, id int32) key { return key{a, b, id} },
		func(k key) uint64 { return uint64(k.a)<<40 ^ uint64(k.b)<<20 ^ uint64(uint32(k.id)) })
}

// passWords is the arena the pass takes for n messages, in words: the
// calls, their ties and message pairs (kept to the end), and room for the
// scratch of the steps after step 1 (which take the ties and theirs from
// the envelopes' memory when they may: see arena.adopt).
func passWords(n int) int { return n/2*(callWords+3+1) + 2*n + scratchWords }

// callWords is the words of a call; pairWords of a msgPair if kept.
const callWords = 5

func pairWords(o Options) int {
	if o.NoInstances {
		return 0
	}
	return 1
}

// scratchWords is the room step 1 reserves for its scratch, in words: the
// open-call table and the pairing queue of the usual trace (what needs
// more takes it as it goes).
const scratchWords = 1 << 13

// pairKey is a call or return message in pairing order: its key there, its
// place in time order and its kind (in the padding).
type pairKey struct {
	k    int64
	j    int32
	kind trace.Kind
}

// before is pairing order: by key, a call before a return at the same
// time, else in time order (a stable sort by key and kind).
func (a *pairKey) before(b *pairKey) bool {
	return a.k < b.k || a.k == b.k && (a.kind < b.kind || a.kind == b.kind && a.j < b.j)
}

// pairingKey is m's key in pairing order: on the callee's clock, a call
// when it reached the callee, a return when it left it, so clock offsets
// between caller and callee cannot put a return before its call. With
// sender times only, calls are moved earlier by the skew window instead.
func (s *state) pairingKey(m *trace.Envelope) int64 {
	switch {
	case s.opt.Time == TimeSend:
		if m.Kind == trace.KindCall {
			return m.Time() - int64(s.opt.SkewWindow)
		}
		return m.Time()
	case m.Kind == trace.KindCall:
		return either(m.Recv, m.Send)
	}
	return either(m.Send, m.Recv)
}

// pairQueue is a binary heap of call and return messages in pairing
// order (pairKey.before), its slice in the arena.
type pairQueue struct {
	h  []pairKey
	ar *arena
}

func (q *pairQueue) push(x pairKey) {
	if len(q.h) == cap(q.h) {
		more := grabDirty[pairKey](q.ar, max(2*cap(q.h), 256))
		q.h = more[:copy(more, q.h)]
	}
	h := append(q.h, x)
	j := len(h) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !x.before(&h[p]) {
			break
		}
		h[j] = h[p]
		j = p
	}
	h[j] = x
	q.h = h
}

func (q *pairQueue) pop() pairKey {
	h := q.h
	top := h[0]
	n := len(h) - 1
	x := h[n]
	h = h[:n]
	j := 0
	for {
		c := 2*j + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].before(&h[c]) {
			c++
		}
		if !h[c].before(&x) {
			break
		}
		h[j] = h[c]
		j = c
	}
	if n > 0 {
		h[j] = x
	}
	q.h = h
	return top
}

// pairSpec says how pairKinds knows what it may pair before it has
// seen every message: no pairing key is below its message's time plus
// lead (bounded false: no such bound), or, with guess, lead is the least
// seen so far (and the messages are guessed to be in time order), which
// pairKinds checks.
type pairSpec struct {
	lead           int64
	bounded, guess bool
}

// keyLead is pairingKey(m) − m.Time() for a call or return message; ok
// is false on overflow.
func (s *state) keyLead(m *trace.Envelope) (d int64, ok bool) {
	switch {
	case m.Kind != trace.KindCall:
		return 0, true
	case s.opt.Time == TimeSend:
		return -int64(s.opt.SkewWindow), true
	case m.Send != trace.Unknown && m.Recv != trace.Unknown:
		d = m.Recv - m.Send
		return d, (m.Recv^m.Send)&(m.Recv^d) >= 0
	}
	return 0, true
}

// pairKinds pairs the messages marked call and return (1a) and returns
// how many have neither kind. It takes them in pairing order without
// sorting them all: messages come in time order (order, or their own when
// order is nil), and none's pairing key is below its time plus sp.lead,
// so a message in the queue whose key is below the next message's time
// plus sp.lead comes before every message not yet queued. With sp.guess
// it returns ok false as soon as a message is out of time order or would
// have had to come before one already paired (the lead seen so far was
// too large): the caller starts over.
func pairKinds[K comparable](s *state, order []int32, sp pairSpec, mk func(a, b trace.NodeID, id int32) K, hash func(K) uint64) (none int, ok bool) {
	msgs := s.msgs
	type queue struct{ head, tail int32 }
	// Open calls by key: a direct-mapped table of slots in front of a map.
	// A key is in its slot or in the map, never both.
	type slot struct {
		k    K
		q    queue
		live bool
	}
	// At most 1,024 slots (24 KB): a slot is touched at a call and at its
	// return, at random, so a larger table misses the cache on nearly
	// every message, and few calls are open at once.
	size := 64
	for size < len(msgs) && size < 1<<10 {
		size <<= 1
	}
	slots := grab[slot](&s.ar, size)
	at := func(k K) *slot { return &slots[(hash(k)*0x9E3779B97F4A7C15)>>32&uint64(size-1)] }
	open := make(map[K]queue)
	// link[i] is the call queued after call i, set only when one is
	// (queues of one call, the usual case, touch none of it).
	var link []int32
	enqueue := func(tail, i int32) {
		if link == nil {
			link = grabDirty[int32](&s.ar, len(msgs)) // link[i] is set before it is read
		}
		link[tail] = i
	}
	pq := pairQueue{ar: &s.ar}
	lead, bounded := sp.lead, sp.bounded || sp.guess
	prevT := int64(math.MinInt64)
	var done pairKey // the last paired (with guess)
	paired := false
	n := len(msgs)
	for j := 0; j < n; j++ {
		i := int32(j)
		if order != nil {
			i = order[j]
		}
		m := &msgs[i]
		var x pairKey
		have := m.Kind == trace.KindCall || m.Kind == trace.KindReturn
		if have {
			x = pairKey{s.pairingKey(m), int32(j), m.Kind}
		} else {
			none++
		}
		if sp.guess {
			t := m.Time()
			if t < prevT {
				return none, false
			}
			prevT = t
			if have {
				d, fits := s.keyLead(m)
				if !fits || paired && x.before(&done) {
					return none, false
				}
				lead = min(lead, d)
			}
		}
		// What no later message can come before: x directly when it is
		// (the usual case), else the queue's head.
		last, bound := j+1 == n, int64(math.MinInt64)
		if !last && bounded {
			nx := int32(j + 1)
			if order != nil {
				nx = order[j+1]
			}
			bound = addSat(msgs[nx].Time(), lead)
		}
		for {
			var o pairKey
			if have && (len(pq.h) == 0 || x.before(&pq.h[0])) {
				if !last && x.k >= bound {
					break
				}
				o, have = x, false
			} else if len(pq.h) > 0 && (last || pq.h[0].k < bound) {
				o = pq.pop()
			} else {
				break
			}
			done, paired = o, true
			i := o.j
			if order != nil {
				i = order[i]
			}
			m := &msgs[i]
			switch o.kind {
			case trace.KindCall:
				k := mk(m.Src, m.Dst, m.Call)
				sl := at(k)
				if sl.live && sl.k == k {
					enqueue(sl.q.tail, i)
					sl.q.tail = i
					continue
				}
				var q queue
				ok := false
				if len(open) > 0 {
					q, ok = open[k]
				}
				if ok {
					enqueue(q.tail, i)
					open[k] = queue{q.head, i}
				} else if !sl.live {
					*sl = slot{k, queue{i, i}, true}
				} else {
					open[k] = queue{i, i}
				}
			case trace.KindReturn:
				k := mk(m.Dst, m.Src, m.Call)
				if sl := at(k); sl.live && sl.k == k {
					head := sl.q.head
					if head != sl.q.tail {
						sl.q.head = link[head]
					} else {
						sl.live = false
					}
					s.addCall(head, i)
					continue
				}
				q, ok := open[k]
				if !ok {
					s.unpaired++
					continue
				}
				if q.head != q.tail {
					open[k] = queue{link[q.head], q.tail}
				} else {
					delete(open, k)
				}
				s.addCall(q.head, i)
			}
		}
		if have {
			pq.push(x)
		}
	}
	count := func(q queue) {
		for j := q.head; ; j = link[j] {
			s.unpaired++
			if j == q.tail {
				break
			}
		}
	}
	for _, q := range open {
		count(q)
	}
	for _, sl := range slots {
		if sl.live {
			count(sl.q)
		}
	}
	return none, true
}

// addSat is a+b, saturated at the ends of int64.
func addSat(a, b int64) int64 {
	c := a + b
	if (c > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return c
}

// timeOrder returns message indices by Time (stable), or nil when the
// messages are in that order already, and the lead of pairing keys over
// times: the least keyLead of a call or return message (not bounded when
// one overflows).
func (s *state) timeOrder() (order []int32, sp pairSpec) {
	msgs := s.msgs
	sorted := true
	sp = pairSpec{lead: math.MaxInt64, bounded: true}
	prev := int64(math.MinInt64)
	for i := range msgs {
		m := &msgs[i]
		t := m.Time()
		if t < prev {
			sorted = false
		}
		prev = t
		if m.Kind == trace.KindCall || m.Kind == trace.KindReturn {
			d, ok := s.keyLead(m)
			sp.bounded = sp.bounded && ok
			sp.lead = min(sp.lead, d)
		}
	}
	if sorted {
		return nil, sp
	}
	order = grabDirty[int32](&s.ar, len(msgs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmp.Compare(msgs[a].Time(), msgs[b].Time())
	})
	return order, sp
}

func (s *state) addCall(ci, ri int32) {
	c, r := &s.msgs[ci], &s.msgs[ri]
	k := call{caller: c.Src, callee: c.Dst}
	if s.opt.Time == TimeSend {
		k.cs, k.rd = c.Time(), r.Time()
		k.ca, k.cr = k.cs, k.rd
	} else {
		k.cs, k.ca = either(c.Send, c.Recv), either(c.Recv, c.Send)
		k.rd, k.cr = either(r.Send, r.Recv), either(r.Recv, r.Send)
	}
	s.noteActors(len(s.calls), c)
	s.calls = append(s.calls, k)
	if !s.opt.NoInstances {
		s.pairs = append(s.pairs, msgPair{ci, ri})
	}
}

func either(a, b int64) int64 {
	if a != trace.Unknown {
		return a
	}
	return b
}

// end is one side of a connection: a node and its endpoint.
type end uint64

func mkEnd(n trace.NodeID, e trace.EndpointID) end {
	return end(uint64(uint32(n))<<32 | uint64(uint32(e)))
}
func (e end) node() trace.NodeID   { return trace.NodeID(uint32(e >> 32)) }
func (e end) ep() trace.EndpointID { return trace.EndpointID(uint32(e)) }

type conn struct {
	ends   [2]end // ends[0] < ends[1]
	callee int    // index into ends
	first  int32  // earliest message
}

// epClass is what an endpoint's text says about its role.
type epClass struct {
	port      int  // −1 when not an ip:port
	ephemeral bool // an ephemeral port, "*", or an unnamed Unix socket
}

func classify(s string) epClass {
	if p, ok := strings.CutPrefix(s, "unix:"); ok {
		return epClass{port: -1, ephemeral: p == "" || p == "@"}
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return epClass{port: -1}
	}
	p := s[i+1:]
	if p == "*" {
		return epClass{port: -1, ephemeral: true}
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return epClass{port: -1}
	}
	return epClass{port: n, ephemeral: n >= 32768}
}

// pairByConnection is step 1 for messages without kind=: it derives calls
// and returns from the roles of the two ends of each connection.
func (s *state) pairByConnection(order []int32, n int) {
	msgs := s.msgs
	if order == nil {
		order = grab[int32](&s.ar, len(msgs))
		for i := range order {
			order[i] = int32(i)
		}
	}
	type connKey struct{ a, b end }
	connIdx := make(map[connKey]int32)
	var conns []conn
	noEP := 0
	connOf := grab[int32](&s.ar, len(msgs))
	for _, i := range order {
		m := &msgs[i]
		if m.Kind != trace.KindNone {
			continue
		}
		if m.SrcEP == trace.NoEndpoint || m.DstEP == trace.NoEndpoint {
			noEP++
			connOf[i] = -1
			continue
		}
		a, b := mkEnd(m.Src, m.SrcEP), mkEnd(m.Dst, m.DstEP)
		if b < a {
			a, b = b, a
		}
		k := connKey{a, b}
		ci, ok := connIdx[k]
		if !ok {
			ci = int32(len(conns))
			connIdx[k] = ci
			conns = append(conns, conn{ends: [2]end{a, b}, first: i})
		}
		connOf[i] = ci
	}
	s.unpaired += noEP
	if noEP > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf("%d messages have neither kind= nor both endpoints; they cannot be paired", noEP))
	}
	if len(conns) == 0 {
		return
	}
	// Roles: (a) ephemeral port, (b) fan-in, (c) well-known port, (d) first receiver.
	perEnd := make(map[end]int32, 2*len(conns))
	for _, c := range conns {
		perEnd[c.ends[0]]++
		perEnd[c.ends[1]]++
	}
	classes := make(map[trace.EndpointID]epClass)
	class := func(e end) epClass {
		c, ok := classes[e.ep()]
		if !ok {
			c = classify(s.t.EndpointName(e.ep()))
			classes[e.ep()] = c
		}
		return c
	}
	var byRule [4]int
	for ci := range conns {
		c := &conns[ci]
		x, y := class(c.ends[0]), class(c.ends[1])
		fx, fy := perEnd[c.ends[0]], perEnd[c.ends[1]]
		switch {
		case x.ephemeral != y.ephemeral:
			c.callee = b2i(x.ephemeral)
			byRule[0]++
		case fx != fy:
			c.callee = b2i(fy > fx)
			byRule[1]++
		case (x.port >= 0 && x.port < 1024) != (y.port >= 0 && y.port < 1024):
			c.callee = b2i(y.port >= 0 && y.port < 1024)
			byRule[2]++
		default:
			f := &msgs[c.first]
			c.callee = b2i(mkEnd(f.Dst, f.DstEP) == c.ends[1])
			byRule[3]++
		}
	}
	if byRule[3] > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf("%d of %d connections: caller and callee told apart only by who sent first", byRule[3], len(conns)))
	}
	// Order each connection's messages on the callee's clock (call
	// arrivals, return departures) and pair by alternation.
	type item struct {
		conn int32
		msg  int32
		at   int64
	}
	items := grab[item](&s.ar, n-noEP)[:0]
	for _, i := range order {
		m := &msgs[i]
		if m.Kind != trace.KindNone || connOf[i] < 0 {
			continue
		}
		c := &conns[connOf[i]]
		at := m.Time()
		if s.opt.Time == TimeLocal {
			if mkEnd(m.Dst, m.DstEP) == c.ends[c.callee] {
				at = either(m.Recv, m.Send)
			} else {
				at = either(m.Send, m.Recv)
			}
		}
		items = append(items, item{connOf[i], i, at})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if a.conn != b.conn {
			return int(a.conn - b.conn)
		}
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	var fifo []int32
	for j := 0; j < len(items); {
		ci := items[j].conn
		c := &conns[ci]
		fifo = fifo[:0]
		head := 0
		for ; j < len(items) && items[j].conn == ci; j++ {
			i := items[j].msg
			m := &msgs[i]
			if mkEnd(m.Dst, m.DstEP) == c.ends[c.callee] {
				fifo = append(fifo, i)
				continue
			}
			if head == len(fifo) {
				s.unpaired++
				continue
			}
			s.addCall(fifo[head], i)
			head++
		}
		s.unpaired += len(fifo) - head
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
