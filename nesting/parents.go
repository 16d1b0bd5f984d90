package nesting

import "math"

// penalty caches (1+c)^-e for small c.
type penalty struct {
	e   float64
	tab []float64
}

func newPenalty(e float64) *penalty {
	p := &penalty{e: e, tab: make([]float64, 64)}
	for c := range p.tab {
		p.tab[c] = math.Pow(1+float64(c), -e)
	}
	return p
}

func (p *penalty) of(c int) float64 {
	if c < len(p.tab) {
		return p.tab[c]
	}
	return math.Pow(1+float64(c), -p.e)
}

// findNestedPairs is step 3: every call with candidates gets the one with
// the best penalised score as its parent. Calls are taken node by node in
// the order they were made, so each parent's children stay in that order.
func (s *state) findNestedPairs() {
	calls, g := s.calls, s.g
	px, py, pz := newPenalty(s.opt.X), newPenalty(s.opt.Y), newPenalty(s.opt.Z)
	usePen := s.opt.X != 0 || s.opt.Y != 0 || s.opt.Z != 0
	for b := range s.t.Nodes {
		for _, ci := range g.out[g.outOff[b]:g.outOff[b+1]] {
			c := &calls[ci]
			if c.candN == 0 {
				continue
			}
			best, bestBin, bestScore := int32(-1), int32(0), -1.0
			for _, cd := range s.cands[c.candOff : c.candOff+c.candN] {
				// 3a. Raw score: the scoreboard at this nesting delay.
				score := s.board[cd.hist][cd.bin]
				// 3b. Penalties from the children the parent already has.
				if usePen {
					over, same, any := 0, 0, 0
					for k := calls[cd.parent].first; k >= 0; k = calls[k].next {
						o := &calls[k]
						any++
						if o.callee == c.callee {
							same++
						}
						if o.cr > c.cs && o.cs < c.cr {
							over++
						}
					}
					score *= px.of(over) * py.of(same) * pz.of(any)
				}
				// 3c. Highest score wins; candidates come in order of
				// arrival, so ties go to the earliest parent.
				if score > bestScore {
					best, bestBin, bestScore = cd.parent, cd.bin, score
				}
			}
			c.parent, c.pbin = best, bestBin
			p := &calls[best]
			if p.last < 0 {
				p.first = ci
			} else {
				calls[p.last].next = ci
			}
			p.last = ci
			p.nkids++
		}
	}
}
