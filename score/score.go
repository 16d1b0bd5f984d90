package score

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"wap5/trace"
)

// Options tune scoring. The zero value is usable.
type Options struct {
	// Top is K, the largest N of the top-N curve and the number of patterns
	// listed (default 20).
	Top int
	// Tolerance forgives a top-N miss whose inferred score is within this
	// fraction of the N-th inferred score (Figure 17's "2% tolerance";
	// default 0.02; negative for none).
	Tolerance float64
	// Aliases rename truth nodes to the names the result uses.
	Aliases map[string]string
	// NoClientAlias keeps client-like truth nodes' own names even when the
	// result has a CLIENT node.
	NoClientAlias bool
	// MinDelay: true delays below it (seconds) get no relative error
	// (default 1 ms).
	MinDelay float64
}

// ClientName is the name of aggregated clients in results (WAP5 §2.5).
const ClientName = "CLIENT"

// Report is the accuracy of a result against the ground truth.
type Report struct {
	Algorithm string `json:"algorithm"`
	View      string `json:"view"` // message trees, call trees or chains
	Truth     struct {
		Messages  int `json:"messages"`  // messages with a truth id
		Instances int `json:"instances"` // truth path instances in the view
		Patterns  int `json:"patterns"`
	} `json:"truth"`
	Inferred struct {
		Patterns  int `json:"patterns"`  // distinct keys
		Instances int `json:"instances"` // listed instances (0 if none)
	} `json:"inferred"`
	Patterns Counts `json:"patterns"`
	// ChainsContained (convolution): truth patterns whose node chain appears
	// inside some inferred chain, a looser "found" than key equality.
	ChainsContained  *Contained      `json:"chains_contained,omitempty"`
	InstancesByCount Counts          `json:"instances_by_count"`
	MessagesByCount  Counts          `json:"messages_by_count"`
	Instances        *InstanceScore  `json:"instances,omitempty"`
	TopN             []TopN          `json:"top_n"`
	Delays           DelaySummary    `json:"delays"`
	Matched          []PatternDelays `json:"matched"` // correctly inferred patterns among the top K, with delays
	Missing          []PatternRef    `json:"missing"` // top-K truth patterns not inferred at all
	False            []PatternRef    `json:"false"`   // top-K inferred patterns that are no truth pattern
	Aliases          map[string]int  `json:"aliases,omitempty"`
	Warnings         []string        `json:"warnings"`
}

