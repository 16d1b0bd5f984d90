package linking

import (
	"runtime/debug"
	"strings"

	"wap5/internal/hugemem"
	"wap5/internal/prefetch"
	"wap5/trace"
)

// ClientName is the name aggregated client nodes get (WAP5 §2.5).
const ClientName = "CLIENT"

// FixedEndpoints marks the endpoints that talk to at least peers distinct
// other endpoints (WAP5 §2.5: a port is fixed if it communicates with many
// other ports; the others are ephemeral).
//
//  1. Every message notes its destination as a peer of its source and its
//     source as a peer of its destination (NoEndpoint is no peer).
//  2. An endpoint keeps the distinct peers it has met, up to peers−1 of
//     them: the next distinct one makes it fixed, and it notes no more.
//
// For the usual few peers (≤ fixedSlots), the peers met are kept in one
// flat array of peers−1 slots per endpoint, with a count per endpoint: a
// large trace has millions of endpoints, and a slice each (24 bytes and an
// allocation per endpoint) cost more than the scan. The state is kept per
// endpoint of t.Messages only where the table is much larger than the
// messages: a stream's chunk over a binary trace's whole endpoint table
// (millions of ephemeral ports) would otherwise allocate it for each of
// them at every chunk.
func FixedEndpoints(t *trace.Trace, peers int) []bool {
	fixed := make([]bool, len(t.Endpoints))
	k := max(peers-1, 0)
	// at gives an endpoint its place, +1 (0: none yet), where the table is
	// much larger than the messages; else the place is the endpoint's id.
	var at map[trace.EndpointID]int32
	places := len(t.Endpoints)
	if n := len(t.Endpoints); n > 4*len(t.Messages)+1024 {
		places = min(n, 2*len(t.Messages))
		at = make(map[trace.EndpointID]int32, places)
	}
	place := func(a trace.EndpointID) int {
		if at == nil {
			return int(a)
		}
		i := at[a] - 1
		if i < 0 {
			i = int32(len(at))
			at[a] = i + 1
		}
		return int(i)
	}
	var note func(a, b trace.EndpointID)
	var rec []trace.EndpointID // (k ≤ fixedSlots)
	switch {
	case k == 0: // (peers ≤ 1: the first peer makes it fixed)
		note = func(a, b trace.EndpointID) {
			if a != trace.NoEndpoint && b != trace.NoEndpoint {
				fixed[a] = true
			}
		}
	case k <= fixedSlots:
		// One record of k+1 slots per place: the count of peers met
		// (k+1 once fixed), then the peers; a note loads one record (a
		// cache line or two) where a count, the peers and the fixed
		// mark in three arrays cost three scattered loads.
		w := k + 1
		// Outside the Go heap where large (28 MB on the CoDeeN-sized
		// trace): garbage when this returns, its pages go back (kept,
		// where the process keeps memory, for the joint linker's J2
		// arrays) instead of being faulted in afresh later.
		var scratch offHeap
		defer scratch.free()
		rec = offMake[trace.EndpointID](&scratch, w*places)
		note = func(a, b trace.EndpointID) {
			if a == trace.NoEndpoint || b == trace.NoEndpoint {
				return
			}
			i := w * place(a)
			c := int(rec[i])
			if c > k {
				return // (fixed)
			}
			for _, x := range rec[i+1 : i+1+c] {
				if x == b {
					return
				}
			}
			if c == k {
				fixed[a], rec[i] = true, trace.EndpointID(w)
				return
			}
			rec[i+1+c] = b
			rec[i] = trace.EndpointID(c + 1)
		}
	default: // many peers: a list of the peers met per endpoint
		seen := make([][]trace.EndpointID, places)
		note = func(a, b trace.EndpointID) {
			if a == trace.NoEndpoint || b == trace.NoEndpoint || fixed[a] {
				return
			}
			i := place(a)
			for _, x := range seen[i] {
				if x == b {
					return
				}
			}
			seen[i] = append(seen[i], b)
			if len(seen[i]) >= peers {
				fixed[a], seen[i] = true, nil
			}
		}
	}
	// (Where the places are the endpoints' ids, the records of the
	// message fixedAhead on are asked for first: they are scattered over
	// tens of MB on a large trace.)
	ahead := rec != nil && at == nil
	msgs := t.Messages
	for i := range msgs {
		if a := i + fixedAhead; ahead && a < len(msgs) {
			m := &msgs[a]
			prefetch.At(rec, int32(m.SrcEP)*int32(k+1))
			prefetch.At(rec, int32(m.DstEP)*int32(k+1))
		}
		m := &msgs[i]
		note(m.SrcEP, m.DstEP)
		note(m.DstEP, m.SrcEP)
	}
	return fixed
}

