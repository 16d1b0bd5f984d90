package render

import (
	"bytes"
	"encoding/json"
	"testing"

	"wap5/trace"
)

// oneShot is JSON as one Encode of the whole document: what JSON writes a
// pattern at a time must be byte for byte the same.
func oneShot(t *testing.T, p *trace.Paths) string {
	out := jsonPaths{Algorithm: p.Algorithm, Warnings: p.Warnings}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	out.Patterns = []any{}
	for _, pat := range p.Patterns {
		switch p.Algorithm {
		case "convolution":
			out.Patterns = append(out.Patterns, convolutionPattern(pat))
		case "nesting":
			out.Patterns = append(out.Patterns, jsonNestPattern{Rank: pat.Rank, Count: pat.Count, Root: nestStep(pat.Root), Metrics: pat.Metrics})
		default:
			out.Patterns = append(out.Patterns, jsonLinkPattern{Rank: pat.Rank, Count: pat.Count, Expected: pat.Expected,
				MaxProb: pat.MaxProb, Root: linkStep(pat.Root, true), Metrics: pat.Metrics})
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestJSONPatternAtATime(t *testing.T) {
	st := func(mean float64) trace.Stats {
		var a trace.Accumulator
		a.Add(mean, 1)
		a.Add(mean*2, 1)
		return a.Stats()
	}
	tree := func(n int) *trace.Step {
		root := &trace.Step{From: "a<&>", To: "b\n\"x\"", Count: n, Net: st(0.001), Wait: st(0.002), Latency: st(0.5), Delays: []float64{0.1, 0.25}}
		for i := 0; i < n; i++ {
			root.Children = append(root.Children, &trace.Step{From: "b", To: "c", Count: i, Latency: st(float64(i) / 10), Wait: st(0.01)})
		}
		return root
	}
	for _, alg := range []string{"nesting", "linking", "convolution"} {
		for _, np := range []int{0, 1, 3} {
			for _, warn := range [][]string{nil, {}, {"w1", "patterns: [] \"patterns\": []"}} {
				p := &trace.Paths{Algorithm: alg, Warnings: warn}
				for i := 0; i < np; i++ {
					p.Patterns = append(p.Patterns, &trace.Pattern{Rank: i + 1, Count: 10 - i, Expected: 9.5, MaxProb: 0.75, Root: tree(i),
						Metrics: map[string]float64{"depth": 2, "calls": float64(i)}})
				}
				var got bytes.Buffer
				if err := JSON(&got, p); err != nil {
					t.Fatal(err)
				}
				if want := oneShot(t, p); got.String() != want {
					t.Errorf("%s, %d patterns, warnings %q:\n%s\nwant\n%s", alg, np, warn, got.String(), want)
				}
			}
		}
	}
}
