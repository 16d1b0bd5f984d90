package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"wap5/trace"
	"wap5/tracegen"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "gen",
			Usage:     "synthetic message trace with ground truth (Project 5's maketrace)",
			ArgsUsage: "CONFIG",
			Description: "Writes the trace in the text format (stdout, or -o FILE). With --json a summary " +
				"(messages, instances, nodes, per-tracelet counts, true clocks) goes to stdout instead, and the " +
				"trace only to -o FILE when given. Overrides change the configuration for accuracy sweeps.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "print a JSON summary on stdout (the trace goes to -o only)"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the trace to `FILE`"},
				&cli.BoolFlag{Name: "binary", Usage: "write the binary trace form (needs -o; holds the trace in memory)"},
				&cli.Uint64Flag{Name: "seed", Usage: "random seed (overrides the config's)"},
				&cli.Int64Flag{Name: "messages", Usage: "stop starting instances after `N` messages"},
				&cli.StringFlag{Name: "duration", Usage: "true time during which instances start, e.g. 10m"},
				&cli.IntFlag{Name: "parallel", Usage: "workers per tracelet (overrides every tracelet's parallel=)"},
				&cli.Float64Flag{Name: "stddev-scale", Usage: "multiply the spread of every node delay by `K`"},
				&cli.Float64Flag{Name: "loss", Usage: "independent message loss probability `P`"},
				&cli.StringFlag{Name: "sniffer", Usage: "bursty capture loss `RATE:QUEUE` (messages/s, queue length)"},
				&cli.BoolFlag{Name: "parents", Usage: "write parent=ID on each message: the message that caused it (exact ground truth for score)"},
				&cli.StringSliceFlag{Name: "skew", Usage: "clock offset of a node, `NODE=OFFSET` (e.g. WS2=30ms); repeatable"},
				&cli.StringSliceFlag{Name: "drift", Usage: "clock drift of a node, `NODE=PPM`; repeatable"},
			},
			Action: genAction,
		}
	})
}

func genAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("gen wants one CONFIG file, got %d arguments", c.NArg())
	}
	cfg, err := tracegen.ParseConfigFile(c.Args().First())
	if err != nil {
		return err
	}
	if err := applyGenOverrides(c, cfg); err != nil {
		return err
	}
	out := c.String("output")
	if c.Bool("binary") && out == "" {
		return usagef("--binary needs -o FILE")
	}
	if out == "-" {
		if c.Bool("json") {
			return usagef("-o - and --json would both write to stdout")
		}
		if c.Bool("binary") {
			return usagef("--binary does not write to stdout; give -o FILE")
		}
		out = "" // stdout
	}
	var sum *tracegen.Summary
	switch {
	case c.Bool("binary"):
		var t *trace.Trace
		if t, sum, err = tracegen.GenerateSummary(cfg); err != nil {
			return err
		}
		if err := trace.WriteFile(out, t, true); err != nil {
			return err
		}
	case out != "":
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		sum, err = tracegen.Write(f, cfg)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case c.Bool("json"):
		if sum, err = tracegen.Write(io.Discard, cfg); err != nil {
			return err
		}
	default:
		if sum, err = tracegen.Write(c.App.Writer, cfg); err != nil {
			return err
		}
	}
	if sum.Unobservable > 0 {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %d messages between two untraced nodes left out (no timestamp)\n", sum.Unobservable)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", " ")
		enc.SetEscapeHTML(false)
		return enc.Encode(sum)
	}
	return nil
}

func applyGenOverrides(c *cli.Context, cfg *tracegen.Config) error {
	if c.Bool("parents") {
		cfg.Parents = true
	}
	if c.IsSet("seed") {
		cfg.Seed = c.Uint64("seed")
	}
	if c.IsSet("messages") {
		if c.Int64("messages") < 0 {
			return usagef("--messages must be ≥ 0")
		}
		cfg.Messages = c.Int64("messages")
		if !c.IsSet("duration") {
			cfg.Duration = 0
		}
	}
	if c.IsSet("duration") {
		d, err := tracegen.ParseSeconds(c.String("duration"))
		if err != nil {
			return usagef("--duration: %v", err)
		}
		cfg.Duration = d
		if !c.IsSet("messages") {
			cfg.Messages = 0
		}
	}
	if c.IsSet("parallel") {
		if c.Int("parallel") < 1 {
			return usagef("--parallel must be ≥ 1")
		}
		for _, t := range cfg.Tracelets {
			t.Parallel = c.Int("parallel")
		}
	}
	if c.IsSet("stddev-scale") {
		if k := c.Float64("stddev-scale"); !(k >= 0) {
			return usagef("--stddev-scale must be ≥ 0")
		}
		cfg.StdScale = c.Float64("stddev-scale")
	}
	if c.IsSet("loss") {
		if p := c.Float64("loss"); !(p >= 0 && p <= 1) {
			return usagef("--loss must be a probability")
		}
		cfg.Loss = c.Float64("loss")
	}
	if c.IsSet("sniffer") {
		r, q, ok := strings.Cut(c.String("sniffer"), ":")
		rate, err1 := strconv.ParseFloat(r, 64)
		queue, err2 := strconv.Atoi(q)
		if !ok || err1 != nil || err2 != nil || !(rate > 0) || queue < 1 {
			return usagef("--sniffer wants RATE:QUEUE, e.g. 500:64")
		}
		cfg.Sniffer = &tracegen.Sniffer{Rate: rate, Queue: queue}
	}
	for _, kv := range c.StringSlice("skew") {
		name, v, _ := strings.Cut(kv, "=")
		off, err := tracegen.ParseSignedSeconds(v)
		if err != nil {
			return usagef("--skew %s: %v", kv, err)
		}
		if err := cfg.SetClock(name, &off, nil); err != nil {
			return usagef("--skew: %v", err)
		}
	}
	for _, kv := range c.StringSlice("drift") {
		name, v, _ := strings.Cut(kv, "=")
		ppm, err := strconv.ParseFloat(strings.TrimSuffix(v, "ppm"), 64)
		if err != nil {
			return usagef("--drift %s: bad ppm", kv)
		}
		if err := cfg.SetClock(name, nil, &ppm); err != nil {
			return usagef("--drift: %v", err)
		}
	}
	return nil
}
