package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"wap5/trace"
)

// ReportData is what the text report of `wap5 analyze` shows: the trace,
// the clock estimate and the inferred paths of one run of the pipeline.
type ReportData struct {
	Inputs []string
	Trace  *trace.Trace
	Clock  *ClockSummary // nil: clocks not estimated
	Paths  *trace.Paths  // linking's paths
	Method string        // linking method, for the heading
	// EndToEnd is each pattern's response time (by rank) at the node that
	// sent its first message; without it a root call's Latency is shown.
	EndToEnd map[int]trace.Stats
	// Nesting, when set, adds a line on Project 5's nesting view.
	Nesting  *trace.Paths
	Warnings []string
}

// ClockSummary is a clock estimate in plain values (what `wap5 skew` finds).
type ClockSummary struct {
	Reference string
	Applied   bool   // the trace's times were moved onto the reference clock
	Note      string // why not applied, or other remarks
	Nodes     []ClockRow
}

// ClockRow is one node's clock against the reference. Status is
// "reference", "corrected", "uncorrectable" or "no-clock"; times in ns.
type ClockRow struct {
	Node     string
	Status   string
	Offset   int64
	DriftPPM float64
	Error    int64
	FitError int64
	Samples  int
	Steps    int
}

// ReportOptions control Report.
type ReportOptions struct {
	Top      int // path patterns shown (default 5)
	Warnings int // warnings shown per stage (default 5)
}

