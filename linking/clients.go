package linking

import (
	"strings"

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
// allocation per endpoint) cost more than the scan.
func FixedEndpoints(t *trace.Trace, peers int) []bool {
	fixed := make([]bool, len(t.Endpoints))
	k := max(peers-1, 0)
	if k > fixedSlots {
		return fixedEndpointsLists(t, peers, fixed)
	}
	var slots []trace.EndpointID
	var n []uint8
	if k > 0 {
		slots = make([]trace.EndpointID, k*len(t.Endpoints))
		n = make([]uint8, len(t.Endpoints))
	}
	note := func(a, b trace.EndpointID) {
		if a == trace.NoEndpoint || b == trace.NoEndpoint || fixed[a] {
			return
		}
		if k == 0 { // (peers ≤ 1: the first peer makes it fixed)
			fixed[a] = true
			return
		}
		seen := slots[k*int(a) : k*int(a)+int(n[a])]
		for _, x := range seen {
			if x == b {
				return
			}
		}
		if len(seen) == k {
			fixed[a] = true
			return
		}
		slots[k*int(a)+len(seen)] = b
		n[a]++
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		note(m.SrcEP, m.DstEP)
		note(m.DstEP, m.SrcEP)
	}
	return fixed
}

// fixedSlots is the most peers−1 FixedEndpoints keeps in its flat array.
const fixedSlots = 8

// fixedEndpointsLists is FixedEndpoints with a list of the peers met per
// endpoint, for many peers.
func fixedEndpointsLists(t *trace.Trace, peers int, fixed []bool) []bool {
	seen := make([][]trace.EndpointID, len(t.Endpoints))
	note := func(a, b trace.EndpointID) {
		if a == trace.NoEndpoint || b == trace.NoEndpoint || fixed[a] {
			return
		}
		for _, x := range seen[a] {
			if x == b {
				return
			}
		}
		seen[a] = append(seen[a], b)
		if len(seen[a]) >= peers {
			fixed[a], seen[a] = true, nil
		}
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		note(m.SrcEP, m.DstEP)
		note(m.DstEP, m.SrcEP)
	}
	return fixed
}

// Clients reports the client nodes: nodes with known endpoints none of which
// is fixed (a node is a server if it uses a fixed port at least once).
func Clients(t *trace.Trace, peers int) []bool {
	return clientsOf(t, FixedEndpoints(t, peers))
}

// clientsOf is Clients with the trace's fixed endpoints given.
func clientsOf(t *trace.Trace, fixed []bool) []bool {
	known := make([]bool, len(t.Nodes))
	server := make([]bool, len(t.Nodes))
	for i := range t.Messages {
		m := &t.Messages[i]
		for _, x := range [2]struct {
			n  trace.NodeID
			ep trace.EndpointID
		}{{m.Src, m.SrcEP}, {m.Dst, m.DstEP}} {
			if x.ep == trace.NoEndpoint || strings.HasPrefix(t.Endpoints[x.ep], "unix:") {
				continue
			}
			known[x.n] = true
			if fixed[x.ep] {
				server[x.n] = true
			}
		}
	}
	c := make([]bool, len(t.Nodes))
	for i := range c {
		c[i] = known[i] && !server[i]
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
	res := &Result{Fit: fit, Iterations: iters, Actors: l.actorHabits}
	restore := func() {}
	if len(l.msgs) >= lowGCMessages {
		restore = collectOften(false)
	}
	err := l.aggregate(in, res)
	restore()
	phase("end")
	if err != nil {
		return nil, err
	}
	return res, nil
}
