package convolution_test

import (
	"fmt"
	"time"

	"wap5/convolution"
	"wap5/trace"
)

// A forwards messages to B at irregular times; B passes each on to C two
// seconds later. Convolution finds the path A → B → C and the delay.
func ExampleConvolve() {
	t := trace.New()
	ts := int64(1_000e9)
	for i := 0; i < 200; i++ {
		ts += int64(5+i%7) * 1e9
		t.Add(trace.Message{Send: ts, Recv: ts, Src: t.Node("A"), Dst: t.Node("B"), ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
		t.Add(trace.Message{Send: ts + 2e9, Recv: ts + 2e9, Src: t.Node("B"), Dst: t.Node("C"), ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
	}
	t.Sort()
	o := convolution.DefaultOptions()
	o.Quantum = 500 * time.Millisecond
	r := convolution.Convolve(t, o)
	p := r.Patterns[0]
	fmt.Printf("%s → %s ×%d\n", p.Root.From, p.Root.To, p.Root.Count)
	next := p.Root.Children[0]
	fmt.Printf("%s → %s ×%d after %v s\n", next.From, next.To, next.Count, next.Delays)
	// Output:
	// A → B ×200
	// B → C ×200 after [2] s
}
