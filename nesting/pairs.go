package nesting

import (
	"fmt"
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
	s.ar.reserve(scratchWords(n))
	scratch := s.ar.mark()
	defer s.ar.release(scratch)
	order := s.timeOrder()
	none := 0
	// 1a. Messages marked call/return, matched on (caller, callee, call id);
	// open calls with the same key queue up and returns take the earliest.
	po := s.pairingOrder(order)
	if len(s.t.Nodes) <= 1<<16 {
		none = pairKinds(s, po, func(a, b trace.NodeID, id int32) uint64 {
			return uint64(a)<<48 | uint64(b)<<32 | uint64(uint32(id))
		}, func(k uint64) uint64 { return k })
	} else {
		type key struct {
			a, b trace.NodeID
			id   int32
		}
		none = pairKinds(s, po, func(a, b trace.NodeID, id int32) key { return key{a, b, id} },
			func(k key) uint64 { return uint64(k.a)<<40 ^ uint64(k.b)<<20 ^ uint64(uint32(k.id)) })
	}
	if none > 0 {
		s.pairByConnection(order, none)
	}
}

// passWords is the arena the pass takes for n messages, in words: the
// calls, their ties and message pairs (kept to the end), step 1's scratch
// (reused by the later steps, which take the ties and theirs from the
// envelopes' memory when they may: see arena.adopt) and room for what
// those take beyond it.
func passWords(n int) int { return n/2*(callWords+3+1) + scratchWords(n) }

// callWords is the words of a call; pairWords of a msgPair if kept.
const callWords = 5

func pairWords(o Options) int {
	if o.NoInstances {
		return 0
	}
	return 1
}

// scratchWords is the room for step 1's scratch (and what the later
// steps take beyond it) for n messages, in words.
func scratchWords(n int) int { return 4*n + 1<<16 }

func pairKinds[K comparable](s *state, order []pairKey, mk func(a, b trace.NodeID, id int32) K, hash func(K) uint64) (none int) {
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
	var link []int32
	for _, o := range order {
		i := o.i
		switch o.kind {
		case trace.KindCall, trace.KindReturn:
		default:
			none++
			continue
		}
		m := &msgs[i]
		switch o.kind {
		case trace.KindCall:
			if link == nil {
				link = grabDirty[int32](&s.ar, len(msgs)) // link[i] is set before it is read
			}
			k := mk(m.Src, m.Dst, m.Call)
			link[i] = -1
			sl := at(k)
			if sl.live && sl.k == k {
				link[sl.q.tail] = i
				sl.q.tail = i
				continue
			}
			var q queue
			ok := false
			if len(open) > 0 {
				q, ok = open[k]
			}
			if ok {
				link[q.tail] = i
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
				if nx := link[head]; nx >= 0 {
					sl.q.head = nx
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
			if nx := link[q.head]; nx >= 0 {
				open[k] = queue{nx, q.tail}
			} else {
				delete(open, k)
			}
			s.addCall(q.head, i)
		}
	}
	for _, q := range open {
		for j := q.head; j >= 0; j = link[j] {
			s.unpaired++
		}
	}
	for _, sl := range slots {
		for j := sl.q.head; sl.live && j >= 0; j = link[j] {
			s.unpaired++
		}
	}
	return none
}

// pairKey is a message in pairing order: its index, its key there, and
// its kind (in the padding: ties and non-RPC messages need no trip to the
// message).
type pairKey struct {
	k    int64
	i    int32
	kind trace.Kind
}

// pairingOrder orders call and return messages on the callee's clock: a
// call when it reached the callee, a return when it left it, so clock
// offsets between caller and callee cannot put a return before its call.
// With sender times only, calls are moved earlier by the skew window
// instead. Other messages keep their place in order.
func (s *state) pairingOrder(order []int32) []pairKey {
	msgs := s.msgs
	w := int64(s.opt.SkewWindow)
	type keyed = pairKey
	// order nil: the messages are in time order already.
	n := len(order)
	if order == nil {
		n = len(msgs)
	}
	ks := grabDirty[keyed](&s.ar, n)
	for j := range ks {
		i := int32(j)
		if order != nil {
			i = order[j]
		}
		m := &msgs[i]
		k := m.Time()
		switch {
		case s.opt.Time == TimeSend:
			if m.Kind == trace.KindCall {
				k -= w
			}
		case m.Kind == trace.KindCall:
			k = either(m.Recv, m.Send)
		case m.Kind == trace.KindReturn:
			k = either(m.Send, m.Recv)
		}
		ks[j] = keyed{k, i, m.Kind}
	}
	less := func(a, b keyed) bool {
		return a.k < b.k || (a.k == b.k && a.kind < b.kind) // a call before a return at the same time
	}
	// Nearly sorted (keys differ from send times by network delays): an
	// insertion sort with a budget, else a full sort.
	moves, budget := 0, 16*len(ks)+64
	for j := 1; j < len(ks) && moves <= budget; j++ {
		x := ks[j]
		k := j
		for k > 0 && less(x, ks[k-1]) && moves <= budget {
			ks[k] = ks[k-1]
			k--
			moves++
		}
		ks[k] = x
	}
	if moves > budget {
		slices.SortStableFunc(ks, func(a, b keyed) int {
			switch {
			case less(a, b):
				return -1
			case less(b, a):
				return 1
			}
			return 0
		})
	}
	return ks
}

// timeOrder returns message indices by Time (stable), or nil when the
// messages are in that order already.
func (s *state) timeOrder() []int32 {
	msgs := s.msgs
	sorted := true
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Time() < msgs[i-1].Time() {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	order := grabDirty[int32](&s.ar, len(msgs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		ta, tb := msgs[a].Time(), msgs[b].Time()
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return 0
	})
	return order
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
