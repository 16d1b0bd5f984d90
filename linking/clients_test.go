package linking

import (
	"fmt"
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
