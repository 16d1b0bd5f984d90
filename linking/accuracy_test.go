package linking

import (
	"testing"
	"time"
)

func TestAccuracyQuick(t *testing.T) {
	for _, method := range []string{MethodWAP5, MethodJoint} {
		for _, par := range []int{1, 10, 30} {
			for _, think := range []float64{500, 5} {
				tr := simulate(simConfig{clients: par, perClient: 200, think: gauss{ms(think), ms(think / 3)}, net: gauss{ms(0.3), ms(0.05)},
					tracelets: multiTier(par, false), seed: 1, clientName: "CLIENT"})
				res, err := Link(tr, Options{Method: method, Window: 100 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				a := measure(tr, &res.Paths)
				t.Logf("%s par=%d think=%v msgs=%d patterns=%d: precision %.3f recall %.3f truth patterns %d missing %d delay err %.3f best %s iters %d",
					method, par, think, len(tr.Messages), len(res.Patterns), a.precision, a.recall, a.truthPatterns, a.missingTopN, a.delayErr, res.Fit.Best, res.Iterations)
			}
		}
	}
}
