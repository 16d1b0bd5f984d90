package linking

import (
	"testing"

	"wap5/trace"
)

// TestPairByConnection: request/response alternation on one connection,
// ordered on the shared clock even when the client's clock is far off.
func TestPairByConnection(t *testing.T) {
	for _, skew := range []int64{0, 5e9, -5e9} {
		tr := trace.New()
		add := func(from, fep, to, tep string, send, recv int64) {
			if from == "client" {
				send += skew
			} else {
				recv += skew
			}
			tr.Add(trace.Message{Send: send, Recv: recv, Src: tr.Node(from), Dst: tr.Node(to), SrcEP: tr.Endpoint(fep),
				DstEP: tr.Endpoint(tep), ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
		}
		// Two RPCs on one persistent connection, one on another, and a
		// one-way message.
		add("client", "10.0.0.1:5000", "server", "10.0.0.2:80", 100, 110)
		add("server", "10.0.0.2:80", "client", "10.0.0.1:5000", 120, 130)
		add("client", "10.0.0.1:5000", "server", "10.0.0.2:80", 140, 150)
		add("server", "10.0.0.2:80", "client", "10.0.0.1:5000", 160, 170)
		add("client", "10.0.0.1:5001", "server", "10.0.0.2:80", 105, 115)
		add("server", "10.0.0.2:80", "client", "10.0.0.1:5001", 300, 310)
		add("client", "10.0.0.1:6000", "server", "10.0.0.2:99", 200, 210)
		tr.Sort()
		l := newLinker(tr, Options{}.Defaults(), nil)
		r := l.pairRPCs()
		pairs := 0
		for i, p := range r.peer {
			if p < 0 {
				continue
			}
			a, b := &tr.Messages[i], &tr.Messages[p]
			if a.SrcEP != b.DstEP || a.DstEP != b.SrcEP {
				t.Errorf("skew %d: %d paired with %d across connections", skew, i, p)
			}
			if r.role[i] == roleRequest && tr.NodeName(a.Src) != "client" {
				t.Errorf("skew %d: request %d not from the client", skew, i)
			}
			pairs++
		}
		if pairs != 6 {
			t.Errorf("skew %d: %d messages paired, want 6", skew, pairs)
		}
	}
}

// TestPairByCallID: kind=/call= win over connections.
func TestPairByCallID(t *testing.T) {
	tr := trace.New()
	add := func(from, to string, at int64, k trace.Kind, call int32) {
		tr.Add(trace.Message{Send: at, Recv: at + 1, Src: tr.Node(from), Dst: tr.Node(to), ID: trace.NoRef,
			Call: call, Kind: k, Truth: trace.NoRef})
	}
	add("a", "b", 10, trace.KindCall, 1)
	add("a", "b", 20, trace.KindCall, 2)
	add("b", "a", 30, trace.KindReturn, 2)
	add("b", "a", 40, trace.KindReturn, 1)
	l := newLinker(tr, Options{}.Defaults(), nil)
	r := l.pairRPCs()
	if r.peer[0] != 3 || r.peer[1] != 2 || r.role[0] != roleRequest || r.role[3] != roleReply {
		t.Errorf("peers %v roles %v", r.peer, r.role)
	}
	l = newLinker(tr, Options{IgnoreKinds: true}.Defaults(), nil)
	if r := l.pairRPCs(); r.peer[0] >= 0 {
		t.Errorf("IgnoreKinds: without endpoints nothing pairs, got %v", r.peer)
	}
}
