package linking

import (
	"math"
	"slices"
	"testing"
)

// TestInstancesTrees: J6 (joint.instances) writes every tree under a
// parentless message, roots in message order, breadth first with each
// message's children in message order (a parent may come after its child
// in the trace), with the parents as positions in the tree and the
// probability the product of the root's (1 where 0) and its messages' in
// that order (float products depend on it), in the heap and outside it.
func TestInstancesTrees(t *testing.T) {
	for _, c := range []struct {
		name   string
		parent []int32
		prob   []float32
	}{
		{"one root alone", []int32{-1}, []float32{0}},
		{"request, reply", []int32{-1, 0}, []float32{0, 0.7}},
		{"a chain of four", []int32{-1, 0, 1, 2}, []float32{0.9, 0.3, 0.7, 0.1}},
		{"children before their parents", []int32{3, 3, -1, 2, 0}, []float32{0.1, 0.3, 1, 0.7, 0.9}},
		{"fan-out, children in message order", []int32{-1, 0, 0, 1, 0, 2, 1}, []float32{0.5, 0.1, 0.7, 0.3, 0.9, 0.11, 0.13}},
		{"roots interleaved", []int32{-1, -1, 0, 1, 2, -1, 3, 5, 0}, []float32{0, 0.2, 0.3, 0.7, 0.1, 0.9, 0.33, 0.77, 0.19}},
	} {
		// The reference: breadth first from each root, a message's
		// children found by scanning the parents in message order.
		var wantMsgs, wantPar []int32
		var wantStart = []int32{0}
		var wantProb []float64
		for r, p := range c.parent {
			if p >= 0 {
				continue
			}
			s := len(wantMsgs)
			wantMsgs, wantPar = append(wantMsgs, int32(r)), append(wantPar, -1)
			prob := float64(c.prob[r])
			if prob == 0 {
				prob = 1
			}
			for q := s; q < len(wantMsgs); q++ {
				for k, pk := range c.parent {
					if pk == wantMsgs[q] {
						wantMsgs, wantPar = append(wantMsgs, int32(k)), append(wantPar, int32(q-s))
						prob *= float64(c.prob[k])
					}
				}
			}
			wantStart, wantProb = append(wantStart, int32(len(wantMsgs))), append(wantProb, prob)
		}
		for _, off := range []bool{false, true} {
			j := &joint{linker: &linker{}, parent: c.parent, prob: c.prob}
			var mem *offHeap
			if off {
				mem = &offHeap{from: 1}
			}
			in := j.instances(mem)
			if !slices.Equal(in.start, wantStart) || !slices.Equal(in.msgs, wantMsgs) || !slices.Equal(in.par, wantPar) {
				t.Errorf("%s (outside the heap %v): start %v msgs %v par %v, want %v %v %v", c.name, off, in.start, in.msgs, in.par, wantStart, wantMsgs, wantPar)
			}
			if !slices.EqualFunc(in.prob, wantProb, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }) {
				t.Errorf("%s (outside the heap %v): probabilities %v, want %v", c.name, off, in.prob, wantProb)
			}
			if mem != nil {
				mem.free()
			}
			j.linkMem.free()
		}
	}
}
