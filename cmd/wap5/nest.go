package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"wap5/internal/hugemem"
	"wap5/nesting"
	"wap5/trace"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "nest",
			Usage:     "nesting algorithm (Project 5 §5.1): call trees with call delays and latencies",
			ArgsUsage: "TRACE",
			Description: "Pairs calls with returns (kind=/call= when present, else by connection roles), scores " +
				"every possible nesting on a log-1.05 histogram per (A, B, C), picks one parent per call with " +
				"the overlapping-, same- and generic-child penalties, and aggregates call trees into patterns " +
				"ranked by count. --time send compares sender timestamps only (Project 5's single-timestamp " +
				"traces); --skew-window and --smooth are its clock-skew compensation. Where messages name their " +
				"threads (sa=/da=), a node's calls keep only the candidate parents their own thread received, if " +
				"the node's unambiguous calls show that (--actor-min) and it is not an event loop.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "machine-readable output (the contract's JSON)"},
				&cli.StringFlag{Name: "instances", Usage: "write one JSON line per path instance to `FILE`"},
				&cli.StringFlag{Name: "time", Value: "local", Usage: "local (each node's own clock) or send (sender timestamps only)"},
				&cli.DurationFlag{Name: "skew-window", Usage: "loosen nesting comparisons by `D`"},
				&cli.Float64Flag{Name: "smooth", Usage: "Gaussian smoothing of the scoreboard, standard deviation in `BINS` (0: off)"},
				&cli.Float64Flag{Name: "x", Value: 2, Usage: "overlapping-child penalty exponent"},
				&cli.Float64Flag{Name: "y", Usage: "same-child penalty exponent"},
				&cli.Float64Flag{Name: "z", Usage: "generic-child penalty exponent"},
				&cli.DurationFlag{Name: "bin-lo", Value: time.Millisecond, Usage: "lower edge of the first scoreboard bin"},
				&cli.IntFlag{Name: "histograms", Value: 100, Usage: "delay histograms for the `N` most frequent patterns"},
				&cli.IntFlag{Name: "top", Usage: "show only the top `N` patterns (text default 20)"},
				&cli.Float64Flag{Name: "actor-min", Value: 0.99, Usage: "restrict a node's calls to parents received by the same thread (sa=/da=) when at least this `SHARE` of its unambiguous calls show it (> 1: never)"},
				&cli.Float64Flag{Name: "actor-chance", Value: 1e-6, Usage: "... and that agreement has at most this `PROBABILITY` of being chance"},
			},
			Action: nestAction,
		}
	})
}

func nestAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("nest wants one TRACE, got %d arguments", c.NArg())
	}
	o := nesting.DefaultOptions()
	switch c.String("time") {
	case "local":
	case "send":
		o.Time = nesting.TimeSend
	default:
		return usagef("--time %q: want local or send", c.String("time"))
	}
	o.SkewWindow, o.Smooth = c.Duration("skew-window"), c.Float64("smooth")
	o.X, o.Y, o.Z = c.Float64("x"), c.Float64("y"), c.Float64("z")
	o.BinLo, o.HistPatterns = c.Duration("bin-lo"), c.Int("histograms")
	o.ActorMin, o.ActorChance = c.Float64("actor-min"), c.Float64("actor-chance")
	if o.SkewWindow < 0 || o.Smooth < 0 || o.BinLo <= 0 || c.Int("top") < 0 || o.ActorMin < 0 || o.ActorChance < 0 {
		return usagef("--skew-window, --smooth, --bin-lo, --top, --actor-min and --actor-chance must not be negative")
	}
	o.NoInstances = c.String("instances") == ""
	// Without --instances (message ids) the pass reads only the messages'
	// envelopes, which a binary trace decodes straight into.
	var t *trace.Trace
	var env []trace.Envelope
	var err error
	if o.NoInstances {
		// The memory the input is read and decompressed into is kept
		// for the pass's arrays (the calls, step 1's scratch) rather
		// than given back and fresh memory taken: no page faults.
		hugemem.Keep(true)
		defer hugemem.Keep(false)
		var release func()
		t, env, release, err = trace.ReadFileEnvelopes(c.Args().First())
		defer release()
		if err == nil && os.Getenv("GOGC") == "" {
			// What the command allocates from here on is a few MB, mostly
			// the result (the pass's arrays are outside the Go heap, and
			// so are a binary trace's envelopes): a collection (the first
			// comes at 4 MB) would only cost.
			debug.SetGCPercent(400)
		}
	} else {
		t, err = trace.ReadFileValid(c.Args().First())
	}
	if err != nil {
		return err
	}
	for _, w := range t.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	start := time.Now()
	var res *nesting.Result
	if o.NoInstances {
		res = nesting.NestEnvelopesScratch(t, env, o) // env is not used after
	} else {
		res = nesting.Nest(t, o)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	fmt.Fprintf(c.App.ErrWriter, "wap5: nest: %d messages, %d call pairs, %d unpaired, parallelism %.2f, %d paths in %d patterns (%v)\n",
		res.Messages, res.CallPairs, res.Unpaired, res.Parallelism, res.Roots, len(res.Patterns), time.Since(start).Round(time.Millisecond))
	for _, a := range res.Actors {
		fmt.Fprintf(c.App.ErrWriter, "wap5: nest: actors at %s: %s\n", t.NodeName(a.Node), a)
	}
	if p := c.String("instances"); p != "" {
		if err := writeInstances(p, t, &res.Paths); err != nil {
			return err
		}
	}
	return writePaths(c, res.Paths, nestText)
}

// nestText prints each pattern as an indented call tree, Figure 8's content:
// call delay on the edge, latency at the callee.
func nestText(w io.Writer, p *trace.Paths, top int) error {
	bw := bufio.NewWriter(w)
	for i, pat := range p.Patterns {
		if i == top {
			fmt.Fprintf(bw, "... %d more patterns\n", len(p.Patterns)-top)
			break
		}
		fmt.Fprintf(bw, "#%d  count %d\n", pat.Rank, pat.Count)
		pat.Root.Walk(func(s *trace.Step, d int) {
			delay := "      -"
			if s.Wait.Known() {
				delay = fmt.Sprintf("%7.1f", s.Wait.Mean*1e3)
			}
			fmt.Fprintf(bw, "  %s%s → %s   call delay %s ms   latency %7.1f ms (sd %.1f)\n", strings.Repeat("  ", d), s.From, s.To,
				delay, s.Latency.Mean*1e3, s.Latency.Std*1e3)
		})
	}
	return bw.Flush()
}
