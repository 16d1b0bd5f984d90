package linking

import (
	"wap5/trace"
)

// Parallel calls (J4/J5). Inside a span the joint linker gives a send the
// latest message the span received before it: for serial calls that is the
// cause. The calls of a parallel block are all caused by the request, even
// one sent after a sibling's return (the truth of WAP5's definition: the
// message whose arrival made the node send). Which calls are parallel is
// learned per span class and destination (the count models' key): calls to
// the destination that are often sent while an earlier call of the same span
// is still outstanding (its return not yet received). Such calls take the
// span's request as their parent, in the span cost and in the final links.

// parallelShare is the share of a class's later calls (not the span's first)
// sent while an earlier call of the span is outstanding above which the
// class's calls count as parallel. Serial calls are never sent so; parallel
// calls of two siblings with equal delay distributions are sent so at least
// half the time.
const parallelShare = 0.2

// minParallelEvidence is the number of later calls a class needs before it
// can be parallel.
const minParallelEvidence = 20

// refitParallel marks the count models whose calls are parallel, from the
// spans as assigned: the spans no ambiguous call could have joined where a
// class has enough of them (sure, by count class id), else all. The calls
// of request c's span are items[start[c]:start[c+1]], in send order
// (message order), from refitCounts: the requests sent, with a known send
// time, that belong to a request span of their sender.
func (j *joint) refitParallel(sure []float64, start, items []int32) {
	n := len(j.hot)
	type tally struct{ later, over float64 }
	per := map[*countModel]*tally{}
	for ci := 0; ci < n; ci++ {
		calls := items[start[ci]:start[ci+1]]
		c := int32(ci)
		if len(calls) < 2 {
			continue
		}
		if ci, ok := j.cntCls.get(j.spanClass(c)); ok && sure[ci] >= 30 && j.unsure[c] {
			continue
		}
		b := j.dstOf(c)
		for q := 1; q < len(calls); q++ {
			k := calls[q]
			cm := j.countModelOf(c, j.dstOf(k))
			if cm == nil {
				continue
			}
			t := per[cm]
			if t == nil {
				t = &tally{}
				per[cm] = t
			}
			t.later++
			s := j.hot[k].send
			for _, e := range calls[:q] {
				if r := j.hot[e].peer; r >= 0 && j.dstOf(r) == b && j.hot[r].recv != trace.Unknown && j.hot[r].recv > s {
					t.over++
					break
				}
			}
		}
	}
	j.anyParallel = false
	for i := range j.mod.count.len() {
		_, cm := j.mod.count.at(i)
		// Without evidence (a stream chunk without such spans) keep what
		// was learnt.
		if t := per[cm]; t != nil {
			cm.parallel = t.later >= minParallelEvidence && t.over > parallelShare*t.later
		}
		j.anyParallel = j.anyParallel || cm.parallel
	}
}

// parallelIn is parallelCall for a span of count class ci (−1: none).
func (j *joint) parallelIn(ci, a int32) bool {
	if !j.anyParallel || ci < 0 || j.hot[a].role != roleRequest {
		return false
	}
	cm := j.countModelIn(ci, j.edgeDst[j.hot[a].edge])
	return cm != nil && cm.parallel
}

// parallelCall reports whether call a of request c's span is parallel: its
// parent is the request, not the latest message the span received.
func (j *joint) parallelCall(c, a int32) bool {
	if !j.anyParallel || j.hot[a].role != roleRequest {
		return false
	}
	cm := j.countModelOf(c, j.edgeDst[j.hot[a].edge])
	return cm != nil && cm.parallel
}
