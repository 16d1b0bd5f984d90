package render

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"

	"wap5/trace"
)

// LinkTextOptions control LinkText.
type LinkTextOptions struct {
	Top        int  // patterns to show (0: all)
	Histograms bool // draw each step's node-delay histogram (WAP5 Figure 11)
	// Counts, when set, are the whole pattern list's for the first line,
	// of which p.Patterns holds the first ones (at least the shown ones):
	// for a caller that kept only those.
	Counts *LinkCounts
}

// LinkCounts are a pattern list's counts for LinkText's first line: its
// patterns, and their instances and expected counts summed in rank order.
type LinkCounts struct {
	Patterns  int
	Instances int
	Expected  float64
}

// LinkText writes linking results as a readable table: one block per
// pattern with its scores (WAP5 §6.6) and its tree of steps, each with the
// mean (± standard deviation) network delay and node delay in milliseconds.
func LinkText(w io.Writer, p *trace.Paths, o *LinkTextOptions) error {
	if o == nil {
		o = &LinkTextOptions{}
	}
	bw := bufio.NewWriter(w)
	n := len(p.Patterns)
	if o.Top > 0 && o.Top < n {
		n = o.Top
	}
	total, inst, exp := len(p.Patterns), 0, 0.0
	if c := o.Counts; c != nil {
		total, inst, exp = c.Patterns, c.Instances, c.Expected
	} else {
		for _, pat := range p.Patterns {
			inst += pat.Count
			exp += pat.Expected
		}
	}
	fmt.Fprintf(bw, "%s: %d patterns, %d instances (expected %.1f)", p.Algorithm, total, inst, exp)
	if n < total {
		fmt.Fprintf(bw, "; top %d shown", n)
	}
	fmt.Fprintln(bw)
	for _, pat := range p.Patterns[:n] {
		fmt.Fprintf(bw, "\n#%d  count %d  expected %.2f  max_prob %.3f", pat.Rank, pat.Count, pat.Expected, pat.MaxProb)
		if mp, ok := pat.Metrics["mean_prob"]; ok {
			fmt.Fprintf(bw, "  mean_prob %.3f", mp)
		}
		if v, ok := pat.Metrics["expected_sqrt_count"]; ok {
			fmt.Fprintf(bw, "  expected/√count %.2f", v)
		}
		fmt.Fprintln(bw)
		if pat.Root == nil {
			continue
		}
		fmt.Fprintf(bw, "    %-40s %18s %18s\n", "step", "net ms", "node ms")
		pat.Root.Walk(func(s *trace.Step, depth int) {
			label := strings.Repeat("  ", depth) + s.From + " → " + s.To
			fmt.Fprintf(bw, "    %-40s %18s %18s\n", label, msStats(s.Net), msStats(s.Wait))
			if o.Histograms && s.Wait.Hist != nil {
				writeHist(bw, strings.Repeat("  ", depth+3), s.Wait.Hist)
			}
		})
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintf(bw, "\n%d warnings\n", len(p.Warnings))
	}
	return bw.Flush()
}

func msStats(s trace.Stats) string {
	if !s.Known() {
		return "-"
	}
	return fmt.Sprintf("%.3f ±%.3f", s.Mean*1e3, s.Std*1e3)
}

// writeHist draws the non-empty span of a log histogram as bars.
func writeHist(w io.Writer, indent string, h *trace.Histogram) {
	lo, hi := -1, -1
	top := 0.0
	for i, c := range h.Counts {
		if c > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
			top = math.Max(top, c)
		}
	}
	if lo < 0 {
		return
	}
	// Merge bins so that at most 12 lines are drawn.
	step := (hi-lo)/12 + 1
	for i := lo; i <= hi; i += step {
		c := 0.0
		for k := i; k < i+step && k <= hi; k++ {
			c += h.Counts[k]
		}
		bar := int(math.Round(40 * c / (top * float64(step))))
		fmt.Fprintf(w, "%s%9.3f ms |%s\n", indent, h.Edge(i)*1e3, strings.Repeat("█", bar))
	}
}
