package reconcile

import (
	"bytes"
	"cmp"
	"slices"
	"unsafe"

	"wap5/trace"
)

// Step 9's canonical output: an order and a numbering that depend only on
// the messages, not on the order the matcher decided them in.
//
// Order: by time (send time, else receive time); messages of the same
// time by their content (cmpTie): send time, receive time, source node
// name, source endpoint name, destination node name, destination endpoint
// name, bytes, kind, sending actor's name, receiving actor's name (names
// compared byte-wise; an unknown time before any known one, a missing
// actor before any named one). Messages equal in all of these stay in
// the order they were decided (they differ at most in which call id a
// return carries).
//
// Numbering: the matcher names nodes, actors and endpoints into tables of
// its own as it decides (namer: internal ids); as the messages are
// written, in the order above, each node, endpoint and actor gets the next
// id of the output's table at its first use — per message the source
// before the destination. Nodes, endpoints and actors that the inputs
// named but no message uses (a process that never exchanged a message, a
// thread that only opened a socket) follow at the end of their table,
// sorted by name. So a trace's tables are a function of its messages and
// of the set of names its inputs hold, and ids are positions in them as
// the binary format has always had it.
//
// Endpoint names are made only when the output's tables are written: the
// output's endpoint table first holds internal ids (outEP), named in one
// go when a sink needs the names (nameEndpoints).

// outCanon renumbers messages from the namer's ids to the output trace's.
type outCanon struct {
	n *namer
	t *trace.Trace // the output
	// node, ep: output id + 1 of each internal node and endpoint (0: not
	// written yet); act: of each internal actor, by internal node.
	node []trace.NodeID
	ep   []trace.EndpointID
	act  [][]int32
	// packed: the output id of each packed IP endpoint (ids < 0), by key;
	// recent: the last ones looked up, by a hash of the id (a connection's
	// messages come close together: most lookups stop here).
	packed epTable
	recent [recentSize]struct{ id, out trace.EndpointID }
	// outEP: the internal id of each output endpoint (outEP[0] is "-");
	// the output's Endpoints hold the names of outEP[:len(t.Endpoints)].
	outEP []trace.EndpointID
	arena []byte
	// a, b: scratch for endpoint names compared (cmpTie)
	a, b []byte
}

func newOutCanon(n *namer, t *trace.Trace) *outCanon {
	return &outCanon{n: n, t: t, outEP: []trace.EndpointID{trace.NoEndpoint}}
}

// cmpTie orders two messages of the same time by content (internal ids).
func (c *outCanon) cmpTie(x, y *trace.Message) int {
	if r := cmp.Compare(x.Send, y.Send); r != 0 {
		return r
	}
	if r := cmp.Compare(x.Recv, y.Recv); r != 0 {
		return r
	}
	if r := c.cmpNode(x.Src, y.Src); r != 0 {
		return r
	}
	if r := c.cmpEndpoint(x.SrcEP, y.SrcEP); r != 0 {
		return r
	}
	if r := c.cmpNode(x.Dst, y.Dst); r != 0 {
		return r
	}
	if r := c.cmpEndpoint(x.DstEP, y.DstEP); r != 0 {
		return r
	}
	if r := cmp.Compare(x.Bytes, y.Bytes); r != 0 {
		return r
	}
	if r := cmp.Compare(x.Kind, y.Kind); r != 0 {
		return r
	}
	if r := c.cmpActor(x.Src, x.SrcActor, y.Src, y.SrcActor); r != 0 {
		return r
	}
	return c.cmpActor(x.Dst, x.DstActor, y.Dst, y.DstActor)
}

func (c *outCanon) cmpNode(a, b trace.NodeID) int {
	if a == b {
		return 0
	}
	return cmp.Compare(c.n.t.NodeName(a), c.n.t.NodeName(b))
}

func (c *outCanon) cmpEndpoint(a, b trace.EndpointID) int {
	if a == b {
		return 0
	}
	c.a = c.n.appendEndpoint(c.a[:0], a)
	c.b = c.n.appendEndpoint(c.b[:0], b)
	return bytes.Compare(c.a, c.b)
}

func (c *outCanon) cmpActor(na trace.NodeID, a trace.ActorID, nb trace.NodeID, b trace.ActorID) int {
	switch {
	case a == trace.NoActor || b == trace.NoActor:
		return cmp.Compare(a, b) // a missing actor first
	case na == nb && a == b:
		return 0
	}
	return cmp.Compare(c.n.t.ActorName(na, a), c.n.t.ActorName(nb, b))
}

// tieCut is where the last run of messages of one time begins in msgs
// (which are in time order, but for late ones): more of that time may
// still come, so the run is not settled yet.
func tieCut(msgs []trace.Message) int {
	i := len(msgs)
	if i == 0 {
		return 0
	}
	t := msgs[i-1].Time()
	for i > 0 && msgs[i-1].Time() == t {
		i--
	}
	return i
}

