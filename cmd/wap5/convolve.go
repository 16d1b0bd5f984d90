package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"wap5/convolution"
	"wap5/internal/hugemem"
	"wap5/trace"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "convolve",
			Usage:     "convolution algorithm (Project 5 §5.2): linear causal paths from timing signals",
			ArgsUsage: "TRACE",
			Description: "Turns each edge's messages into √-count signals at quantum μ, cross-correlates arrivals " +
				"at a node with its departures by FFT, and follows the spikes from each root node into linear " +
				"paths with delays and counts. Works on any message trace, RPC or not. μ defaults to one " +
				"chosen from the trace's delays (printed on stderr).",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "machine-readable output (the contract's JSON)"},
				&cli.Float64Flag{Name: "quantum", Usage: "time quantum μ in `SECONDS` (default: chosen from the trace)"},
				&cli.StringFlag{Name: "time", Value: "local", Usage: "local (each node's own clock) or send (sender timestamps only)"},
				&cli.Float64Flag{Name: "n", Value: 4, Usage: "spike threshold, standard deviations above the mean"},
				&cli.Float64Flag{Name: "s", Value: 3, Usage: "dip between spikes, standard deviations above the mean"},
				&cli.DurationFlag{Name: "tolerance", Usage: "v: matching tolerance around a spike (default μ)"},
				&cli.DurationFlag{Name: "max-delay", Usage: "longest causal delay looked for (default a tenth of the trace, at most 2000 μ)"},
				&cli.IntFlag{Name: "min-count", Value: 10, Usage: "drop edges with fewer messages"},
				&cli.Float64Flag{Name: "min-fraction", Value: 0.1, Usage: "drop edges with less than this fraction of their parent edge's messages"},
				&cli.Float64Flag{Name: "min-root-fraction", Value: 0.03, Usage: "drop edges with less than this fraction of their path's first edge's messages"},
				&cli.IntFlag{Name: "max-correlations", Value: 5000, Usage: "bound on cross-correlations (0: none; a cut search is warned about)"},
				&cli.BoolFlag{Name: "through-roots", Usage: "continue paths that reach a root node"},
				&cli.IntFlag{Name: "max-depth", Value: 12, Usage: "edges per path"},
				&cli.IntFlag{Name: "max-repeat", Value: 2, Usage: "times one edge may occur on a path"},
				&cli.Float64Flag{Name: "derived", Value: 0.5, Usage: "overlap of last-edge messages that marks a path derived (negative: keep all)"},
				&cli.StringSliceFlag{Name: "root", Usage: "root `NODE` (repeatable; default: nodes that send first)"},
				&cli.BoolFlag{Name: "fan-out", Usage: "let one message cause departures at several delays"},
				&cli.IntFlag{Name: "min-paths", Usage: "report only paths with at least `N` messages"},
				&cli.IntFlag{Name: "top", Usage: "show only the top `N` patterns (text default 20)"},
			},
			Action: convolveAction,
		}
	})
}

func convolveAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("convolve wants one TRACE, got %d arguments", c.NArg())
	}
	o := convolution.DefaultOptions()
	switch c.String("time") {
	case "local":
	case "send":
		o.Time = convolution.TimeSend
	default:
		return usagef("--time %q: want local or send", c.String("time"))
	}
	q := c.Float64("quantum")
	if q < 0 || math.IsNaN(q) || q > 1e6 {
		return usagef("--quantum %v: want a positive number of seconds", q)
	}
	o.Quantum = time.Duration(q * 1e9)
	o.N, o.S = c.Float64("n"), c.Float64("s")
	if o.N <= 0 || o.S <= 0 || o.S >= o.N {
		return usagef("--n and --s must be positive with s < n")
	}
	o.Tolerance, o.MaxDelay = c.Duration("tolerance"), c.Duration("max-delay")
	o.MinCount, o.MinFraction = c.Int("min-count"), c.Float64("min-fraction")
	o.MaxDepth, o.MaxRepeat = c.Int("max-depth"), c.Int("max-repeat")
	o.DerivedOverlap, o.Roots, o.FanOut = c.Float64("derived"), c.StringSlice("root"), c.Bool("fan-out")
	o.MinRootFraction, o.MaxCorrelations, o.ThroughRoots = c.Float64("min-root-fraction"), c.Int("max-correlations"), c.Bool("through-roots")
	if o.Tolerance < 0 || o.MaxDelay < 0 || o.MaxDepth < 1 || o.MaxRepeat < 1 || c.Int("top") < 0 || o.MaxCorrelations < 0 || o.MinCount < 0 {
		return usagef("--tolerance, --max-delay, --min-count and --max-correlations must not be negative; --max-depth and --max-repeat at least 1")
	}
	if os.Getenv("GOGC") == "" {
		// The trace, the signals and the cached edge spectra are most of
		// what the command allocates, and live to its end: heap in huge
		// pages (13k → 1.4k page faults on the 202k-message mt-config
		// trace) and no collections to speak of.
		hugemem.Reserve(convolveReserve(c.Args().First()))
		debug.SetGCPercent(400)
	}
	t, err := trace.ReadFileValid(c.Args().First())
	if err != nil {
		return err
	}
	for _, w := range t.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	for _, r := range o.Roots {
		if _, ok := t.LookupNode(r); !ok {
			return usagef("--root %q: no such node in the trace", r)
		}
	}
	start := time.Now()
	res := convolution.Convolve(t, o)
	for _, w := range res.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	fmt.Fprintf(c.App.ErrWriter, "wap5: convolve: μ = %v, %d quanta, roots %s, %d correlations, %d paths (%v)\n",
		res.Quantum, res.Quanta, strings.Join(res.Roots, ","), res.Correlations, len(res.Patterns), time.Since(start).Round(time.Millisecond))
	paths := res.Paths
	if m := c.Int("min-paths"); m > 0 {
		kept := paths.Patterns[:0:0]
		for _, p := range paths.Patterns {
			if p.Count >= m {
				kept = append(kept, p)
			}
		}
		paths.Patterns = kept
	}
	return writePaths(c, paths, convolveText)
}

// convolveText prints each path as in Figure 9: nodes, and on each edge its
// delays (by declining frequency) and message count.
func convolveText(w io.Writer, p *trace.Paths, top int) error {
	bw := bufio.NewWriter(w)
	for i, pat := range p.Patterns {
		if i == top {
			fmt.Fprintf(bw, "... %d more paths\n", len(p.Patterns)-top)
			break
		}
		fmt.Fprintf(bw, "#%d  count %d\n  %s\n", pat.Rank, pat.Count, pat.Root.From)
		for s := pat.Root; s != nil; {
			var ds []string
			for _, d := range s.Delays {
				ds = append(ds, fmt.Sprintf("%.1f ms", d*1e3))
			}
			fmt.Fprintf(bw, "    → %s   [%s] ×%d\n", s.To, strings.Join(ds, ", "), s.Count)
			if len(s.Children) == 0 {
				break
			}
			s = s.Children[0]
		}
	}
	return bw.Flush()
}

// convolveReserve is how much heap to reserve in huge pages
// (hugemem.Reserve) for the trace at path: with collections at 400 %,
// convolve's heap peaks at about four times a text trace's size
// (mt-config: 26 MB of text, 105 MB peak RSS); a binary trace takes ~12
// times fewer bytes per message. At most 1 GB (what is not touched costs
// address space only).
func convolveReserve(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	per := int64(5)
	magic := make([]byte, len(trace.BinaryMagic))
	if _, err := io.ReadFull(f, magic); err == nil && string(magic) == trace.BinaryMagic {
		per = 60
	}
	return int(min(per*fi.Size(), 1<<30))
}