// Counts are true positives, false positives and false negatives.
type Counts struct {
	TP        float64 `json:"tp"`
	FP        float64 `json:"fp"`
	FN        float64 `json:"fn"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
}

func (c *Counts) finish() {
	c.Precision, c.Recall = ratio(c.TP, c.TP+c.FP), ratio(c.TP, c.TP+c.FN)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Contained counts truth chains found inside inferred chains.
type Contained struct {
	Found  int     `json:"found"`
	Recall float64 `json:"recall"`
}

// InstanceScore compares listed inferred instances with truth instances by
// message set.
type InstanceScore struct {
	Inferred          int     `json:"inferred"`
	Correct           int     `json:"correct"`     // inferred instances equal to a truth instance
	TruthFound        int     `json:"truth_found"` // truth instances some inferred instance equals
	Precision         float64 `json:"precision"`
	Recall            float64 `json:"recall"`
	WeightedPrecision float64 `json:"weighted_precision"` // by instance probability
	MessagesCorrect   int     `json:"messages_correct"`   // truth messages in a correct instance
	MessagesTotal     int     `json:"messages_total"`
	MessageRate       float64 `json:"message_rate"`
}

// TopN is one point of Figure 17.
type TopN struct {
	N         int     `json:"n"`
	FN        int     `json:"fn"`
	Rate      float64 `json:"rate"`
	FNTol     int     `json:"fn_tol"`
	RateTol   float64 `json:"rate_tol"`
	TruthTopN int     `json:"truth_top_n"` // min(N, truth patterns)
}

// PatternRef names a pattern.
type PatternRef struct {
	Key       string  `json:"key"`
	TruthRank int     `json:"truth_rank,omitempty"`
	Rank      int     `json:"rank,omitempty"`
	Truth     int     `json:"truth_count"`
	Inferred  float64 `json:"inferred_count"`
}

// PatternDelays compares the delays of one correctly inferred pattern.
type PatternDelays struct {
	PatternRef
	Steps []StepDelay `json:"steps"`
}

// StepDelay is one step's true and inferred mean delay.
type StepDelay struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	What     string   `json:"what"` // "wait" or "latency"
	TrueS    float64  `json:"true_s"`
	Inferred float64  `json:"inferred_s"`
	AbsErrS  float64  `json:"abs_err_s"`
	RelErr   *float64 `json:"rel_err"` // null for true delays below MinDelay
}

// DelaySummary aggregates the delay errors of all correctly inferred
// patterns: the mean relative error weighted by each pattern's truth count,
// and the largest over the listed (top-K) patterns.
type DelaySummary struct {
	Steps      int     `json:"steps"`
	MeanRelErr float64 `json:"mean_rel_err"`
	MaxRelErr  float64 `json:"max_rel_err"`
	MeanAbsErr float64 `json:"mean_abs_err_s"`
}

type tpat struct {
	key   string
	count int
	insts []int     // indices into truth instances
	waits []stepAcc // per canonical step
	lats  []stepAcc // nesting: call latency
	size  int       // messages per instance
	rank  int       // 1-based by count
}

type stepAcc struct{ n, sum float64 }

func (a *stepAcc) add(x float64) { a.n++; a.sum += x }
func (a stepAcc) mean() (float64, bool) {
	if a.n == 0 {
		return 0, false
	}
	return a.sum / a.n, true
}

type ipat struct {
	key      string
	rank     int // best rank among merged patterns
	pos      int // position in ranked order
	count    int
	expected float64
	steps    []*trace.Step // of the best-ranked pattern
}

// Score compares inferred paths with the truth trace's truth= ids.
func Score(truth *trace.Trace, inferred *trace.Paths, opts Options) Report {
	if opts.Top <= 0 {
		opts.Top = 20
	}
	if opts.Tolerance == 0 {
		opts.Tolerance = 0.02
	}
	if opts.MinDelay <= 0 {
		opts.MinDelay = 1e-3
	}
	var r Report
	r.Algorithm = inferred.Algorithm
	v := viewOf(inferred.Algorithm)
	r.View = [...]string{"message trees", "call trees", "chains"}[v]

	// 1. Truth instances and causes.
	groups := truthGroups(truth)
	if len(groups) == 0 {
		r.Warnings = append(r.Warnings, "the truth trace has no truth= ids: nothing to score against")
	}
	for _, g := range groups {
		r.Truth.Messages += len(g)
	}
	par := causes(truth, groups)

	// 3 (names first). Aliases, and CLIENT for client-like nodes.
	names := make(namer, len(truth.Nodes))
	for i, n := range truth.Nodes {
		names[i] = n.Name
		if a, ok := opts.Aliases[n.Name]; ok {
			names[i] = a
		}
	}
	identity := func(s string) string { return s }
	if !opts.NoClientAlias && usesName(inferred, ClientName) {
		if _, has := truth.LookupNode(ClientName); !has {
			clients := clientNodes(truth)
			for i, c := range clients {
				if c && names[i] == truth.Nodes[i].Name {
					names[i] = ClientName
					if r.Aliases == nil {
						r.Aliases = map[string]int{}
					}
					r.Aliases[ClientName]++
				}
			}
		}
	}

	// 2. Truth instances in the view, and truth patterns.
	insts := shape(truth, v, names, groups, par)
	r.Truth.Instances = len(insts)
	if v == viewNesting && len(insts) == 0 && len(groups) > 0 {
		r.Warnings = append(r.Warnings, "the truth trace has no kind=call messages: no call trees to compare")
	}
	tpats := map[string]*tpat{}
	for k := range insts {
		in := &insts[k]
		p := tpats[in.key]
		if p == nil {
			p = &tpat{key: in.key, size: len(in.msgs), waits: make([]stepAcc, len(in.steps)), lats: make([]stepAcc, len(in.steps))}
			tpats[in.key] = p
		}
		p.count++
		p.insts = append(p.insts, k)
		truthDelays(truth, v, in, par, p)
		in.steps, in.parent = nil, nil // only the message set is needed from here on
	}
	tlist := make([]*tpat, 0, len(tpats))
	for _, p := range tpats {
		tlist = append(tlist, p)
	}
	slices.SortFunc(tlist, func(a, b *tpat) int {
		if a.count != b.count {
			return b.count - a.count
		}
		return strings.Compare(a.key, b.key)
	})
	for i, p := range tlist {
		p.rank = i + 1
	}
	r.Truth.Patterns = len(tlist)

	// 3. Inferred keys, merged.
	alias := identity
	ipats := map[string]*ipat{}
	var ilist []*ipat
	ranked := slices.Clone(inferred.Patterns)
	slices.SortStableFunc(ranked, func(a, b *trace.Pattern) int { return a.Rank - b.Rank })
	for _, pat := range ranked {
		if pat == nil || pat.Root == nil {
			continue
		}
		key, steps := stepKey(pat.Root, v, alias)
		exp := pat.Expected
		if exp == 0 && pat.Count > 0 && inferred.Algorithm != "linking" {
			exp = float64(pat.Count)
		}
		if p := ipats[key]; p != nil {
			p.count += pat.Count
			p.expected += exp
			continue
		}
		p := &ipat{key: key, rank: pat.Rank, pos: len(ilist), count: pat.Count, expected: exp, steps: steps}
		ipats[key] = p
		ilist = append(ilist, p)
	}
	r.Inferred.Patterns = len(ilist)

	// 4. Patterns.
	for _, p := range tlist {
		if ipats[p.key] != nil {
			r.Patterns.TP++
		} else {
			r.Patterns.FN++
		}
	}
	r.Patterns.FP = float64(len(ilist)) - r.Patterns.TP
	r.Patterns.finish()
	if v == viewConvolution {
		c := &Contained{}
		for _, p := range tlist {
			for _, ip := range ilist {
				if strings.Contains(">"+ip.key+">", ">"+p.key+">") {
					c.Found++
					break
				}
			}
		}
		c.Recall = ratio(float64(c.Found), float64(len(tlist)))
		r.ChainsContained = c
	}

	// 5. Instances and messages by counts.
	truthMsgs := 0
	for _, p := range tlist {
		truthMsgs += p.count * p.size
		got := 0.0
		if ip := ipats[p.key]; ip != nil {
			got = ip.expected
		}
		tp := math.Min(float64(p.count), got)
		r.InstancesByCount.TP += tp
		r.InstancesByCount.FN += float64(p.count) - tp
		r.MessagesByCount.TP += tp * float64(p.size)
		r.MessagesByCount.FN += (float64(p.count) - tp) * float64(p.size)
	}
	for _, ip := range ilist {
		want := 0.0
		size := float64(len(ip.steps))
		if tp := tpats[ip.key]; tp != nil {
			want, size = float64(tp.count), float64(tp.size)
		} else if v == viewNesting {
			size *= 2 // calls and returns
		}
		fp := math.Max(ip.expected-want, 0)
		r.InstancesByCount.FP += fp
		r.MessagesByCount.FP += fp * size
	}
	r.InstancesByCount.finish()
	r.MessagesByCount.finish()

	// 6. Instances by message sets.
	if len(inferred.Instances) > 0 {
		r.Instances = scoreInstances(truth, insts, inferred.Instances, truthMsgs, &r.Warnings)
		r.Inferred.Instances = len(inferred.Instances)
	}

	// 7. Top-N false negatives.
	score := func(p *ipat) float64 {
		if p.expected > 0 {
			return p.expected
		}
		return float64(p.count)
	}
	for n := 1; n <= opts.Top; n++ {
		pt := TopN{N: n, TruthTopN: min(n, len(tlist))}
		var nth float64
		if n <= len(ilist) {
			nth = score(ilist[n-1])
		}
		for _, p := range tlist[:pt.TruthTopN] {
			ip := ipats[p.key]
			if ip != nil && ip.pos < n {
				continue
			}
			pt.FN++
			if ip == nil || opts.Tolerance < 0 || score(ip) < (1-opts.Tolerance)*nth {
				pt.FNTol++
			}
		}
		pt.Rate, pt.RateTol = ratio(float64(pt.FN), float64(pt.TruthTopN)), ratio(float64(pt.FNTol), float64(pt.TruthTopN))
		r.TopN = append(r.TopN, pt)
	}

	// 8. Delays of correctly inferred patterns; listings.
	var wsum, relsum, abssum, abswsum float64
	for _, p := range tlist {
		ip := ipats[p.key]
		if ip == nil {
			if p.rank <= opts.Top {
				r.Missing = append(r.Missing, PatternRef{Key: p.key, TruthRank: p.rank, Truth: p.count})
			}
			continue
		}
		steps := compareDelays(v, p, ip, opts.MinDelay)
		for _, s := range steps {
			r.Delays.Steps++
			abssum += s.AbsErrS * float64(p.count)
			abswsum += float64(p.count)
			if s.RelErr != nil {
				relsum += *s.RelErr * float64(p.count)
				wsum += float64(p.count)
				if p.rank <= opts.Top {
					r.Delays.MaxRelErr = math.Max(r.Delays.MaxRelErr, *s.RelErr)
				}
			}
		}
		if p.rank <= opts.Top {
			r.Matched = append(r.Matched, PatternDelays{PatternRef: PatternRef{Key: p.key, TruthRank: p.rank, Rank: ip.rank,
				Truth: p.count, Inferred: ip.expected}, Steps: steps})
		}
	}
	if wsum > 0 {
		r.Delays.MeanRelErr = relsum / wsum
	}
	if abswsum > 0 {
		r.Delays.MeanAbsErr = abssum / abswsum
	}
	for _, ip := range ilist {
		if tpats[ip.key] == nil && ip.pos < opts.Top {
			r.False = append(r.False, PatternRef{Key: ip.key, Rank: ip.rank, Inferred: ip.expected})
		}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	if r.Matched == nil {
		r.Matched = []PatternDelays{}
	}
	if r.Missing == nil {
		r.Missing = []PatternRef{}
	}
	if r.False == nil {
		r.False = []PatternRef{}
	}
	return r
}

func usesName(p *trace.Paths, name string) bool {
	for _, pat := range p.Patterns {
		if pat == nil || pat.Root == nil {
			continue
		}
		found := false
		pat.Root.Walk(func(s *trace.Step, _ int) { found = found || s.From == name || s.To == name })
		if found {
			return true
		}
	}
	return false
}

// truthDelays adds one truth instance's step delays to its pattern:
// wait = the step's send − its parent's receive (one clock: the sender's);
// nesting: the parent is the parent call, and latency = return received −
// call sent (the caller's clock).
func truthDelays(t *trace.Trace, v view, in *tinst, par []int32, p *tpat) {
	for k, mi := range in.steps {
		m := &t.Messages[mi]
		var pi int32 = -1
		if in.parent[k] >= 0 {
			pi = in.steps[in.parent[k]]
		}
		if pi >= 0 {
			pm := &t.Messages[pi]
			if m.Send != trace.Unknown && pm.Recv != trace.Unknown {
				p.waits[k].add(float64(m.Send-pm.Recv) / 1e9)
			}
		}
		if v == viewNesting && m.Send != trace.Unknown {
			if ret := returnOf(t, in, mi); ret >= 0 && t.Messages[ret].Recv != trace.Unknown {
				p.lats[k].add(float64(t.Messages[ret].Recv-m.Send) / 1e9)
			}
		}
	}
}

// returnOf finds the return of call mi among the instance's messages.
func returnOf(t *trace.Trace, in *tinst, mi int32) int32 {
	c := t.Messages[mi].Call
	for _, x := range in.msgs {
		if x != mi && t.Messages[x].Kind == trace.KindReturn && t.Messages[x].Call == c {
			return x
		}
	}
	return -1
}

func compareDelays(v view, p *tpat, ip *ipat, minDelay float64) []StepDelay {
	var out []StepDelay
	add := func(st *trace.Step, what string, truth stepAcc, inf float64) {
		tm, ok := truth.mean()
		if !ok {
			return
		}
		d := StepDelay{From: st.From, To: st.To, What: what, TrueS: tm, Inferred: inf, AbsErrS: math.Abs(inf - tm)}
		if tm >= minDelay {
			e := d.AbsErrS / tm
			d.RelErr = &e
		}
		out = append(out, d)
	}
	for k, st := range ip.steps {
		if k >= len(p.waits) {
			break
		}
		if w, ok := inferredWait(v, st); ok && k > 0 {
			add(st, "wait", p.waits[k], w)
		}
		if v == viewNesting && st.Latency.Known() {
			add(st, "latency", p.lats[k], st.Latency.Mean)
		}
	}
	return out
}

func inferredWait(v view, st *trace.Step) (float64, bool) {
	if st.Wait.Known() {
		return st.Wait.Mean, true
	}
	if v == viewConvolution && len(st.Delays) > 0 {
		return st.Delays[0], true
	}
	return 0, false
}

func scoreInstances(t *trace.Trace, insts []tinst, inferred []trace.Instance, truthMsgs int, warnings *[]string) *InstanceScore {
	// Each message belongs to one truth instance in tree views: an inferred
	// instance is a truth instance when all its messages belong to the same
	// one and it has as many. Chains share messages: match by set keys.
	owner := make([]int32, len(t.Messages))
	for i := range owner {
		owner[i] = -1
	}
	var byKey map[string]int
	for k := range insts {
		for _, m := range insts[k].msgs {
			if owner[m] >= 0 && byKey == nil {
				byKey = make(map[string]int, len(insts))
			}
			owner[m] = int32(k)
		}
	}
	if byKey != nil {
		for k := range insts {
			byKey[msgKey(insts[k].msgs)] = k
		}
	}
	lookup := func(msgs []int32) (int, bool) {
		if byKey != nil {
			k, ok := byKey[msgKey(msgs)]
			return k, ok
		}
		k := owner[msgs[0]]
		if k < 0 || len(insts[k].msgs) != len(msgs) {
			return 0, false
		}
		for _, m := range msgs {
			if owner[m] != k {
				return 0, false
			}
		}
		return int(k), true
	}
	s := &InstanceScore{Inferred: len(inferred), MessagesTotal: truthMsgs}
	found := make([]bool, len(insts))
	var psum, pcorrect float64
	bad := 0
	for _, in := range inferred {
		msgs := slices.Clone(in.Messages)
		slices.Sort(msgs)
		msgs = slices.Compact(msgs)
		ok := true
		for _, m := range msgs {
			if m < 0 || int(m) >= len(t.Messages) {
				ok = false
			}
		}
		if !ok {
			bad++
			continue
		}
		psum += in.Prob
		if len(msgs) == 0 {
			continue
		}
		k, hit := lookup(msgs)
		if !hit {
			continue
		}
		s.Correct++
		pcorrect += in.Prob
		if !found[k] {
			found[k] = true
			s.TruthFound++
			s.MessagesCorrect += len(insts[k].msgs)
		}
	}
	if bad > 0 {
		*warnings = append(*warnings, fmt.Sprintf("%d inferred instances name messages outside the truth trace (wrong trace?)", bad))
	}
	s.Precision = ratio(float64(s.Correct), float64(s.Inferred))
	s.Recall = ratio(float64(s.TruthFound), float64(len(insts)))
	s.WeightedPrecision = ratio(pcorrect, psum)
	s.MessageRate = ratio(float64(s.MessagesCorrect), float64(s.MessagesTotal))
	return s
}