// sortTies puts every run of messages of one time in msgs in canonical
// order (stable: equal content stays in decision order).
func (c *outCanon) sortTies(msgs []trace.Message) {
	for i := 0; i < len(msgs); {
		t := msgs[i].Time()
		j := i + 1
		for j < len(msgs) && msgs[j].Time() == t {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(msgs[i:j], func(x, y trace.Message) int { return c.cmpTie(&x, &y) })
		}
		i = j
	}
}

// remap renumbers settled messages (in output order) into the output's
// tables, giving each new node, endpoint and actor the next id. The
// table slots of packed endpoints a few messages ahead are fetched while
// it works (most of them are met for the first time: a cache miss each,
// overlapped this way).
func (c *outCanon) remap(msgs []trace.Message) {
	const ahead = 8
	for i := range min(ahead, len(msgs)) {
		c.prefetch(&msgs[i])
	}
	for i := range msgs {
		if i+ahead < len(msgs) {
			// prefetch's test in place: most endpoints were met lately
			if y := &msgs[i+ahead]; y.SrcEP < 0 && c.recent[recentSlot(y.SrcEP)].id != y.SrcEP ||
				y.DstEP < 0 && c.recent[recentSlot(y.DstEP)].id != y.DstEP {
				c.prefetch(y)
			}
		}
		x := &msgs[i]
		src, dst := x.Src, x.Dst
		// Ids renumbered already are looked up here (the methods are
		// over the inlining budget); the methods do the rest.
		if uint(src) < uint(len(c.node)) && c.node[src] > 0 {
			x.Src = c.node[src] - 1
		} else {
			x.Src = c.nodeOf(src)
		}
		if uint(dst) < uint(len(c.node)) && c.node[dst] > 0 {
			x.Dst = c.node[dst] - 1
		} else {
			x.Dst = c.nodeOf(dst)
		}
		// endpoints: packed ones met lately (recent), others renumbered
		// already (ep; id 0 is never set there)
		if id := x.SrcEP; id < 0 && c.recent[recentSlot(id)].id == id {
			x.SrcEP = c.recent[recentSlot(id)].out
		} else if uint(id) < uint(len(c.ep)) && c.ep[id] > 0 {
			x.SrcEP = c.ep[id]
		} else {
			x.SrcEP = c.epOf(id)
		}
		if id := x.DstEP; id < 0 && c.recent[recentSlot(id)].id == id {
			x.DstEP = c.recent[recentSlot(id)].out
		} else if uint(id) < uint(len(c.ep)) && c.ep[id] > 0 {
			x.DstEP = c.ep[id]
		} else {
			x.DstEP = c.epOf(id)
		}
		if a := x.SrcActor; a != trace.NoActor {
			if uint(src) < uint(len(c.act)) && int(a) < len(c.act[src]) && c.act[src][a] > 0 {
				x.SrcActor = trace.ActorID(c.act[src][a] - 1)
			} else {
				x.SrcActor = c.actorOf(src, x.Src, a)
			}
		}
		if a := x.DstActor; a != trace.NoActor {
			if uint(dst) < uint(len(c.act)) && int(a) < len(c.act[dst]) && c.act[dst][a] > 0 {
				x.DstActor = trace.ActorID(c.act[dst][a] - 1)
			} else {
				x.DstActor = c.actorOf(dst, x.Dst, a)
			}
		}
	}
}

const recentSize = 1024

func recentSlot(id trace.EndpointID) uint32 { return uint32(id) * 0x9e3779b1 >> 22 }

func (c *outCanon) prefetch(x *trace.Message) {
	if id := x.SrcEP; id < 0 && c.recent[recentSlot(id)].id != id {
		c.packed.prefetch(packedKey(id))
	}
	if id := x.DstEP; id < 0 && c.recent[recentSlot(id)].id != id {
		c.packed.prefetch(packedKey(id))
	}
}

func (c *outCanon) nodeOf(id trace.NodeID) trace.NodeID {
	if int(id) < len(c.node) && c.node[id] > 0 {
		return c.node[id] - 1
	}
	if n := len(c.n.t.Nodes); len(c.node) < n {
		c.node = append(c.node, make([]trace.NodeID, n-len(c.node))...)
	}
	in := c.n.t.Nodes[id]
	o := c.t.Node(in.Name)
	c.t.Nodes[o].Untraced = c.t.Nodes[o].Untraced || in.Untraced
	c.node[id] = o + 1
	return o
}