// fixedAhead is how many messages ahead FixedEndpoints asks for the
// records it will read.
const fixedAhead = 16

// fixedSlots is the most peers−1 FixedEndpoints keeps in its flat array.
const fixedSlots = 8

// Clients reports the client nodes: nodes with known endpoints none of which
// is fixed (a node is a server if it uses a fixed port at least once).
func Clients(t *trace.Trace, peers int) []bool {
	return clientsOf(t, FixedEndpoints(t, peers))
}

// clientsOf is Clients with the trace's fixed endpoints given.
func clientsOf(t *trace.Trace, fixed []bool) []bool {
	ct := newClientTally(t, fixed)
	for i := range t.Messages {
		ct.note(&t.Messages[i])
	}
	return ct.clients()
}

// clientTally is clientsOf over messages given one at a time (the joint
// linker's J2 notes them as it copies them): the nodes with a known
// endpoint, and those that use a fixed one.
type clientTally struct {
	known, server []bool
	fixed         []bool
	eps           []string
}

func newClientTally(t *trace.Trace, fixed []bool) *clientTally {
	return &clientTally{known: make([]bool, len(t.Nodes)), server: make([]bool, len(t.Nodes)), fixed: fixed, eps: t.Endpoints}
}

func (ct *clientTally) note(m *trace.Message) {
	ct.noteEP(m.Src, m.SrcEP)
	ct.noteEP(m.Dst, m.DstEP)
}

func (ct *clientTally) noteEP(n trace.NodeID, ep trace.EndpointID) {
	if ep == trace.NoEndpoint || ct.known[n] && (ct.server[n] || !ct.fixed[ep]) {
		return // (nothing to learn: the endpoint's name is not read)
	}
	if strings.HasPrefix(ct.eps[ep], "unix:") {
		return
	}
	ct.known[n] = true
	if ct.fixed[ep] {
		ct.server[n] = true
	}
}

// clients is the client nodes: known, and not servers.
func (ct *clientTally) clients() []bool {
	c := make([]bool, len(ct.known))
	for i := range c {
		c[i] = ct.known[i] && !ct.server[i]
	}
	return c
}

// AggregateEndpoint is an endpoint's name after client aggregation: an
// ephemeral port becomes "*".
func AggregateEndpoint(name string, fixed bool) string {
	if fixed || name == "-" || strings.HasPrefix(name, "unix:") {
		return name
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		return name[:i+1] + "*"
	}
	return name
}

// beforeAggregate, when set (tests only), sees the linker and its
// instances before the aggregation.
var beforeAggregate func(l *linker, in *instances)

// run links the whole trace (or chunk) with the chosen method.
func (l *linker) run() (*Result, error) {
	var in *instances
	var fit Fit
	var iters int
	if l.o.Method == MethodWAP5 {
		in, fit, iters = l.runWAP5()
	} else {
		in, fit, iters = l.runJoint()
	}
	phase("steps 4-5 aggregate")
	// The aggregation's memory is the heap's: what the steps gave back
	// and is kept goes back to the system (hugemem.Keep).
	hugemem.Trim()
	res := &Result{Fit: fit, Iterations: iters, Actors: l.actorHabits}
	restore := func() {}
	if l.count() >= lowGCMessages {
		restore = collectOften(false)
	}
	if beforeAggregate != nil {
		beforeAggregate(l, in) // tests: time the aggregation alone
	}
	err := l.aggregate(in, res)
	restore()
	if l.o.Method == MethodWAP5 {
		l.keepMem.free() // (step 3's instances: newInstances)
		hugemem.Trim()   // (what follows is in the heap)
	}
	// Options.Lean, WAP5: the messages again, in place, once the
	// aggregation's arrays are given back (they are garbage in the heap,
	// and the messages' second half comes back in fresh pages), or not
	// at all (DropMessages).
	if l.hot != nil {
		l.hot, l.kinds = nil, nil
		l.keepMem.free()
	}
	if l.tm != nil {
		if !l.remakes() {
			l.tm, l.lean = nil, nil
		} else {
			if l.count() >= lowGCMessages {
				debug.FreeOSMemory()
			}
			l.unpackMessages()
		}
	}
	phase("end")
	if err != nil {
		return nil, err
	}
	return res, nil
}
