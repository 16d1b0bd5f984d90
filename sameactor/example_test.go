package sameactor_test

import (
	"fmt"

	"wap5/sameactor"
	"wap5/trace"
)

// A node whose four threads each send the calls of the requests they
// received: 30 unambiguous calls, all from the receiving thread.
func ExampleTally() {
	var t sameactor.Tally
	for i := 0; i < 30; i++ {
		th := trace.ActorID(1 + i%4)
		t.Received(th) // the request
		t.Sent(th)     // its call
		t.Pair(th, th) // the call had one possible request
	}
	h := t.Decide(0.99, 1e-6)
	fmt.Printf("%d actors, %d of %d agree, chance %.2f, used %v\n", h.Actors, h.Same, h.Unambiguous, h.Chance, h.Used)
	// Output: 4 actors, 30 of 30 agree, chance 0.25, used true
}
