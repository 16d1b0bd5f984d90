package score

import (
	"slices"
	"strconv"
	"strings"

	"wap5/trace"
)

// view says how paths are shaped: as message trees, call trees or chains.
type view uint8

const (
	viewLinking view = iota
	viewNesting
	viewConvolution
)

func viewOf(algorithm string) view {
	switch algorithm {
	case "nesting":
		return viewNesting
	case "convolution":
		return viewConvolution
	}
	return viewLinking
}

// tinst is one truth path instance in a view: its steps (message indices) in
// canonical depth-first order with the index of each step's parent step
// (−1 at the root), the messages it covers, and its key.
type tinst struct {
	key    string
	steps  []int32
	parent []int32
	msgs   []int32 // sorted
	truth  int32
}

// causes is step 1: the cause of every message (index, or −1), computed
// within each truth instance.
func causes(t *trace.Trace, groups [][]int32) []int32 {
	par := make([]int32, len(t.Messages))
	for i := range par {
		par[i] = -1
	}
	// Exact parents written by the generator (parent=ID).
	var byID map[int64]int32
	explicit := false
	for _, x := range t.Extra {
		if strings.Contains(x, "parent=") {
			explicit = true
			break
		}
	}
	if explicit {
		byID = make(map[int64]int32, len(t.Messages))
		for i := range t.Messages {
			if id := t.Messages[i].ID; id != trace.NoRef {
				byID[id] = int32(i)
			}
		}
	}
	for _, g := range groups {
		if explicit {
			for _, i := range g {
				pid, ok := parentKey(t.Extra[i])
				if !ok {
					continue
				}
				if p, ok := byID[t.Ref(pid)]; ok && t.Messages[p].Truth == t.Messages[i].Truth && p != i {
					par[i] = p
				}
			}
			continue
		}
		for _, i := range g {
			par[i] = latestCause(t, g, i)
		}
	}
	return par
}

func parentKey(extra string) (string, bool) {
	for _, kv := range strings.Fields(extra) {
		if v, ok := strings.CutPrefix(kv, "parent="); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

// latestCause is the latest message of the group into m's sender that the
// sender had received before sending m.
func latestCause(t *trace.Trace, g []int32, i int32) int32 {
	m := &t.Messages[i]
	best := int32(-1)
	var bestT int64
	for _, j := range g {
		if j == i {
			continue
		}
		p := &t.Messages[j]
		if p.Dst != m.Src {
			continue
		}
		var pt, mt int64
		switch {
		case m.Send != trace.Unknown && p.Recv != trace.Unknown:
			pt, mt = p.Recv, m.Send // one clock: the sender's
		case m.Recv != trace.Unknown && p.Send != trace.Unknown:
			// Untraced sender: the peers' clocks (one clock in A→B→A).
			pt, mt = p.Send, m.Recv
		default:
			continue
		}
		if pt > mt || (best >= 0 && pt < bestT) {
			continue
		}
		best, bestT = j, pt
	}
	return best
}

// truthGroups groups message indices by truth id (in trace order) and
// returns them in order of each instance's first message.
func truthGroups(t *trace.Trace) [][]int32 {
	idx := map[int32]int{}
	var groups [][]int32
	for i := range t.Messages {
		tr := t.Messages[i].Truth
		if tr == trace.NoRef {
			continue
		}
		k, ok := idx[tr]
		if !ok {
			k = len(groups)
			idx[tr] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], int32(i))
	}
	return groups
}

// namer maps node ids to the names used in keys (after aliases).
type namer []string

// shape is step 2: the truth path instances of the view.
func shape(t *trace.Trace, v view, names namer, groups [][]int32, par []int32) []tinst {
	var out []tinst
	for _, g := range groups {
		switch v {
		case viewNesting:
			out = append(out, callTrees(t, names, g, par)...)
		case viewConvolution:
			out = append(out, chains(t, names, g, par)...)
		default:
			out = append(out, messageTrees(t, names, g, par)...)
		}
	}
	return out
}

// tree is a generic rooted tree over message indices for canonicalisation.
type tree struct {
	label    func(int32) string
	children map[int32][]int32
}

// canon returns the key of the subtree at n and appends its steps in
// canonical depth-first order (with parent step positions) to steps/parents.
func (tr *tree) canon(n int32, parentPos int32, steps, parents *[]int32) string {
	pos := int32(len(*steps))
	*steps = append(*steps, n)
	*parents = append(*parents, parentPos)
	kids := tr.children[n]
	if len(kids) == 0 {
		return tr.label(n) + "()"
	}
	type sub struct {
		key      string
		steps    []int32
		parents  []int32
		original int
	}
	subs := make([]sub, len(kids))
	for k, c := range kids {
		var s, p []int32
		subs[k] = sub{key: tr.canon(c, 0, &s, &p), steps: s, parents: p, original: k}
	}
	slices.SortStableFunc(subs, func(a, b sub) int { return strings.Compare(a.key, b.key) })
	var b strings.Builder
	b.WriteString(tr.label(n))
	b.WriteByte('(')
	for k, s := range subs {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s.key)
		base := int32(len(*steps))
		for x, st := range s.steps {
			*steps = append(*steps, st)
			if x == 0 {
				*parents = append(*parents, pos)
			} else {
				*parents = append(*parents, base+s.parents[x])
			}
		}
	}
	b.WriteByte(')')
	return b.String()
}

