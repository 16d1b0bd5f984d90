package score_test

import (
	"fmt"
	"strings"

	"wap5/render"
	"wap5/score"
	"wap5/trace"
)

// Project 5 §7.5.1's example: the system ran A→B→C→D twice; the algorithm
// found one A→B→C→D, one A→B and one C→D.
func ExampleScore() {
	truth, _ := trace.ReadText(strings.NewReader(`# wap5 message trace v1
1.000 A - 1.001 B - 10 id=1 truth=1
1.010 B - 1.011 C - 10 id=2 truth=1
1.020 C - 1.021 D - 10 id=3 truth=1
2.000 A - 2.001 B - 10 id=4 truth=2
2.010 B - 2.011 C - 10 id=5 truth=2
2.020 C - 2.021 D - 10 id=6 truth=2
`), "truth")
	result, _ := render.ReadJSON(strings.NewReader(`{"algorithm":"linking","patterns":[
 {"rank":1,"count":1,"expected":1,"max_prob":1,"root":{"from":"A","to":"B","net_s":null,"wait_s":null,"children":[
   {"from":"B","to":"C","net_s":null,"wait_s":0.009,"children":[{"from":"C","to":"D","net_s":null,"wait_s":0.009,"children":[]}]}]}},
 {"rank":2,"count":1,"expected":1,"max_prob":1,"root":{"from":"A","to":"B","net_s":null,"wait_s":null,"children":[]}},
 {"rank":3,"count":1,"expected":1,"max_prob":1,"root":{"from":"C","to":"D","net_s":null,"wait_s":null,"children":[]}}]}`))
	r := score.Score(truth, result, score.Options{Top: 1})
	fmt.Printf("patterns:  TP %v FP %v FN %v\n", r.Patterns.TP, r.Patterns.FP, r.Patterns.FN)
	fmt.Printf("instances: TP %v FP %v FN %v\n", r.InstancesByCount.TP, r.InstancesByCount.FP, r.InstancesByCount.FN)
	fmt.Printf("messages:  TP %v FN %v\n", r.MessagesByCount.TP, r.MessagesByCount.FN)
	fmt.Printf("delay error: %.0f%%\n", 100*r.Delays.MeanRelErr)
	// Output:
	// patterns:  TP 1 FP 2 FN 0
	// instances: TP 1 FP 2 FN 1
	// messages:  TP 3 FN 3
	// delay error: 0%
}