func (c *outCanon) epOf(id trace.EndpointID) trace.EndpointID {
	if id == trace.NoEndpoint {
		return trace.NoEndpoint
	}
	if id < 0 {
		r := &c.recent[recentSlot(id)]
		if r.id == id {
			return r.out
		}
		k := packedKey(id)
		o, ok := c.packed.get(k)
		if !ok {
			o = trace.EndpointID(len(c.outEP))
			c.outEP = append(c.outEP, id)
			c.packed.put(k, o)
		}
		r.id, r.out = id, o
		return o
	}
	if int(id) >= len(c.ep) {
		c.ep = slices.Grow(c.ep, c.n.endpointCount()-len(c.ep))[:c.n.endpointCount()]
	}
	if o := c.ep[id]; o > 0 {
		return o
	}
	o := trace.EndpointID(len(c.outEP))
	c.outEP = append(c.outEP, id)
	c.ep[id] = o
	return o
}

func (c *outCanon) actorOf(in, out trace.NodeID, a trace.ActorID) trace.ActorID {
	if int(in) >= len(c.act) {
		c.act = append(c.act, make([][]int32, int(in)+1-len(c.act))...)
	}
	tab := c.act[in]
	if int(a) < len(tab) && tab[a] > 0 {
		return trace.ActorID(tab[a] - 1)
	}
	if int(a) >= len(tab) {
		tab = append(tab, make([]int32, int(a)+1-len(tab))...)
		c.act[in] = tab
	}
	o := c.t.Actor(out, c.n.t.ActorName(in, a))
	tab[a] = int32(o) + 1
	return o
}

// finishTables appends what no message used to the output's tables, each
// sorted by name (a set the inputs decide, whatever the order the matcher
// named it in), and with name names every endpoint in the output's
// Endpoints (else they stay for a LateNames sink to ask: Len, AppendName).
func (c *outCanon) finishTables(name bool) {
	nodes := c.n.t.Nodes
	var rest []trace.NodeID
	for id := range nodes {
		if id >= len(c.node) || c.node[id] == 0 {
			rest = append(rest, trace.NodeID(id))
		}
	}
	slices.SortFunc(rest, func(a, b trace.NodeID) int { return cmp.Compare(nodes[a].Name, nodes[b].Name) })
	for _, id := range rest {
		c.nodeOf(id)
	}
	var eps []trace.EndpointID
	for id := 1; id < c.n.endpointCount(); id++ {
		if id >= len(c.ep) || c.ep[id] == 0 {
			eps = append(eps, trace.EndpointID(id))
		}
	}
	if len(eps) > 0 {
		names := make([]string, c.n.endpointCount())
		for _, id := range eps {
			names[id] = string(c.n.appendEndpoint(nil, id))
		}
		slices.SortFunc(eps, func(a, b trace.EndpointID) int { return cmp.Compare(names[a], names[b]) })
		for _, id := range eps {
			c.epOf(id)
		}
	}
	for in := range nodes {
		tab := c.n.t.Actors
		if in >= len(tab) || len(tab[in]) == 0 {
			continue
		}
		var acts []trace.ActorID
		for a := 1; a <= len(tab[in]); a++ {
			if in >= len(c.act) || a >= len(c.act[in]) || c.act[in][a] == 0 {
				acts = append(acts, trace.ActorID(a))
			}
		}
		slices.SortFunc(acts, func(a, b trace.ActorID) int { return cmp.Compare(tab[in][a-1], tab[in][b-1]) })
		out := c.nodeOf(trace.NodeID(in))
		for _, a := range acts {
			c.actorOf(trace.NodeID(in), out, a)
		}
	}
	if name {
		c.nameEndpoints()
	}
}

// Len is the number of the output's endpoints ("-" included): outCanon is
// the trace.EndpointNames of a LateNames sink.
func (c *outCanon) Len() int { return len(c.outEP) }

// AppendName appends the name of output endpoint id.
func (c *outCanon) AppendName(b []byte, id trace.EndpointID) []byte {
	return c.n.appendEndpoint(b, c.outEP[id])
}

// nameEndpoints makes the names of the output's endpoints not named yet
// (in an arena of names: one heap object per 256 KiB of names instead of
// one per name; its bytes are never written again once a name is made of
// them).
func (c *outCanon) nameEndpoints() {
	t := c.t
	if len(t.Endpoints) == 0 {
		t.Endpoints = append(t.Endpoints, "-")
	}
	if len(t.Endpoints) >= len(c.outEP) {
		return
	}
	t.Endpoints = slices.Grow(t.Endpoints, len(c.outEP)-len(t.Endpoints))
	const chunk = 256 << 10
	for _, id := range c.outEP[len(t.Endpoints):] {
		if id > 0 {
			if k := c.n.eps[id]; k&epStrBit != 0 {
				t.Endpoints = append(t.Endpoints, c.n.strs[k&^epStrBit])
				continue
			}
		}
		if cap(c.arena)-len(c.arena) < 64 { // the longest: [v6]:port, 47 bytes
			c.arena = make([]byte, 0, chunk)
		}
		start := len(c.arena)
		c.arena = c.n.appendEndpoint(c.arena, id)
		t.Endpoints = append(t.Endpoints, unsafe.String(&c.arena[start], len(c.arena)-start))
	}
}
