package analyze_test

import (
	"fmt"
	"log"

	"wap5/analyze"
	"wap5/reconcile"
)

// Run the whole pipeline over the logs of `wap5 run` and look at the most
// frequent causal path.
func ExampleRun() {
	r, err := analyze.Run(reconcile.Inputs{Logs: []string{"../reconcile/testdata/logs/testbed"}}, analyze.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(r.Trace.Messages), "messages; clock offsets applied:", r.SkewApplied)
	top := r.Link.Patterns[0]
	fmt.Printf("top pattern: %d instances, %s → %s first\n", top.Count, top.Root.From, top.Root.To)
	// Output:
	// 16 messages; clock offsets applied: false
	// top pattern: 4 instances, c → s1 first
}