func (names namer) edge(t *trace.Trace, i int32) string {
	m := &t.Messages[i]
	return names[m.Src] + ">" + names[m.Dst]
}

func messageTrees(t *trace.Trace, names namer, g []int32, par []int32) []tinst {
	tr := &tree{label: func(i int32) string { return names.edge(t, i) }, children: map[int32][]int32{}}
	var roots []int32
	for _, i := range g {
		if p := par[i]; p >= 0 {
			tr.children[p] = append(tr.children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	out := make([]tinst, 0, len(roots))
	for _, r := range roots {
		var steps, parents []int32
		key := tr.canon(r, -1, &steps, &parents)
		msgs := slices.Clone(steps)
		slices.Sort(msgs)
		out = append(out, tinst{key: key, steps: steps, parent: parents, msgs: msgs, truth: t.Messages[r].Truth})
	}
	return out
}

// callTrees: the nodes are the calls; a call's parent is the call into its
// caller whose span contains it, found by following causes back through the
// caller's earlier calls and their returns.
func callTrees(t *trace.Trace, names namer, g []int32, par []int32) []tinst {
	calls := map[int32]int32{}   // call id → call message
	returns := map[int32]int32{} // call id → return message
	for _, i := range g {
		m := &t.Messages[i]
		if m.Call == trace.NoRef {
			continue
		}
		switch m.Kind {
		case trace.KindCall:
			calls[m.Call] = i
		case trace.KindReturn:
			returns[m.Call] = i
		}
	}
	tr := &tree{label: func(i int32) string { return names.edge(t, i) }, children: map[int32][]int32{}}
	var roots []int32
	for _, i := range g {
		m := &t.Messages[i]
		if m.Kind != trace.KindCall {
			continue
		}
		pc := int32(-1)
		q := par[i]
		for hops := 0; q >= 0 && hops < len(g); hops++ {
			qm := &t.Messages[q]
			if qm.Kind == trace.KindCall && qm.Dst == m.Src {
				pc = q
				break
			}
			if qm.Kind != trace.KindReturn {
				break // caused by a one-way message: a root of the call view
			}
			c, ok := calls[qm.Call]
			if !ok {
				break
			}
			q = par[c]
		}
		if pc >= 0 {
			tr.children[pc] = append(tr.children[pc], i)
		} else {
			roots = append(roots, i)
		}
	}
	out := make([]tinst, 0, len(roots))
	for _, r := range roots {
		var steps, parents []int32
		key := tr.canon(r, -1, &steps, &parents)
		var msgs []int32
		for _, c := range steps {
			msgs = append(msgs, c)
			if ret, ok := returns[t.Messages[c].Call]; ok {
				msgs = append(msgs, ret)
			}
		}
		slices.Sort(msgs)
		out = append(out, tinst{key: key, steps: steps, parent: parents, msgs: msgs, truth: t.Messages[r].Truth})
	}
	return out
}

// chains: every root-to-leaf path of the message trees.
func chains(t *trace.Trace, names namer, g []int32, par []int32) []tinst {
	children := map[int32][]int32{}
	var roots []int32
	for _, i := range g {
		if p := par[i]; p >= 0 {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	var out []tinst
	var path []int32
	var walk func(n int32)
	walk = func(n int32) {
		path = append(path, n)
		if kids := children[n]; len(kids) > 0 {
			for _, c := range kids {
				walk(c)
			}
		} else {
			steps := slices.Clone(path)
			parents := make([]int32, len(steps))
			var b strings.Builder
			b.WriteString(names[t.Messages[steps[0]].Src])
			for k, s := range steps {
				parents[k] = int32(k - 1)
				b.WriteByte('>')
				b.WriteString(names[t.Messages[s].Dst])
			}
			msgs := slices.Clone(steps)
			slices.Sort(msgs)
			out = append(out, tinst{key: b.String(), steps: steps, parent: parents, msgs: msgs, truth: t.Messages[steps[0]].Truth})
		}
		path = path[:len(path)-1]
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

// stepKey gives an inferred pattern its key in the view, and its steps in
// canonical order.
func stepKey(root *trace.Step, v view, alias func(string) string) (string, []*trace.Step) {
	if v == viewConvolution {
		var b strings.Builder
		var steps []*trace.Step
		for s := root; s != nil; {
			if len(steps) == 0 {
				b.WriteString(alias(s.From))
			}
			b.WriteByte('>')
			b.WriteString(alias(s.To))
			steps = append(steps, s)
			if len(s.Children) == 0 {
				break
			}
			s = s.Children[0]
		}
		return b.String(), steps
	}
	var steps []*trace.Step
	var rec func(s *trace.Step) (string, []*trace.Step)
	rec = func(s *trace.Step) (string, []*trace.Step) {
		label := alias(s.From) + ">" + alias(s.To)
		if len(s.Children) == 0 {
			return label + "()", []*trace.Step{s}
		}
		type sub struct {
			key   string
			steps []*trace.Step
		}
		subs := make([]sub, len(s.Children))
		for k, c := range s.Children {
			key, st := rec(c)
			subs[k] = sub{key, st}
		}
		slices.SortStableFunc(subs, func(a, b sub) int { return strings.Compare(a.key, b.key) })
		var b strings.Builder
		b.WriteString(label)
		b.WriteByte('(')
		out := []*trace.Step{s}
		for k, x := range subs {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(x.key)
			out = append(out, x.steps...)
		}
		b.WriteByte(')')
		return b.String(), out
	}
	key, st := rec(root)
	steps = st
	return key, steps
}

// clientNodes reports the client-like nodes of t: nodes with known
// endpoints none of which is fixed (talks to at least three other
// endpoints), as WAP5 §2.5 tells clients from servers.
func clientNodes(t *trace.Trace) []bool {
	peers := make(map[trace.EndpointID]map[trace.EndpointID]struct{})
	fixed := make(map[trace.EndpointID]bool)
	note := func(a, b trace.EndpointID) {
		if a == trace.NoEndpoint || b == trace.NoEndpoint || fixed[a] {
			return
		}
		s := peers[a]
		if s == nil {
			s = map[trace.EndpointID]struct{}{}
			peers[a] = s
		}
		s[b] = struct{}{}
		if len(s) >= 3 {
			fixed[a] = true
			delete(peers, a)
		}
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		note(m.SrcEP, m.DstEP)
		note(m.DstEP, m.SrcEP)
	}
	known := make([]bool, len(t.Nodes))
	server := make([]bool, len(t.Nodes))
	for i := range t.Messages {
		m := &t.Messages[i]
		for _, x := range [2]struct {
			n  trace.NodeID
			ep trace.EndpointID
		}{{m.Src, m.SrcEP}, {m.Dst, m.DstEP}} {
			if x.ep == trace.NoEndpoint || strings.HasPrefix(t.EndpointName(x.ep), "unix:") {
				continue
			}
			known[x.n] = true
			server[x.n] = server[x.n] || fixed[x.ep]
		}
	}
	out := make([]bool, len(t.Nodes))
	for i := range out {
		out[i] = known[i] && !server[i]
	}
	return out
}

// msgKey is a map key for a sorted message set.
func msgKey(msgs []int32) string {
	b := make([]byte, 0, len(msgs)*5)
	for _, m := range msgs {
		b = strconv.AppendInt(b, int64(m), 36)
		b = append(b, ',')
	}
	return string(b)
}
