package linking

import (
	"fmt"
	"os"
	"sort"
	"testing"

	"wap5/trace"
)

func truthParents(t *trace.Trace) []int32 {
	par := make([]int32, len(t.Messages))
	by := map[int32][]int32{}
	for i := range t.Messages {
		by[t.Messages[i].Truth] = append(by[t.Messages[i].Truth], int32(i))
	}
	for _, ms := range by {
		for j, mi := range ms {
			par[mi] = -1
			m := &t.Messages[mi]
			best := int64(-1 << 62)
			for k := 0; k < j; k++ {
				q := &t.Messages[ms[k]]
				if q.Dst == m.Src && q.Recv <= m.Send && q.Recv >= best {
					best, par[mi] = q.Recv, ms[k]
				}
			}
		}
	}
	return par
}

func TestDebugJoint(t *testing.T) {
	tr := simulate(simConfig{clients: 10, perClient: 200, think: gauss{ms(5), ms(5.0 / 3)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(10, false), seed: 1, clientName: "CLIENT"})
	if p := os.Getenv("WAP5_DEBUG_TRACE"); p != "" {
		tr, _ = trace.ReadFile(p)
	}
	tr.Sort()
	o := Options{}.Defaults()
	l := newLinker(tr, o, nil)
	rev := l.reverseEdges()
	r := l.pairRPCs()
	wrongPair := 0
	for i := range tr.Messages {
		if p := r.peer[i]; p >= 0 && tr.Messages[p].Truth != tr.Messages[i].Truth {
			wrongPair++
		}
	}
	l.step1(rev)
	j := &joint{linker: l, r: r}
	j.base = make([]dist, len(l.d))
	for e, d := range l.d {
		j.base[e] = newDist(1, d)
	}
	j.mod = newModels()
	n := len(l.msgs)
	j.parent = make([]int32, n)
	j.prob = make([]float32, n)
	j.span = make([]int32, n)
	j.kids = make([]uint8, n)
	j.callSpan = make([]int32, n)
	j.unsure = make([]bool, n)
	j.initCaches()
	j.countPriors()
	tp := truthParents(tr)
	for it := 0; it < 4; it++ {
		j.pass(rev, it >= 2, it == 3)
		j.refit(it < 2)
		bad := map[string]int{}
		for i := range tr.Messages {
			if j.parent[i] != tp[i] {
				m := &tr.Messages[i]
				k := fmt.Sprintf("%s>%s role%d", tr.NodeName(m.Src), tr.NodeName(m.Dst), r.role[i])
				bad[k]++
			}
		}
		var ks []string
		for k := range bad {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		t.Logf("iter %d wrong pairs %d", it, wrongPair)
		for _, k := range ks {
			t.Logf("  %s: %d", k, bad[k])
		}
	}
	for k, c := range j.mod.class {
		if c.mom.n > 50 {
			t.Logf("class %s>%s>%s reply=%v n=%v k=%.1f mean=%.2fms", tr.NodeName(k.trig), tr.NodeName(k.node), tr.NodeName(k.act), k.reply, c.mom.n, c.d.k, c.d.mean()*1000)
		}
	}
}

func TestDebugCost(t *testing.T) {
	tr := simulate(simConfig{clients: 10, perClient: 200, think: gauss{ms(5), ms(5.0 / 3)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(10, false), seed: 1, clientName: "CLIENT"})
	if p := os.Getenv("WAP5_DEBUG_TRACE"); p != "" {
		tr, _ = trace.ReadFile(p)
	}
	tr.Sort()
	o := Options{}.Defaults()
	l := newLinker(tr, o, nil)
	rev := l.reverseEdges()
	r := l.pairRPCs()
	l.step1(rev)
	j := &joint{linker: l, r: r}
	j.base = make([]dist, len(l.d))
	for e, d := range l.d {
		j.base[e] = newDist(1, d)
	}
	j.mod = newModels()
	n := len(l.msgs)
	j.parent = make([]int32, n)
	j.prob = make([]float32, n)
	j.span = make([]int32, n)
	j.kids = make([]uint8, n)
	j.callSpan = make([]int32, n)
	j.unsure = make([]bool, n)
	j.initCaches()
	j.countPriors()
	sweepHook = func(o int32, c []int32, cc []float64, sc float64) {
		if o == 90 || o == 110 {
			t.Logf("sweep %d: cands %v costs %v spont %.2f", o, c, cc, sc)
		}
	}
	defer func() { sweepHook = nil }()
	assignHook = func(k int32, cols []int32, row []float64) {
		if k == 90 {
			t.Logf("assign %d: cols %v row %v", k, cols, row)
		}
	}
	defer func() { assignHook = nil }()
	for it := 0; it < 4; it++ {
		j.pass(rev, it >= 2, it == 3)
		if it < 3 {
			j.refit(it < 2)
		}
	}
	for k, c := range j.mod.class {
		if tr.NodeName(k.node) == "AUTH" || tr.NodeName(k.node) == "WS1" {
			cm := moments{}
			for _, x := range c.certain {
				cm.add(float64(x))
			}
			t.Logf("class %s>%s>%s reply=%v certain=%d (mean %.1fms) model k=%.1f mean=%.2fms", tr.NodeName(k.trig), tr.NodeName(k.node), tr.NodeName(k.act), k.reply, len(c.certain), cm.mean()*1000, c.d.k, c.d.mean()*1000)
		}
	}
	for _, k := range []int32{32, 42, 45, 69, 72, 80, 90, 92, 110, 125, 135} {
		p := j.parent[k]
		ps := "-"
		if p >= 0 {
			ps = fmt.Sprintf("%d %s>%s", p, tr.NodeName(tr.Messages[p].Src), tr.NodeName(tr.Messages[p].Dst))
		}
		t.Logf("call %d parent %s span %d prob %.3f", k, ps, j.callSpan[k], j.prob[k])
	}
	for _, name := range []string{"WS1", "AP1", "AUTH"} {
		b, _ := tr.LookupNode(name)
		var ours, truth float64
		wrong := 0
		for _, c := range j.insOf(b) {
			if r.role[c] != roleRequest {
				continue
			}
			var mine, tm []int32
			for _, k := range j.outsOf(b) {
				if r.role[k] != roleRequest {
					continue
				}
				if j.callSpan[k] == c {
					mine = append(mine, k)
				}
				if tr.Messages[k].Truth == tr.Messages[c].Truth {
					tm = append(tm, k)
				}
			}
			a, bb := j.spanCost(b, c, mine), j.spanCost(b, c, tm)
			if fmt.Sprint(mine) != fmt.Sprint(tm) {
				wrong++
				if wrong < 6 {
					t.Logf("%s span %d: ours %v cost %.2f truth %v cost %.2f", name, c, mine, a, tm, bb)
				}
			}
			ours += a
			truth += bb
		}
		t.Logf("%s: ours %.1f truth %.1f wrong spans %d", name, ours, truth, wrong)
	}
}

func TestDebugShow(t *testing.T) {
	tr := simulate(simConfig{clients: 10, perClient: 200, think: gauss{ms(5), ms(5.0 / 3)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(10, false), seed: 1, clientName: "CLIENT"})
	tr.Sort()
	b, _ := tr.LookupNode("WS1")
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if (m.Src == b || m.Dst == b) && i < 400 {
			t.Logf("%4d %s>%s send %.2f recv %.2f truth %d", i, tr.NodeName(m.Src), tr.NodeName(m.Dst), float64(m.Send%1e10)/1e6, float64(m.Recv%1e10)/1e6, m.Truth)
		}
	}
}

func TestDebugAdmissible(t *testing.T) {
	tr, _ := trace.ReadFile(os.Getenv("WAP5_DEBUG_TRACE"))
	tr.Sort()
	o := Options{}.Defaults()
	l := newLinker(tr, o, nil)
	rev := l.reverseEdges()
	r := l.pairRPCs()
	l.step1(rev)
	j := &joint{linker: l, r: r}
	j.base = make([]dist, len(l.d))
	for e, d := range l.d {
		j.base[e] = newDist(1, d)
	}
	j.mod = newModels()
	n := len(l.msgs)
	j.parent = make([]int32, n)
	j.prob = make([]float32, n)
	j.span = make([]int32, n)
	j.kids = make([]uint8, n)
	j.callSpan = make([]int32, n)
	j.unsure = make([]bool, n)
	j.initCaches()
	j.countPriors()
	b, _ := tr.LookupNode(os.Getenv("WAP5_DEBUG_NODE"))
	ns := nodeSpans{sidx: j.spanIdx}
	for _, c := range j.insOf(b) {
		if r.role[c] == roleRequest {
			p := r.peer[c]
			ns.sidx[c] = int32(len(ns.req))
			ns.req = append(ns.req, c)
			ns.longest = max(ns.longest, j.msgs[p].Send-j.msgs[c].Recv)
		}
	}
	found, total, cands := 0, 0, 0
	for _, k := range j.outsOf(b) {
		if r.role[k] != roleRequest {
			continue
		}
		total++
		j.admissibleAll(b, &ns, k, j.insOf(b), func(s int32) {
			cands++
			if tr.Messages[ns.req[s]].Truth == tr.Messages[k].Truth {
				found++
			}
		})
	}
	for p, c := range ns.req[:12] {
		t.Logf("span %d req %d recv %.1f reply send %.1f", p, c, float64(j.msgs[c].Recv%1e11)/1e6, float64(j.msgs[r.peer[c]].Send%1e11)/1e6)
	}
	t.Logf("need(90) %.1f", float64(j.need(b, 90)%1e11)/1e6)
	t.Logf("AUTH calls %d, truth span admissible %d, mean candidates %.2f, longest %v", total, found, float64(cands)/float64(total), ns.longest)
}

func TestDebugWhy(t *testing.T) {
	tr, _ := trace.ReadFile(os.Getenv("WAP5_DEBUG_TRACE"))
	tr.Sort()
	for _, i := range []int{12, 18, 21, 44, 50, 32, 42, 45, 69, 72, 90, 92, 110, 125, 135} {
		m := &tr.Messages[i]
		t.Logf("%4d %s>%s send %.1f recv %.1f truth %d kind %v", i, tr.NodeName(m.Src), tr.NodeName(m.Dst), float64(m.Send%1e11)/1e6, float64(m.Recv%1e11)/1e6, m.Truth, m.Kind)
	}
}
