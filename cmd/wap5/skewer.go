package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"wap5/skew"
	"wap5/trace"
	"wap5/tracegen"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "skewer",
			Usage:     "add per-node clock offset and drift to a trace (Project 5's skewer)",
			ArgsUsage: "TRACE",
			Description: "Moves the timestamps of the named nodes onto skewed clocks: a node's clock reads true " +
				"time + offset + drift·1e-6·(t − AT), AT being --at or the trace's earliest timestamp. With " +
				"--random-offset/--random-drift every other node with timestamps gets a uniform random offset " +
				"and drift in ±the given range (--seed makes it repeatable). The skewed trace goes to stdout " +
				"(or -o FILE); the clocks applied are printed on stderr. For tests of `wap5 skew` and what-if " +
				"studies of clock error.",
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "offset", Usage: "clock offset of a node, `NODE=SECONDS` (units ns us ms s m h allowed); repeatable"},
				&cli.StringSliceFlag{Name: "drift", Usage: "clock drift of a node, `NODE=PPM`; repeatable"},
				&cli.StringFlag{Name: "random-offset", Usage: "uniform random offset within ±`SECONDS` for every other node"},
				&cli.Float64Flag{Name: "random-drift", Usage: "uniform random drift within ±`PPM` for every other node"},
				&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed for --random-offset and --random-drift"},
				&cli.StringFlag{Name: "at", Usage: "reference `TIME` (seconds since the epoch) the offsets refer to"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "-", Usage: "write the skewed trace to `FILE`"},
				&cli.BoolFlag{Name: "binary", Usage: "write the binary trace form"},
			},
			Action: skewerAction,
		}
	})
}

func skewerAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("skewer wants one TRACE, got %d arguments", c.NArg())
	}
	t, err := trace.ReadFile(c.Args().First())
	if err != nil {
		return err
	}
	for _, w := range t.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	type clk struct {
		off, drift float64
		set        [2]bool
	}
	clocks := map[trace.NodeID]*clk{}
	get := func(name string) (*clk, error) {
		id, ok := t.LookupNode(name)
		if !ok {
			return nil, usagef("skewer: node %q is not in the trace", name)
		}
		if clocks[id] == nil {
			clocks[id] = &clk{}
		}
		return clocks[id], nil
	}
	for _, kv := range c.StringSlice("offset") {
		name, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--offset %q: want NODE=SECONDS", kv)
		}
		x, err := tracegen.ParseSignedSeconds(v)
		if err != nil {
			return usagef("--offset %s: %v", kv, err)
		}
		k, err := get(name)
		if err != nil {
			return err
		}
		k.off, k.set[0] = x, true
	}
	for _, kv := range c.StringSlice("drift") {
		name, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--drift %q: want NODE=PPM", kv)
		}
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "ppm"), 64)
		if err != nil || math.IsNaN(x) || math.Abs(x) >= 1e5 {
			return usagef("--drift %s: want parts per million below 100000", kv)
		}
		k, err := get(name)
		if err != nil {
			return err
		}
		k.drift, k.set[1] = x, true
	}
	var randOff float64
	if s := c.String("random-offset"); s != "" {
		if randOff, err = tracegen.ParseSeconds(s); err != nil {
			return usagef("--random-offset: %v", err)
		}
	}
	randDrift := math.Abs(c.Float64("random-drift"))
	// the reference instant and the nodes that have a clock at all
	at := int64(math.MaxInt64)
	hasClock := make([]bool, len(t.Nodes))
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Send != trace.Unknown {
			at = min(at, m.Send)
			hasClock[m.Src] = true
		}
		if m.Recv != trace.Unknown {
			at = min(at, m.Recv)
			hasClock[m.Dst] = true
		}
	}
	if s := c.String("at"); s != "" {
		if at, err = trace.ParseTime(s); err != nil || at == trace.Unknown {
			return usagef("--at %q: want seconds since the epoch", s)
		}
	}
	if randOff > 0 || randDrift > 0 {
		r := rand.New(rand.NewPCG(c.Uint64("seed"), 0x5ce3e5))
		for n := range t.Nodes {
			id := trace.NodeID(n)
			if !hasClock[n] {
				continue
			}
			if clocks[id] == nil {
				clocks[id] = &clk{}
			}
			k := clocks[id]
			// draw both for every node so a node's values do not depend on
			// which others were set by hand
			o, d := (2*r.Float64()-1)*randOff, (2*r.Float64()-1)*randDrift
			if !k.set[0] {
				k.off = o
			}
			if !k.set[1] {
				k.drift = d
			}
		}
	}
	var cs []trace.Correction
	for n := range t.Nodes {
		k := clocks[trace.NodeID(n)]
		if k == nil {
			continue
		}
		off := int64(math.Round(k.off * 1e9))
		cs = append(cs, trace.Correction{Node: trace.NodeID(n), Offset: off, DriftPPM: k.drift, At: at + off})
		fmt.Fprintf(c.App.ErrWriter, "wap5: skewer: %s offset_s=%.9f drift_ppm=%g at=%s\n", t.NodeName(trace.NodeID(n)),
			k.off, k.drift+0, trace.FormatTime(at))
	}
	if err := skew.Perturb(t, cs); err != nil {
		return err
	}
	return trace.WriteFile(c.String("output"), t, c.Bool("binary"))
}
