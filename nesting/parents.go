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

// findNestedPairs is step 3 at node b (iv, ov its calls in and out, cands
// their candidates, next scratch for sibling links): every call with
// candidates gets the one with the best penalised score as its parent.
// Calls are taken in the order they were made, so each parent's children
// stay in that order.
func (s *state) findNestedPairs(iv []inRec, ov []outRec, next []int32, cands []candidate) {
	px, py, pz := newPenalty(s.opt.X), newPenalty(s.opt.Y), newPenalty(s.opt.Z)
	usePen := s.opt.X != 0 || s.opt.Y != 0 || s.opt.Z != 0
	// Penalties in [0, 1] (exponents not negative, not NaN): a call's
	// only candidate needs no score.
	penOne := !usePen || s.opt.X >= 0 && s.opt.Y >= 0 && s.opt.Z >= 0
	ties := s.ties
	for k := range ov {
		c := &ov[k]
		next[k] = -1
		if c.candN == 0 {
			continue
		}
		best, bestBin, bestScore := int32(-1), int32(0), -1.0
		cs := cands[c.candOff : c.candOff+c.candN]
		if cd := &cs[0]; len(cs) == 1 && penOne {
			// A lone candidate wins (3c) when its score is positive and
			// finite: its penalties are in [0, 1], the product beats −1.
			if sc := s.board[cd.hist][cd.bin]; sc > 0 && sc <= math.MaxFloat64 {
				best, bestBin, cs = cd.parent, cd.bin, nil
			}
		}
		for _, cd := range cs {
			// 3a. Raw score: the scoreboard at this nesting delay.
			score := s.board[cd.hist][cd.bin]
			// 3b. Penalties from the children the parent already has.
			if usePen {
				over, same, any := 0, 0, 0
				for q := iv[cd.parent].first; q >= 0; q = next[q] {
					o := &ov[q]
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
		p := &iv[best]
		t := &ties[c.id]
		t.parent, t.pbin = p.id, bestBin
		if p.last < 0 {
			p.first = int32(k)
		} else {
			next[p.last] = int32(k)
		}
		p.last = int32(k)
	}
	// The children lists in call indices, for step 4.
	for j := range iv {
		p := &iv[j]
		if p.first < 0 {
			continue
		}
		t := &ties[p.id]
		t.first = ov[p.first].id
		for q := p.first; q >= 0; q = next[q] {
			t.nkids++
			if nx := next[q]; nx >= 0 {
				ties[ov[q].id].next = ov[nx].id
			}
		}
	}
}
