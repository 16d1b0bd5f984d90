package score

import (
	"slices"
	"strings"
	"testing"

	"wap5/trace"
	"wap5/tracegen"
)

// truthPaths turns the truth into a result of the given view, as a perfect
// algorithm would report it: one pattern per truth key, every instance.
func truthPaths(tr *trace.Trace, algorithm string) *trace.Paths {
	v := viewOf(algorithm)
	groups := truthGroups(tr)
	par := causes(tr, groups)
	names := make(namer, len(tr.Nodes))
	for i, n := range tr.Nodes {
		names[i] = n.Name
	}
	insts := shape(tr, v, names, groups, par)
	p := &trace.Paths{Algorithm: algorithm}
	rank := map[string]*trace.Pattern{}
	for _, in := range insts {
		pat := rank[in.key]
		if pat == nil {
			steps := make([]*trace.Step, len(in.steps))
			for k, mi := range in.steps {
				m := &tr.Messages[mi]
				steps[k] = &trace.Step{From: names[m.Src], To: names[m.Dst], Delays: []float64{}}
				if in.parent[k] >= 0 {
					ps := steps[in.parent[k]]
					ps.Children = append(ps.Children, steps[k])
				}
			}
			pat = &trace.Pattern{Rank: len(p.Patterns) + 1, MaxProb: 1, Root: steps[0]}
			rank[in.key] = pat
			p.Patterns = append(p.Patterns, pat)
		}
		pat.Count++
		pat.Expected++
		p.Instances = append(p.Instances, trace.Instance{Pattern: pat.Rank, Prob: 1, Messages: in.msgs})
	}
	// Rank as the truth ranks: by count, then key.
	keys := map[*trace.Pattern]string{}
	for k, pat := range rank {
		keys[pat] = k
	}
	old := map[int]int{}
	slices.SortStableFunc(p.Patterns, func(a, b *trace.Pattern) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(keys[a], keys[b])
	})
	for i, pat := range p.Patterns {
		old[pat.Rank] = i + 1
		pat.Rank = i + 1
	}
	for i := range p.Instances {
		p.Instances[i].Pattern = old[p.Instances[i].Pattern]
	}
	return p
}

// The truth, reported as a perfect algorithm would, scores 1 in every view.
// children-parallel has branching trees, so chains share messages.
func TestTruthAgainstItself(t *testing.T) {
	for _, file := range []string{"cdn.gen", "children-parallel.gen"} {
		cfg, err := tracegen.ParseConfigFile("../testdata/gen/" + file)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Duration, cfg.Messages = 0, 5000
		tr, err := tracegen.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, alg := range []string{"linking", "nesting", "convolution"} {
			r := Score(tr, truthPaths(tr, alg), Options{Top: 5})
			if r.Patterns.Precision != 1 || r.Patterns.Recall != 1 || r.Instances.Precision != 1 || r.Instances.Recall != 1 ||
				r.InstancesByCount.Precision != 1 || r.MessagesByCount.Recall != 1 || r.TopN[4].FN != 0 {
				t.Errorf("%s %s: the truth scored against itself: %+v %+v %+v", file, alg, r.Patterns, r.Instances, r.TopN)
			}
		}
	}
}

func BenchmarkScore(b *testing.B) {
	cfg, err := tracegen.ParseConfigFile("../testdata/gen/multitier.gen")
	if err != nil {
		b.Fatal(err)
	}
	tr, err := tracegen.Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, alg := range []string{"linking", "nesting"} {
		p := truthPaths(tr, alg)
		b.Run(alg, func(b *testing.B) {
			for b.Loop() {
				Score(tr, p, Options{})
			}
			b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
