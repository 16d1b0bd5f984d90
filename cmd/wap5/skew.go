package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"wap5/skew"
	"wap5/trace"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "skew",
			Usage:     "clock offset and drift of every node relative to a reference node",
			ArgsUsage: "TRACE",
			Description: "Estimates each node's clock offset (and drift) from the one-way delays of messages " +
				"exchanged in both directions (Paxson's minimum filtering, Moon et al.'s LP lower envelope), " +
				"combined over all node pairs by weighted least squares. A node's clock reads reference + offset " +
				"(+ drift over time). error_s bounds the error assuming only that one-way delays are not negative, " +
				"so it covers any delay asymmetry; fit_s is the standard error if delays are symmetric. " +
				"With -o the trace is written with its times corrected onto the reference clock and the " +
				"corrections recorded as `# wap5 clock` lines.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "machine-readable output"},
				&cli.StringFlag{Name: "reference", Usage: "measure clocks against `NODE` (default: the node with the most two-way messages)"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the corrected trace to `FILE`"},
				&cli.BoolFlag{Name: "binary", Usage: "write -o in the binary trace form"},
				&cli.BoolFlag{Name: "pairs", Usage: "also list every node pair's estimate (text output)"},
				&cli.BoolFlag{Name: "no-drift", Usage: "estimate constant offsets only"},
				&cli.BoolFlag{Name: "no-steps", Usage: "do not look for clock steps"},
			},
			Action: skewAction,
		}
	})
}

func skewAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("skew wants one TRACE, got %d arguments", c.NArg())
	}
	if c.Bool("binary") && c.String("output") == "" {
		return usagef("--binary needs -o FILE")
	}
	t, err := trace.ReadFile(c.Args().First())
	if err != nil {
		return err
	}
	for _, w := range t.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	res, err := skew.Estimate(t, skew.Options{
		Reference: c.String("reference"),
		NoDrift:   c.Bool("no-drift"),
		NoSteps:   c.Bool("no-steps"),
	})
	if err != nil {
		return fmt.Errorf("%s: %w", c.Args().First(), err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	if out := c.String("output"); out != "" {
		if err := skew.Apply(t, res.Corrections()); err != nil {
			return fmt.Errorf("%s: %w", c.Args().First(), err)
		}
		if err := trace.WriteFile(out, t, c.Bool("binary")); err != nil {
			return err
		}
	}
	sort.SliceStable(res.Nodes, func(i, j int) bool { return res.Nodes[i].Name < res.Nodes[j].Name })
	if c.Bool("json") {
		return writeSkewJSON(c.App.Writer, res)
	}
	return writeSkewText(c.App.Writer, t, res, c.Bool("pairs"))
}

type skewJSON struct {
	Reference string           `json:"reference"`
	Offsets   []skewJSONOffset `json:"offsets"`
}

type skewJSONOffset struct {
	Node     string  `json:"node"`
	OffsetS  float64 `json:"offset_s"`
	DriftPPM float64 `json:"drift_ppm"`
	ErrorS   float64 `json:"error_s"`
	Samples  int     `json:"samples"`
}

// writeSkewJSON writes the contract's form: the reference and every node
// whose clock could be related to it (uncorrectable nodes are warnings).
func writeSkewJSON(w io.Writer, res *skew.Result) error {
	out := skewJSON{Offsets: []skewJSONOffset{}}
	for _, n := range res.Nodes {
		if n.Node == res.Reference {
			out.Reference = n.Name
		}
		if n.Status != skew.Reference && n.Status != skew.Corrected {
			continue
		}
		out.Offsets = append(out.Offsets, skewJSONOffset{Node: n.Name, OffsetS: round9(float64(n.Offset) / 1e9),
			DriftPPM: round9(n.DriftPPM), ErrorS: round9(float64(n.Error) / 1e9), Samples: n.Samples})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}

func round9(x float64) float64 { return math.Round(x*1e9)/1e9 + 0 }

func writeSkewText(w io.Writer, t *trace.Trace, res *skew.Result, pairs bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "reference %s; offsets at %s (reference clock)\n", t.NodeName(res.Reference), trace.FormatTime(res.T0))
	tw := tabwriter.NewWriter(bw, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tstatus\toffset_s\tdrift_ppm\terror_s\tfit_s\tsamples\tsteps\t")
	steps := map[trace.NodeID]int{}
	for _, s := range res.Steps {
		steps[s.Node]++
	}
	for _, n := range res.Nodes {
		switch n.Status {
		case skew.Reference, skew.Corrected:
			fmt.Fprintf(tw, "%s\t%s\t%.6f\t%.2f\t%.6f\t%.6f\t%d\t%d\t\n", n.Name, n.Status, float64(n.Offset)/1e9, n.DriftPPM,
				float64(n.Error)/1e9, float64(n.FitError)/1e9, n.Samples, steps[n.Node])
		case skew.Uncorrectable:
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t\n", n.Name, n.Status)
		}
	}
	tw.Flush()
	if len(res.Steps) > 0 {
		fmt.Fprintln(bw, "\nclock steps:")
		for _, s := range res.Steps {
			fmt.Fprintf(bw, "  %s at %s (its clock): %+.6f s\n", t.NodeName(s.Node), trace.FormatTime(s.At), float64(s.Jump)/1e9)
		}
	}
	if pairs {
		fmt.Fprintln(bw, "\npairs (offset of b's clock − a's, symmetric-delay estimate):")
		tw := tabwriter.NewWriter(bw, 0, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "a\tb\toffset_s\tdrift_ppm\tmin_rtt_s\tnoise_s\ta→b\tb→a\tused\t")
		for _, p := range res.Pairs {
			used := "yes"
			if p.Weight < 1 {
				used = "set aside"
			}
			fmt.Fprintf(tw, "%s\t%s\t%.6f\t%.2f\t%.6f\t%.6f\t%d\t%d\t%s\t\n", t.NodeName(p.A), t.NodeName(p.B), float64(p.Offset)/1e9,
				p.DriftPPM, float64(p.MinRTT)/1e9, float64(p.Noise)/1e9, p.Samples[0], p.Samples[1], used)
		}
		tw.Flush()
	}
	return bw.Flush()
}
