package linking

import "wap5/trace"

// settleNodes marks the nodes settled for the repair passes (J5c per
// node): those where fewer than the share Options.SettleNode of the sends
// the last sweep linked chose a parent less likely than sureProb. The
// repair passes do not sweep a settled node again: its links stand as
// that sweep left them (resetUnsettled keeps them), and J4 moves only its
// open calls, those the sweep was unsure of (repair).
func (j *joint) settleNodes() {
	j.settled = nil
	if afterSettle != nil {
		defer afterSettle(j) // tests: the links as the settled nodes keep them
	}
	if j.o.SettleNode <= 0 || j.carried != nil || j.lossy {
		return
	}
	set, n := make([]bool, len(j.t.Nodes)), 0
	for b := range j.t.Nodes {
		outs := j.outsOf(trace.NodeID(b))
		if len(outs) == 0 {
			continue // (an untraced node's sends are linked after the sweeps)
		}
		unsure := 0
		for _, o := range outs {
			if j.prob[o] < sureProb {
				unsure++
			}
		}
		if float64(unsure) < j.o.SettleNode*float64(len(outs)) {
			set[b] = true
			n++
		}
	}
	if n > 0 {
		j.settled = set
	}
}

// afterSettle, when set (tests only), sees the links when the nodes are
// settled.
var afterSettle func(j *joint)

// resetUnsettled is resetPass's reset of the links where some nodes are
// settled: a settled node keeps its sends' parents and probabilities and
// its received messages' children, spans and unsure marks (all that its
// sweep writes); the rest is reset as resetPass does.
func (j *joint) resetUnsettled() {
	for i := range j.parent {
		h := &j.hot[i]
		if h.send == trace.Unknown || !j.settled[j.edgeSrc[h.edge]] {
			j.parent[i], j.prob[i] = -1, 0
		}
		if h.recv == trace.Unknown || !j.settled[j.edgeDst[h.edge]] {
			j.kids[i], j.unsure[i] = 0, false
			j.span[i] = int32(i)
			if j.half[i] == halfHead {
				j.span[i] = spanRoot // (as resetPass)
			}
		}
	}
}
