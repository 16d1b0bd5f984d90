package linking

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"wap5/trace"
)

// unixClientTrace is a trace where a unix socket decides a node's client
// status: node c calls s from ephemeral ports (each meets s's port only),
// and c's unix socket meets three peers on node h (fixed, were it not a
// unix socket's: c would be a server).
func unixClientTrace() *trace.Trace {
	tr := trace.New()
	c, s, h := tr.Node("c"), tr.Node("s"), tr.Node("h")
	srv, sock := tr.Endpoint("10.1.0.1:80"), tr.Endpoint("unix:/run/c.sock")
	add := func(at int64, src, dst trace.NodeID, sep, dep trace.EndpointID, kind trace.Kind) {
		tr.Add(trace.Message{Send: at, Recv: at + 1e6, Src: src, Dst: dst, SrcEP: sep, DstEP: dep, Kind: kind,
			ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
	}
	for i := range 40 {
		at := int64(i) * 1e9
		ep := tr.Endpoint(fmt.Sprintf("10.0.0.1:%d", 40000+i))
		add(at, c, s, ep, srv, trace.KindCall)
		add(at+5e6, s, c, srv, ep, trace.KindReturn)
		peer := tr.Endpoint(fmt.Sprintf("unix:@%d", i%3))
		add(at+2e8, h, c, peer, sock, trace.KindCall)
		add(at+3e8, c, h, sock, peer, trace.KindReturn)
	}
	return tr
}

// TestLinkKindNames: a binary or text trace read with its endpoints named
// by kind alone (trace.ReadFileKindNames) has the same clients and links to the
// same result as read whole, for both methods, where NamesUnread; the
// crafted trace's client is one only because its unix socket is known as
// one.
func TestLinkKindNames(t *testing.T) {
	dir := t.TempDir()
	rec, err := trace.ReadFile(filepath.Join("testdata", "recorded", "link-concurrent-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tr     *trace.Trace
		client string // a node that must be a client ("": none checked)
	}{
		{"unix client", unixClientTrace(), "c"},
		{"recorded", rec, ""},
	} {
		for _, binary := range []bool{true, false} {
			p := filepath.Join(dir, fmt.Sprint("t-", binary))
			if err := trace.WriteFile(p, tc.tr, binary); err != nil {
				t.Fatal(err)
			}
			for _, o := range []Options{{NoInstances: true}, {Method: MethodWAP5, NoInstances: true},
				{NoInstances: true, Lean: true, DropMessages: true}} {
				if !NamesUnread(o) {
					t.Fatalf("%+v: names read", o)
				}
				want, err := trace.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				got, release, err := trace.ReadFileKindNames(p)
				if err != nil {
					t.Fatal(err)
				}
				wc, gc := Clients(want, 3), Clients(got, 3)
				if !reflect.DeepEqual(gc, wc) {
					t.Errorf("%s, binary %v: clients %v, want %v", tc.name, binary, gc, wc)
				}
				if tc.client != "" && !gc[got.Node(tc.client)] {
					t.Errorf("%s, binary %v: %s is not a client", tc.name, binary, tc.client)
				}
				wr, err := Link(want, o)
				if err != nil {
					t.Fatal(err)
				}
				gr, err := Link(got, o)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gr, wr) {
					t.Errorf("%s, binary %v, %+v: results differ", tc.name, binary, o)
				}
				release()
			}
		}
	}
	if NamesUnread(Options{AggregateClients: true}) {
		t.Error("names unread with clients aggregated")
	}
}
