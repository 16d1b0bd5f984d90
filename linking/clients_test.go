package linking

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"wap5/trace"
)

func TestClientAggregation(t *testing.T) {
	tr := trace.New()
	for i := 0; i < 5; i++ {
		c := fmt.Sprintf("host%d", i)
		ep := fmt.Sprintf("10.0.0.%d:%d", i+1, 40000+i)
		at := int64(i) * 1e9
		tr.Add(trace.Message{Send: at, Recv: at + 1e6, Src: tr.Node(c), Dst: tr.Node("proxy"), SrcEP: tr.Endpoint(ep),
			DstEP: tr.Endpoint("10.1.0.1:3128"), ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
		tr.Add(trace.Message{Send: at + 2e6, Recv: at + 3e6, Src: tr.Node("proxy"), Dst: tr.Node(c), SrcEP: tr.Endpoint("10.1.0.1:3128"),
			DstEP: tr.Endpoint(ep), ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
	}
	cl := Clients(tr, 3)
	for i, n := range tr.Nodes {
		if want := n.Name != "proxy"; cl[i] != want {
			t.Errorf("%s: client %v, want %v", n.Name, cl[i], want)
		}
	}
	if got := AggregateEndpoint("10.0.0.1:40000", false); got != "10.0.0.1:*" {
		t.Errorf("ephemeral endpoint → %q", got)
	}
	if got := AggregateEndpoint("10.1.0.1:3128", true); got != "10.1.0.1:3128" {
		t.Errorf("fixed endpoint → %q", got)
	}
	for _, agg := range []bool{false, true} {
		res, err := Link(tr, Options{AggregateClients: agg})
		if err != nil {
			t.Fatal(err)
		}
		want := 5
		if agg {
			want = 1
		}
		if len(res.Patterns) != want || res.Patterns[0].Count != 5/want {
			t.Errorf("aggregate=%v: %d patterns (first count %d), want %d", agg, len(res.Patterns), res.Patterns[0].Count, want)
		}
		if agg && res.Patterns[0].Root.From != ClientName {
			t.Errorf("root from %q", res.Patterns[0].Root.From)
		}
	}
}

// FixedEndpoints (flat slots for few peers, lists for many) marks exactly
// the endpoints with at least peers distinct peers, counted naively here,
// on random traces whose endpoints meet 0 to 12 peers, NoEndpoint among
// them, the same pairs repeated.
func TestFixedEndpointsPeers(t *testing.T) {
	for _, tc := range []struct {
		eps, msgs int
		seed      uint64
	}{{5, 40, 1}, {50, 400, 2}, {300, 5000, 3}, {2000, 3000, 4}} {
		tr := trace.New()
		for i := 1; i < tc.eps; i++ {
			tr.Endpoint(fmt.Sprintf("10.0.0.%d:%d", i%200, i))
		}
		rng := tc.seed
		next := func(n int) int {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			return int(rng % uint64(n))
		}
		for range tc.msgs {
			// Endpoint 0 is "-"; NoEndpoint now and then.
			a, b := trace.EndpointID(next(len(tr.Endpoints))), trace.EndpointID(next(len(tr.Endpoints)/4+1))
			if next(10) == 0 {
				b = trace.NoEndpoint
			}
			tr.Messages = append(tr.Messages, trace.Message{SrcEP: a, DstEP: b, Send: 1, Recv: 2})
		}
		peersOf := map[trace.EndpointID]map[trace.EndpointID]bool{}
		note := func(a, b trace.EndpointID) {
			if a == trace.NoEndpoint || b == trace.NoEndpoint {
				return
			}
			if peersOf[a] == nil {
				peersOf[a] = map[trace.EndpointID]bool{}
			}
			peersOf[a][b] = true
		}
		for _, m := range tr.Messages {
			note(m.SrcEP, m.DstEP)
			note(m.DstEP, m.SrcEP)
		}
		for peers := -1; peers <= 14; peers++ {
			got := FixedEndpoints(tr, peers)
			nFixed := 0
			for e := range tr.Endpoints {
				want := len(peersOf[trace.EndpointID(e)]) >= max(peers, 1)
				if got[e] != want {
					t.Fatalf("seed %d, peers %d: endpoint %d with %d distinct peers: fixed %v, want %v",
						tc.seed, peers, e, len(peersOf[trace.EndpointID(e)]), got[e], want)
				}
				if want {
					nFixed++
				}
			}
			if peers == 3 && (nFixed == 0 || nFixed == len(tr.Endpoints)) {
				t.Errorf("seed %d: %d of %d endpoints fixed at 3 peers: the trace tests nothing", tc.seed, nFixed, len(tr.Endpoints))
			}
		}
	}
}

// TestFixedEndpointsSparse: the same fixed ports whether the endpoint table
// holds only the messages' endpoints or a million more (a binary trace's
// whole table under a stream's chunk), and in the second case without a
// per-endpoint list head for the whole table (24 MB).
func TestFixedEndpointsSparse(t *testing.T) {
	for _, extra := range []int{0, 1 << 20} {
		tr := trace.New()
		for i := 0; i < extra; i++ {
			tr.Endpoints = append(tr.Endpoints, "")
		}
		srv, other := tr.Endpoint("10.1.0.1:80"), tr.Endpoint("10.1.0.2:80")
		var clients []trace.EndpointID
		for i := 0; i < 6; i++ {
			c := tr.Endpoint(fmt.Sprintf("10.0.0.%d:4000%d", i+1, i))
			clients = append(clients, c)
			tr.Add(trace.Message{Send: int64(i), Recv: int64(i) + 1, Src: tr.Node("c"), Dst: tr.Node("s"), SrcEP: c, DstEP: srv, ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
			if i < 2 {
				tr.Add(trace.Message{Send: int64(i), Recv: int64(i) + 1, Src: tr.Node("c"), Dst: tr.Node("s"), SrcEP: c, DstEP: other, ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fixed := FixedEndpoints(tr, 3)
		runtime.ReadMemStats(&after)
		if len(fixed) != len(tr.Endpoints) {
			t.Fatalf("extra %d: %d marks for %d endpoints", extra, len(fixed), len(tr.Endpoints))
		}
		for _, c := range clients {
			if fixed[c] {
				t.Errorf("extra %d: client endpoint %s fixed", extra, tr.Endpoints[c])
			}
		}
		if !fixed[srv] || fixed[other] {
			t.Errorf("extra %d: server fixed %v (want true), other %v (want false)", extra, fixed[srv], fixed[other])
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; extra > 0 && alloc > uint64(len(tr.Endpoints))+1<<20 {
			t.Errorf("extra %d: %d bytes allocated for %d endpoints", extra, alloc, len(tr.Endpoints))
		}
	}
}

// TestClientsOfOrder checks clientsOf, which reads an endpoint's name only
// where it could change its node's status, against reading every one:
// random traces whose nodes use fixed and ephemeral ports and unix
// sockets (never a client's or a server's evidence), in random order.
func TestClientsOfOrder(t *testing.T) {
	clients, servers := 0, 0
	for _, tc := range []struct {
		nodes, eps, msgs int
		unixShare        int // one endpoint in unixShare is a unix socket
		seed             int64
	}{{4, 10, 50, 3, 1}, {20, 60, 400, 2, 2}, {50, 500, 3000, 5, 3}, {8, 16, 30, 4, 4}, {30, 400, 200, 6, 5}} {
		rng := rand.New(rand.NewSource(tc.seed))
		tr := trace.New()
		for i := 0; i < tc.nodes; i++ {
			tr.Node(fmt.Sprintf("n%d", i))
		}
		for i := 0; i < tc.eps; i++ {
			if rng.Intn(tc.unixShare) == 0 {
				tr.Endpoint(fmt.Sprintf("unix:/run/s%d", i))
			} else {
				tr.Endpoint(fmt.Sprintf("10.0.%d.%d:%d", i/200, i%200, 1000+i))
			}
		}
		for i := 0; i < tc.msgs; i++ {
			ep := func() trace.EndpointID {
				if rng.Intn(8) == 0 {
					return trace.NoEndpoint
				}
				return trace.EndpointID(rng.Intn(tc.eps))
			}
			tr.Add(trace.Message{Send: int64(i), Recv: int64(i) + 1, Src: trace.NodeID(rng.Intn(tc.nodes)), Dst: trace.NodeID(rng.Intn(tc.nodes)),
				SrcEP: ep(), DstEP: ep(), ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
		}
		fixed := make([]bool, tc.eps)
		for i := range fixed {
			fixed[i] = rng.Intn(3) == 0
		}
		// Every endpoint read.
		known, server := make([]bool, tc.nodes), make([]bool, tc.nodes)
		for _, m := range tr.Messages {
			for _, x := range []struct {
				n  trace.NodeID
				ep trace.EndpointID
			}{{m.Src, m.SrcEP}, {m.Dst, m.DstEP}} {
				if x.ep == trace.NoEndpoint || strings.HasPrefix(tr.Endpoints[x.ep], "unix:") {
					continue
				}
				known[x.n] = true
				server[x.n] = server[x.n] || fixed[x.ep]
			}
		}
		got := clientsOf(tr, fixed)
		for n := range known {
			if want := known[n] && !server[n]; got[n] != want {
				t.Fatalf("seed %d: node %d: client %v, want %v", tc.seed, n, got[n], want)
			}
			if got[n] {
				clients++
			}
			if server[n] {
				servers++
			}
		}
	}
	if clients == 0 || servers == 0 {
		t.Fatalf("%d clients, %d servers: the cases test too little", clients, servers)
	}
}
