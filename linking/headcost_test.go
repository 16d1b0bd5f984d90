package linking

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"wap5/tracegen"
)

// TestHeadlessSpanCost: a headless span's sends before any return (its own
// reply, with no calls) lost their cause, and each pays headCost: the log
// of the longest span (the window x where no node's spans are at hand), a
// uniform delay over it. So doubling x adds log 2 per such send to the
// span's cost, and nothing else in the cost depends on x. (spanCostOf's
// lost-cause term was covered by no other test.)
func TestHeadlessSpanCost(t *testing.T) {
	for _, tc := range []struct {
		loss float64
		seed uint64
	}{{0.03, 21}, {0.05, 22}, {0.1, 23}} {
		t.Run(fmt.Sprintf("loss %.2f", tc.loss), func(t *testing.T) {
			cfg, err := tracegen.ParseConfig(strings.NewReader(lossConfig), "loss.gen")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Loss, cfg.Seed = tc.loss, tc.seed
			tr, err := tracegen.Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { afterJoint = nil }()
			checked := 0
			afterJoint = func(j *joint) {
				// 1. No node's spans at hand: headCost is log(x).
				j.curSpans = nil
				x := j.x
				defer func() { j.x = x }()
				for i := range j.hot {
					h := &j.hot[i]
					if h.half != halfHead {
						continue
					}
					// 2. The span of headless reply i, at its sender, without
					// calls: its reply is its one send, before any return.
					b := j.edgeSrc[h.edge]
					j.x = x
					c1 := j.spanCost(b, int32(i), nil)
					j.x = 2 * x
					c2 := j.spanCost(b, int32(i), nil)
					if math.IsInf(c1, 0) || math.IsNaN(c1) {
						t.Fatalf("headless span %d: cost %v", i, c1)
					}
					if d := c2 - c1; math.Abs(d-math.Ln2) > 1e-9 {
						t.Fatalf("headless span %d: cost %v at x, %v at 2x: differ by %v, want log 2", i, c1, c2, d)
					}
					checked++
				}
			}
			if _, err := Link(tr, Options{}); err != nil {
				t.Fatal(err)
			}
			if checked == 0 {
				t.Fatal("no headless span")
			}
			t.Logf("%d headless spans", checked)
		})
	}
}
