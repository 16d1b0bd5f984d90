package skew_test

import (
	"fmt"
	"strings"

	"wap5/skew"
	"wap5/trace"
)

// Two nodes a few milliseconds apart on the network; b's clock is 2.5 s
// ahead of a's. Estimate finds the offset, Apply puts b's times on a's clock.
func ExampleEstimate() {
	var sb strings.Builder
	sb.WriteString("# wap5 message trace v1\n")
	for i := 0; i < 20; i++ {
		t := 1700000000 + float64(i)
		jitter := float64(i%3) * 0.0004
		// a→b takes 2 ms (+ jitter), the reply 2 ms back
		fmt.Fprintf(&sb, "%.6f a - %.6f b - 100\n", t, t+0.002+jitter+2.5)
		fmt.Fprintf(&sb, "%.6f b - %.6f a - 100\n", t+0.01+2.5, t+0.012+jitter)
	}
	tr, err := trace.ReadText(strings.NewReader(sb.String()), "example")
	if err != nil {
		panic(err)
	}
	res, err := skew.Estimate(tr, skew.Options{Reference: "a"})
	if err != nil {
		panic(err)
	}
	b, _ := tr.LookupNode("b")
	fmt.Printf("b is %.4f s ahead of a (bound %.4f s)\n", float64(res.Nodes[b].Offset)/1e9, float64(res.Nodes[b].Error)/1e9)
	if err := skew.Apply(tr, res.Corrections()); err != nil {
		panic(err)
	}
	m := tr.Messages[0]
	fmt.Printf("first message's delay after correction: %.4f s\n", float64(m.Recv-m.Send)/1e9)
	// Output:
	// b is 2.5000 s ahead of a (bound 0.0092 s)
	// first message's delay after correction: 0.0020 s
}
