package linking

import (
	"math"
	"slices"

	"wap5/trace"
)

// J5b. The count structure test. A count model's prior (countPriors) reads
// the trace's calls per request r ≤ 2 as "one call in a share of the spans"
// (r ≤ 1) or "one or two" — but the same r is also "no call, or two" (Project
// 5 Figure 18's children-0/2: B calls C twice in 40 % of its spans, never
// once; r = 0.8). The models learnt from an assignment made under the wrong
// structure confirm it: on children-0/2 the one-call picture settled with
// request → call 75 ± 37 ms (truth 50 ± 10), return → next call 21 ± 15 ms
// (truth 50 ± 10) and 36 % of the spans with one call, a count the truth
// never has. So where the assignment contradicts the one-call structure (a
// model whose prior put mass on one call ends with at least structShare of
// its spans with calls making two or more), the linker also runs the
// alternative — the prior "no call or two" with the same mean, and
// structPasses more repair passes from there — and keeps whichever of the
// two assignments costs less (the sum of every span's cost, J4, under the
// models fitted from that assignment: the likelihood both pictures are
// judged by). Where no model is in doubt (every scenario but Figure 18's),
// nothing runs and nothing changes.
const (
	structShare  = 0.2
	structPasses = 4
)

// keepAlternative decides between the assignments by their costs: the
// alternative structure's is kept when cheaper. (Tests replace it; nil turns
// the structure test off.)
var keepAlternative = func(cost, alt float64) bool { return alt < cost }

// jointState is what a pass produces and the models it read: enough to
// return to an assignment after trying another.
type jointState struct {
	parent, span, callSpan []int32
	prob                   []float32
	kids                   []uint8
	unsure                 []bool
	classes                []classModel
	moms                   []moments     // models.moms
	active                 []*classModel // joint.active (classModel.active is saved with the classes)
	count                  map[*countModel]countModel
	fan                    map[*fanModel]fanModel
	anyParallel            bool
}

func (j *joint) saveState() *jointState {
	s := &jointState{
		parent: slices.Clone(j.parent), span: slices.Clone(j.span), callSpan: slices.Clone(j.callSpan),
		prob: slices.Clone(j.prob), kids: slices.Clone(j.kids), unsure: slices.Clone(j.unsure),
		count: map[*countModel]countModel{}, fan: map[*fanModel]fanModel{}, anyParallel: j.anyParallel,
		active: slices.Clone(j.active),
	}
	s.moms = slices.Clone(j.mod.moms)
	s.classes = make([]classModel, len(j.classes))
	for i, c := range j.classes {
		s.classes[i] = *c
	}
	for i := range j.mod.count.len() {
		_, cm := j.mod.count.at(i)
		s.count[cm] = *cm
	}
	for i := range j.mod.fan.len() {
		_, f := j.mod.fan.at(i)
		s.fan[f] = *f
	}
	return s
}

func (j *joint) restoreState(s *jointState) {
	copy(j.parent, s.parent)
	copy(j.span, s.span)
	copy(j.callSpan, s.callSpan)
	copy(j.prob, s.prob)
	copy(j.kids, s.kids)
	copy(j.unsure, s.unsure)
	for i, c := range j.classes {
		if i < len(s.classes) {
			*c = s.classes[i]
		} else {
			// Made by the alternative's passes: no links of the kept
			// assignment (compare reads the moments).
			c.momAt = 0
			c.active = false
		}
	}
	j.mod.moms = append(j.mod.moms[:0], s.moms...)
	j.active = j.active[:0]
	if j.carried == nil {
		j.active = offGrow(&j.runMem, j.active, len(s.active)) // see classOf
	}
	j.active = append(j.active, s.active...)
	for cm, v := range s.count {
		*cm = v
	}
	for f, v := range s.fan {
		*f = v
	}
	j.anyParallel = s.anyParallel
	j.setCountBase()
}

// doubtfulCounts returns the count models whose prior put mass on one call
// while the assignment gives structShare or more of the spans with calls two
// or more of them.
func (j *joint) doubtfulCounts() []*countModel {
	var out []*countModel
	for i := range j.mod.count.len() {
		_, cm := j.mod.count.at(i)
		if cm.prior[1] < 0.25 {
			continue
		}
		some := cm.p[1] + cm.p[2] + cm.p[3]
		if some > 0 && (cm.p[2]+cm.p[3])/some >= structShare {
			out = append(out, cm)
		}
	}
	return out
}

// zeroOrTwo is the alternative prior of a model: no call or two, with the
// mean of the prior (≤ 2 calls per span).
func zeroOrTwo(prior [4]float64) [4]float64 {
	r := 0.0
	for i, p := range prior {
		r += float64(i) * (p - 0.005) / 0.98
	}
	r = math.Min(math.Max(r, 0), 2)
	p := [4]float64{1 - r/2, 0, r / 2, 0}
	for i := range p {
		p[i] = 0.98*p[i] + 0.005
	}
	return p
}

// tallySpans adds to j.tallySum the cost of node b's assignment as repair
// leaves it, under the current models: the cost of every span (J4's span
// cost) and rootCost for every call left outside every span. Summed over a
// repair pass's nodes (j.tally set), it is the cost the structure test
// compares.
func (j *joint) tallySpans(b trace.NodeID, ns *nodeSpans, calls []int32) {
	for s := range ns.req {
		j.tallySum += j.spanCostAt(b, ns, int32(s), ns.members[s])
	}
	for _, k := range calls {
		if _, ok := ns.at(j.callSpan[k]); !ok {
			j.tallySum += rootCost
		}
	}
}
