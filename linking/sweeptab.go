package linking

// The sweep's node-local tables (J3). A node's sweep reads, of the messages
// it receives, their spans and whether a span is unsure; both change only
// in that sweep, so what it wrote is kept in small tables that stay in
// cache rather than read back from the per-message arrays (scattered over
// a large trace: a cache miss each).

// retTable holds the spans the sweep gave to returns it has not received
// yet, with the spans' ends (closes), by message: open addressing, linear
// probing, deletion by backward shift, so that it holds the node's
// outstanding calls only.
type retTable struct {
	ents []retEnt
	n    int
}

type retEnt struct {
	key   int32 // the return; −1: empty
	sp    int32
	close int64
}

func retSlot(k int32, mask int) int { return int(mix(uint64(uint32(k)))) & mask }

// reset empties t.
func (t *retTable) reset() {
	if len(t.ents) == 0 {
		t.ents = make([]retEnt, 64)
	} else if t.n == 0 {
		return
	}
	for i := range t.ents {
		t.ents[i].key = -1
	}
	t.n = 0
}

// put records return k's span sp, which ends at close.
func (t *retTable) put(k, sp int32, close int64) {
	if 2*(t.n+1) > len(t.ents) {
		old := t.ents
		t.ents = make([]retEnt, 2*len(old))
		for i := range t.ents {
			t.ents[i].key = -1
		}
		for _, e := range old {
			if e.key >= 0 {
				t.ents[t.free(e.key)] = e
			}
		}
	}
	p := t.free(k)
	if t.ents[p].key < 0 {
		t.n++
	}
	t.ents[p] = retEnt{key: k, sp: sp, close: close}
}

// free is k's slot, or the empty slot that ends its probe.
func (t *retTable) free(k int32) int {
	mask := len(t.ents) - 1
	p := retSlot(k, mask)
	for t.ents[p].key >= 0 && t.ents[p].key != k {
		p = (p + 1) & mask
	}
	return p
}

// take returns return k's span and its end, and forgets them; ok is false
// where there is none.
func (t *retTable) take(k int32) (sp int32, close int64, ok bool) {
	if t.n == 0 {
		return 0, 0, false
	}
	mask := len(t.ents) - 1
	p := t.free(k)
	e := t.ents[p]
	if e.key < 0 {
		return 0, 0, false
	}
	// Backward shift: every entry after p in its run whose home slot is
	// not cyclically in (p, q] moves into the hole.
	for q := (p + 1) & mask; t.ents[q].key >= 0; q = (q + 1) & mask {
		h := retSlot(t.ents[q].key, mask)
		if (q > p && (h <= p || h > q)) || (q < p && h <= p && h > q) {
			t.ents[p] = t.ents[q]
			p = q
		}
	}
	t.ents[p].key = -1
	t.n--
	return e.sp, e.close, true
}

// idSet is a set of message indices (≥ 0): open addressing, linear
// probing, no deletion.
type idSet struct {
	keys []int32 // −1: empty
	n    int
}

func (s *idSet) reset() {
	if len(s.keys) == 0 {
		s.keys = make([]int32, 64)
	} else if s.n == 0 {
		return
	}
	for i := range s.keys {
		s.keys[i] = -1
	}
	s.n = 0
}

func (s *idSet) slot(k int32) int {
	mask := len(s.keys) - 1
	p := retSlot(k, mask)
	for s.keys[p] >= 0 && s.keys[p] != k {
		p = (p + 1) & mask
	}
	return p
}

func (s *idSet) add(k int32) {
	if 2*(s.n+1) > len(s.keys) {
		old := s.keys
		s.keys = make([]int32, 2*len(old))
		for i := range s.keys {
			s.keys[i] = -1
		}
		for _, x := range old {
			if x >= 0 {
				s.keys[s.slot(x)] = x
			}
		}
	}
	if p := s.slot(k); s.keys[p] < 0 {
		s.keys[p] = k
		s.n++
	}
}

func (s *idSet) has(k int32) bool {
	return s.n > 0 && s.keys[s.slot(k)] == k
}
