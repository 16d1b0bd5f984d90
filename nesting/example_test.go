package nesting_test

import (
	"fmt"

	"wap5/nesting"
	"wap5/trace"
)

// Project 5's Figure 3: A calls B, B calls C and then D, B returns.
func ExampleNest() {
	t := trace.New()
	add := func(sec float64, from, to string, k trace.Kind, call int32) {
		ns := int64(sec * 1e9)
		t.Add(trace.Message{Send: ns, Recv: ns, Src: t.Node(from), Dst: t.Node(to), Kind: k, Call: call, ID: trace.NoRef, Truth: trace.NoRef})
	}
	add(1, "A", "B", trace.KindCall, 1)
	add(3, "B", "C", trace.KindCall, 2)
	add(5, "C", "B", trace.KindReturn, 2)
	add(7, "B", "D", trace.KindCall, 3)
	add(9, "D", "B", trace.KindReturn, 3)
	add(11, "B", "A", trace.KindReturn, 1)
	r := nesting.Nest(t, nesting.DefaultOptions())
	for _, p := range r.Patterns {
		fmt.Printf("pattern %d, %d instance(s)\n", p.Rank, p.Count)
		p.Root.Walk(func(s *trace.Step, depth int) {
			fmt.Printf("%*s%s → %s: call delay %.0f s, latency %.0f s\n", 2*depth, "", s.From, s.To, s.Wait.Mean, s.Latency.Mean)
		})
	}
	// Output:
	// pattern 1, 1 instance(s)
	// A → B: call delay 0 s, latency 10 s
	//   B → C: call delay 2 s, latency 2 s
	//   B → D: call delay 6 s, latency 2 s
}
