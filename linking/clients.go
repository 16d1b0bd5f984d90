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
// The peers seen so far are kept per endpoint of t.Messages only: a
// stream's chunk over a binary trace's whole endpoint table (millions of
// ephemeral ports) would otherwise allocate a list head for each of them
// at every chunk.
func FixedEndpoints(t *trace.Trace, peers int) []bool {
	fixed := make([]bool, len(t.Endpoints))
	// at gives an endpoint its place in seen, +1 (0: none yet), where
	// the table is much larger than the messages; else seen is the
	// table's size and indexed directly.
	var at map[trace.EndpointID]int32
	var seen [][]trace.EndpointID
	if n := len(t.Endpoints); n > 4*len(t.Messages)+1024 {
		at = make(map[trace.EndpointID]int32, min(n, 2*len(t.Messages)))
	} else {
		seen = make([][]trace.EndpointID, n)
	}
	note := func(a, b trace.EndpointID) {
		if a == trace.NoEndpoint || b == trace.NoEndpoint || fixed[a] {
			return
		}
		i := int32(a)
		if at != nil {
			if i = at[a] - 1; i < 0 {
				i = int32(len(seen))
				at[a] = i + 1
				seen = append(seen, nil)
			}
		}
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
	fixed := FixedEndpoints(t, peers)
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
