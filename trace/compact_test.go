package trace

import "testing"

func TestCompactEndpoints(t *testing.T) {
	tr := New()
	for i, ep := range []string{"a:1", "b:2", "c:3", "d:4"} {
		tr.Add(Message{Send: int64(i), Recv: int64(i), Src: tr.Node("x"), Dst: tr.Node("y"), SrcEP: tr.Endpoint(ep), DstEP: tr.Endpoint("s:80")})
	}
	keep := tr.Messages[2:]
	tr.CompactEndpoints(keep)
	if len(tr.Endpoints) != 4 { // "-", c:3, s:80, d:4
		t.Fatalf("endpoints %v", tr.Endpoints)
	}
	if got := tr.EndpointName(keep[0].SrcEP) + " " + tr.EndpointName(keep[1].DstEP); got != "c:3 s:80" {
		t.Errorf("remapped names %q", got)
	}
	if id := tr.Endpoint("s:80"); id != keep[0].DstEP {
		t.Errorf("interning after compaction gave %d, want %d", id, keep[0].DstEP)
	}
	if id := tr.Endpoint("new:1"); int(id) != len(tr.Endpoints)-1 {
		t.Errorf("new endpoint id %d", id)
	}
}
