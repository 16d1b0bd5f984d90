package convolution

import (
	"cmp"
	"slices"
	"strings"

	"wap5/trace"
)

// chain is one root-to-leaf path of the output graph.
type chain struct {
	verts []*vertex // verts[0] is reached from the root
	count int
	sig   string
}

// patterns is step 7.
func (c *convolver) patterns(out *trace.Paths) {
	var chains []*chain
	var walk func(path []*vertex)
	walk = func(path []*vertex) {
		x := path[len(path)-1]
		if len(x.children) == 0 {
			ch := &chain{verts: slices.Clone(path), count: x.count}
			for _, v := range path {
				ch.count = min(ch.count, v.count)
			}
			chains = append(chains, ch)
			return
		}
		for _, y := range x.children {
			walk(append(path, y))
		}
	}
	for _, x := range c.tree {
		walk([]*vertex{x})
	}
	// 7a. Derived paths: the last edge's messages are explained by a
	// longer path from the same root.
	if c.opt.DerivedOverlap >= 0 {
		// The last edges' messages, sorted (each message occurs once).
		sets := make([][]int32, len(chains))
		set := func(i int) []int32 {
			if sets[i] == nil {
				last := chains[i].verts[len(chains[i].verts)-1]
				sets[i] = slices.Sorted(slices.Values(last.msgs))
			}
			return sets[i]
		}
		keep := chains[:0:0]
		for i, p := range chains {
			pl := p.verts[len(p.verts)-1]
			derived := false
			for j, q := range chains {
				ql := q.verts[len(q.verts)-1]
				if i == j || len(q.verts) <= len(p.verts) || q.verts[0].from != p.verts[0].from || ql.from != pl.from || ql.node != pl.node {
					continue
				}
				shared := sharedCount(set(i), set(j))
				if float64(shared) >= c.opt.DerivedOverlap*float64(len(pl.msgs)) {
					derived = true
					break
				}
			}
			if !derived {
				keep = append(keep, p)
			}
		}
		chains = keep
	}
	names := func(ch *chain) string {
		var b strings.Builder
		b.WriteString(c.t.NodeName(ch.verts[0].from))
		for _, v := range ch.verts {
			b.WriteString(">")
			b.WriteString(c.t.NodeName(v.node))
		}
		return b.String()
	}
	for _, ch := range chains {
		ch.sig = names(ch)
	}
	// 7b. Rank by count, longer paths first among equals.
	slices.SortStableFunc(chains, func(a, b *chain) int {
		if x := cmp.Compare(b.count, a.count); x != 0 {
			return x
		}
		if x := cmp.Compare(len(b.verts), len(a.verts)); x != 0 {
			return x
		}
		return strings.Compare(a.sig, b.sig)
	})
	out.Patterns = make([]*trace.Pattern, len(chains))
	for i, ch := range chains {
		var root, prev *trace.Step
		for _, v := range ch.verts {
			st := &trace.Step{From: c.t.NodeName(v.from), To: c.t.NodeName(v.node), Count: v.count, Delays: []float64{}}
			var acc trace.Accumulator
			for _, d := range v.delays {
				st.Delays = append(st.Delays, d.mean)
				acc.Add(d.mean, float64(d.count))
			}
			st.Wait = acc.Stats()
			if prev == nil {
				root = st
			} else {
				prev.Children = []*trace.Step{st}
			}
			prev = st
		}
		out.Patterns[i] = &trace.Pattern{Rank: i + 1, Count: ch.count, Expected: float64(ch.count), MaxProb: 1, Root: root,
			Metrics: map[string]float64{"edges": float64(len(ch.verts))}}
	}
}

// sharedCount is the number of elements two sorted slices have in common.
func sharedCount(a, b []int32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}
