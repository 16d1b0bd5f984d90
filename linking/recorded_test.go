package linking

import (
	"strings"
	"testing"

	"wap5/trace"
)

// TestRecordedHelperPerSpan links a recorded testbed run (e2e's
// link-concurrent-1): a threaded server s2, called by clients (c) and by a
// front server (s1), makes exactly one call per request to a helper on the
// same node over a Unix socket. The helper's own request spans make no
// calls; counting calls per span by node alone mixed the two services and
// gave one span a concurrent span's helper call (id 352 of request 349 went
// to request 346, which had its own, 350). Every real request path must come
// out with its true count and no request of s2 without its helper call, and
// concurrent requests must keep their own helper calls.
func TestRecordedHelperPerSpan(t *testing.T) {
	tr, err := trace.ReadFile("testdata/recorded/link-concurrent-1.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Link(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pattern string
		count   int
	}{
		{"c>s1[s1>c]", 90},
		{"c>s1[s1>s2[s2>s2[s2>s2[s2>s1[s1>c]]]]]", 54},
		{"c>s2[s2>s2[s2>s2[s2>c]]]", 54},
		{"c>s2[s2>c]", 0}, // a request of s2 that lost its helper call
	}
	got := map[string]int{}
	for _, p := range res.Patterns {
		got[patternString(p.Root)] = p.Count
	}
	for _, tc := range tests {
		if got[tc.pattern] != tc.count {
			t.Errorf("pattern %s: count %d, want %d", tc.pattern, got[tc.pattern], tc.count)
		}
	}
	if t.Failed() {
		for s, n := range got {
			t.Logf("%5d %s", n, s)
		}
	}
	// Concurrent requests at s2 and their true helper calls (by message
	// id): two requests in flight whose helper calls have alike delays.
	// What tells them apart is the thread's own Unix connection, the one
	// the earlier requests on the same client connection used (the
	// connection tie-breaker).
	inst := map[int64]int64{} // helper call id → the request at s2 in its instance
	for _, in := range res.Instances {
		var reqs, helpers []int64
		for _, i := range in.Messages {
			m := &tr.Messages[i]
			if tr.NodeName(m.Dst) == "s2" && m.Kind == trace.KindCall {
				if tr.NodeName(m.Src) == "s2" {
					helpers = append(helpers, m.ID)
				} else {
					reqs = append(reqs, m.ID)
				}
			}
		}
		for _, h := range helpers {
			if len(reqs) == 1 {
				inst[h] = reqs[0]
			}
		}
	}
	for _, w := range []struct{ helper, req int64 }{
		{352, 349}, {350, 346}, // the counting case above
		{242, 237}, {241, 239}, // both from clients on kept-alive connections
		{269, 266}, {267, 265},
		{280, 276},
	} {
		if inst[w.helper] != w.req {
			t.Errorf("helper call id=%d: in the instance of request id=%d, want id=%d", w.helper, inst[w.helper], w.req)
		}
	}
}

// patternString writes a pattern as from>to[children...].
func patternString(s *trace.Step) string {
	var b strings.Builder
	var walk func(s *trace.Step)
	walk = func(s *trace.Step) {
		b.WriteString(s.From + ">" + s.To)
		if len(s.Children) > 0 {
			b.WriteByte('[')
			for i, c := range s.Children {
				if i > 0 {
					b.WriteByte(' ')
				}
				walk(c)
			}
			b.WriteByte(']')
		}
	}
	walk(s)
	return b.String()
}