// SkewJSON writes a clock estimate in the contract's `wap5 skew --json`
// form: the reference and every node whose clock is related to it.
func SkewJSON(w io.Writer, c *ClockSummary) error {
	type off struct {
		Node     string  `json:"node"`
		OffsetS  float64 `json:"offset_s"`
		DriftPPM float64 `json:"drift_ppm"`
		ErrorS   float64 `json:"error_s"`
		Samples  int     `json:"samples"`
	}
	out := struct {
		Reference string `json:"reference"`
		Offsets   []off  `json:"offsets"`
	}{Reference: c.Reference, Offsets: []off{}}
	for _, n := range c.Nodes {
		if n.Status != "reference" && n.Status != "corrected" {
			continue
		}
		out.Offsets = append(out.Offsets, off{n.Node, round(float64(n.Offset)/1e9) + 0, round(n.DriftPPM) + 0,
			round(float64(n.Error)/1e9) + 0, n.Samples})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}

// Report writes the readable report of one analysis: what was traced, the
// message counts between nodes, the clock offsets with their error bounds,
// the top path patterns as indented trees with the wait inside each node and
// the network delay of each edge, and a summary of the warnings.
func Report(w io.Writer, d *ReportData, o *ReportOptions) error {
	opt := ReportOptions{Top: 5, Warnings: 5}
	if o != nil {
		if o.Top > 0 {
			opt.Top = o.Top
		}
		if o.Warnings > 0 {
			opt.Warnings = o.Warnings
		}
	}
	bw := bufio.NewWriter(w)
	t := d.Trace
	fmt.Fprintf(bw, "wap5 analysis of %s\n", strings.Join(d.Inputs, " "))
	if t != nil {
		reportTrace(bw, t, d.Clock != nil && d.Clock.Applied)
	}
	if d.Clock != nil {
		reportClock(bw, d.Clock)
	}
	if d.Paths != nil {
		reportPaths(bw, d, opt.Top)
	}
	if d.Nesting != nil {
		calls := 0
		for _, p := range d.Nesting.Patterns {
			calls += p.Count
		}
		fmt.Fprintf(bw, "\nNesting (Project 5, call trees only): %s, %s; see nest.json\n", plural(len(d.Nesting.Patterns), "pattern"),
			plural(calls, "call tree"))
	}
	reportWarnings(bw, d.Warnings, opt.Warnings)
	return bw.Flush()
}

type pairKey struct{ src, dst trace.NodeID }

type pairStats struct {
	n, bytes int64
	net      trace.Accumulator
}

func reportTrace(w io.Writer, t *trace.Trace, corrected bool) {
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	type nodeStats struct{ sent, recv, bout, bin int64 }
	nodes := make([]nodeStats, len(t.Nodes))
	pairs := map[pairKey]*pairStats{}
	for i := range t.Messages {
		m := &t.Messages[i]
		for _, x := range [2]int64{m.Send, m.Recv} {
			if x != trace.Unknown {
				first, last = min(first, x), max(last, x)
			}
		}
		nodes[m.Src].sent++
		nodes[m.Src].bout += m.Bytes
		nodes[m.Dst].recv++
		nodes[m.Dst].bin += m.Bytes
		k := pairKey{m.Src, m.Dst}
		p := pairs[k]
		if p == nil {
			p = &pairStats{}
			pairs[k] = p
		}
		p.n++
		p.bytes += m.Bytes
		if m.Send != trace.Unknown && m.Recv != trace.Unknown {
			p.net.Add(float64(m.Recv-m.Send)/1e9, 1)
		}
	}
	traced := 0
	for _, n := range t.Nodes {
		if !n.Untraced {
			traced++
		}
	}
	fmt.Fprintf(w, "%d messages between %d nodes (%d traced)", len(t.Messages), len(t.Nodes), traced)
	if first <= last {
		fmt.Fprintf(w, " over %s s, %s to %s UTC", fmtSeconds(last-first), utc(first, "2006-01-02 15:04:05.000000"), utc(last, "15:04:05.000000"))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "\nNodes")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  node\ttraced\tsent\treceived\tbytes out\tbytes in\t")
	order := make([]int, len(t.Nodes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return t.Nodes[order[a]].Name < t.Nodes[order[b]].Name })
	for _, i := range order {
		n, s := t.Nodes[i], nodes[i]
		tr := "yes"
		if n.Untraced {
			tr = "no"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t\n", n.Name, tr, s.sent, s.recv, s.bout, s.bin)
	}
	tw.Flush()

	keys := make([]pairKey, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		pa, pb := pairs[keys[a]], pairs[keys[b]]
		if pa.n != pb.n {
			return pa.n > pb.n
		}
		na, nb := t.NodeName(keys[a].src)+" "+t.NodeName(keys[a].dst), t.NodeName(keys[b].src)+" "+t.NodeName(keys[b].dst)
		return na < nb
	})
	clock := "each end's own clock"
	if corrected {
		clock = "offset-corrected"
	}
	fmt.Fprintf(w, "\nMessages between nodes (network delay %s, ms)\n", clock)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  from → to\tmessages\tbytes\tdelay mean\t±sd\tmin\tmax\t")
	for _, k := range keys {
		p := pairs[k]
		s := p.net.Stats()
		if s.Known() {
			fmt.Fprintf(tw, "  %s → %s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", t.NodeName(k.src), t.NodeName(k.dst), p.n, p.bytes,
				s.Mean*1e3, s.Std*1e3, s.Min*1e3, s.Max*1e3)
		} else {
			fmt.Fprintf(tw, "  %s → %s\t%d\t%d\t-\t-\t-\t-\t\n", t.NodeName(k.src), t.NodeName(k.dst), p.n, p.bytes)
		}
	}
	tw.Flush()
}

func fmtSeconds(ns int64) string { return fmt.Sprintf("%.3f", float64(ns)/1e9) }

func utc(ns int64, layout string) string { return time.Unix(0, ns).UTC().Format(layout) }

func reportClock(w io.Writer, c *ClockSummary) {
	state := "applied to the trace"
	if !c.Applied {
		state = "not applied"
	}
	fmt.Fprintf(w, "\nClock offsets against %s (%s)\n", c.Reference, state)
	if c.Note != "" {
		fmt.Fprintf(w, "  %s\n", c.Note)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  node\tstatus\toffset ms\t± bound ms\tdrift ppm\tsamples\tsteps\t")
	for _, n := range c.Nodes {
		switch n.Status {
		case "reference", "corrected":
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%.3f\t%.2f\t%d\t%d\t\n", n.Node, n.Status, signedMs(n.Offset),
				float64(n.Error)/1e6, n.DriftPPM, n.Samples, n.Steps)
		case "uncorrectable":
			fmt.Fprintf(tw, "  %s\t%s\t-\t-\t-\t-\t-\t\n", n.Node, n.Status)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "  (a node's clock reads reference + offset; the bound holds for any delay asymmetry)")
}

// signedMs formats ns as ms with three decimals, without a "-0.000".
func signedMs(ns int64) string {
	s := fmt.Sprintf("%.3f", float64(ns)/1e6)
	if s == "-0.000" {
		return "0.000"
	}
	return s
}

func reportPaths(w io.Writer, d *ReportData, top int) {
	p := d.Paths
	inst, exp := 0, 0.0
	for _, pat := range p.Patterns {
		inst += pat.Count
		exp += pat.Expected
	}
	algo := p.Algorithm
	if d.Method != "" {
		algo += ", method " + d.Method
	}
	fmt.Fprintf(w, "\nPath patterns (%s): %s, %s (expected %.1f)\n", algo, plural(len(p.Patterns), "pattern"),
		plural(inst, "path instance"), exp)
	n := min(top, len(p.Patterns))
	if n < len(p.Patterns) {
		fmt.Fprintf(w, "  top %d shown; all in link.json\n", n)
	}
	fmt.Fprintln(w, "  each line: sender → receiver, then the time the sender waited after receiving the line above it")
	fmt.Fprintln(w, "  (node ms), and the message's one-way network delay (net ms): mean ±sd")
	for _, pat := range p.Patterns[:n] {
		share := 0.0
		if inst > 0 {
			share = 100 * float64(pat.Count) / float64(inst)
		}
		fmt.Fprintf(w, "\n  #%d  %s (%.1f%%), expected %.2f, max prob %.3f", pat.Rank, plural(pat.Count, "instance"), share, pat.Expected, pat.MaxProb)
		if e, ok := d.EndToEnd[pat.Rank]; ok && e.Known() && pat.Root != nil {
			fmt.Fprintf(w, "\n      end to end at %s: %s ms (min %.3f, max %.3f)", pat.Root.From, msStats(e), e.Min*1e3, e.Max*1e3)
		} else if pat.Root != nil && pat.Root.Latency.Known() {
			fmt.Fprintf(w, ", end to end %.3f ms", pat.Root.Latency.Mean*1e3)
		}
		fmt.Fprintln(w)
		if pat.Root == nil {
			continue
		}
		width := 0
		pat.Root.Walk(func(s *trace.Step, depth int) {
			width = max(width, len([]rune(stepLabel(s, depth))))
		})
		fmt.Fprintf(w, "    %-*s %18s %18s\n", width, "", "node ms", "net ms")
		pat.Root.Walk(func(s *trace.Step, depth int) {
			label := stepLabel(s, depth)
			pad := width - len([]rune(label))
			fmt.Fprintf(w, "    %s%s %18s %18s\n", label, strings.Repeat(" ", pad), msStats(s.Wait), msStats(s.Net))
		})
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func stepLabel(s *trace.Step, depth int) string {
	return strings.Repeat("  ", depth) + s.From + " → " + s.To
}

func reportWarnings(w io.Writer, ws []string, per int) {
	if len(ws) == 0 {
		fmt.Fprintln(w, "\nNo warnings.")
		return
	}
	var stages []string
	by := map[string][]string{}
	for _, x := range ws {
		stage, rest, ok := strings.Cut(x, ": ")
		if !ok {
			stage, rest = "other", x
		}
		if _, seen := by[stage]; !seen {
			stages = append(stages, stage)
		}
		by[stage] = append(by[stage], rest)
	}
	fmt.Fprintf(w, "\nWarnings: %d", len(ws))
	for i, s := range stages {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(w, "%s%s %d", sep, s, len(by[s]))
	}
	fmt.Fprintln(w, ")")
	for _, s := range stages {
		l := by[s]
		for i, x := range l {
			if i == per {
				fmt.Fprintf(w, "  %s: ... %d more\n", s, len(l)-per)
				break
			}
			fmt.Fprintf(w, "  %s: %s\n", s, x)
		}
	}
}
