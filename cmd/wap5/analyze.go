package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"wap5/analyze"
	"wap5/linking"
	"wap5/reconcile"
	"wap5/render"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "analyze",
			Usage:     "whole pipeline: reconcile → skew → link → report in DIR",
			ArgsUsage: "INPUT...",
			Description: "INPUTs are what `wap5 reconcile` takes: libsockcap logs, directories of them (e.g. the\n" +
				"--out DIR of `wap5 run`) and pcap/pcapng captures. The pipeline reconciles them into one\n" +
				"message trace, estimates every node's clock offset and applies it (unless every traced\n" +
				"node reads one host's clock, as the logs' headers tell; --skew always|never changes that),\n" +
				"links messages into causal paths (--method joint|wap5) and nests calls (Project 5).\n" +
				"DIR receives: trace.bin and trace.txt (the corrected trace), skew.json (as `wap5 skew\n" +
				"--json`), link.json and instances.jsonl (as `wap5 link --json --instances`), nest.json\n" +
				"(as `wap5 nest --json`) and report.txt, which is also printed unless --quiet.\n" +
				"Every stage's warnings go to stderr, prefixed with the stage.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "wap5-report", Usage: "write the results into `DIR`"},
				&cli.StringFlag{Name: "granularity", Value: "host", Usage: "node names: host, program or process (as reconcile)"},
				&cli.BoolFlag{Name: "no-nat-detect", Usage: "reconcile: do not pair translated flows automatically"},
				&cli.BoolFlag{Name: "aggregate-clients", Usage: "name client nodes CLIENT and ephemeral ports * (WAP5 §2.5)"},
				&cli.StringFlag{Name: "method", Value: linking.MethodJoint, Usage: "linking method: joint or wap5"},
				&cli.DurationFlag{Name: "max-delay", Value: 2 * time.Second, Usage: "linking: the longest causal delay considered"},
				&cli.BoolFlag{Name: "no-skew", Usage: "do not estimate or correct clock offsets (same as --skew never)"},
				&cli.StringFlag{Name: "skew", Value: "auto", Usage: "apply clock offsets: auto (unless all nodes share one clock), always or never"},
				&cli.BoolFlag{Name: "no-nest", Usage: "skip the nesting algorithm (no nest.json)"},
				&cli.IntFlag{Name: "top", Value: 5, Usage: "path patterns shown in the report"},
				&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not print the report"},
			},
			Action: analyzeAction,
		}
	})
}

func analyzeAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("analyze: no INPUT given (wap5 analyze [-o DIR] INPUT...)")
	}
	var o analyze.Options
	var err error
	if o.Reconcile.Granularity, err = reconcile.ParseGranularity(c.String("granularity")); err != nil {
		return usagef("analyze: %v", err)
	}
	if o.Skew, err = analyze.ParseSkewMode(c.String("skew")); err != nil {
		return usagef("analyze: --skew: %v", err)
	}
	if c.Bool("no-skew") {
		o.Skew = analyze.SkewNever
	}
	o.Reconcile.AggregateClients = c.Bool("aggregate-clients")
	o.Reconcile.DisableNATDetection = c.Bool("no-nat-detect")
	o.Reconcile.ReturnMemory = true // one analysis per process: keep the peak low
	o.Link.Method = c.String("method")
	if o.Link.Method != linking.MethodJoint && o.Link.Method != linking.MethodWAP5 {
		return usagef("analyze: --method %q: want joint or wap5", o.Link.Method)
	}
	o.Link.Window = c.Duration("max-delay")
	if o.Link.Window <= 0 || c.Int("top") <= 0 {
		return usagef("analyze: --max-delay and --top must be positive")
	}
	o.Link.AggregateClients = c.Bool("aggregate-clients")
	o.NoNest = c.Bool("no-nest")
	dir := c.String("output")
	if dir == "" {
		return usagef("analyze: -o DIR must not be empty")
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}

	var in reconcile.Inputs
	for _, arg := range c.Args().Slice() {
		if err := classifyInput(arg, &in, new(int64)); err != nil {
			return err
		}
	}
	rep, err := analyze.Run(in, o)
	if rep != nil {
		for _, w := range rep.Warnings {
			fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
		}
	}
	if err != nil {
		return err
	}
	ropts := &render.ReportOptions{Top: c.Int("top")}
	files, err := rep.WriteDir(dir, ropts)
	if err != nil {
		return err
	}
	if !c.Bool("quiet") {
		if err := render.Report(c.App.Writer, rep.Data(), ropts); err != nil {
			return err
		}
	}
	var stages string
	for _, s := range rep.Stages {
		stages += fmt.Sprintf(" %s %v,", s.Name, s.Time.Round(time.Millisecond))
	}
	fmt.Fprintf(c.App.ErrWriter, "wap5: analyze:%s %d files in %s\n", stages, len(files), filepath.Clean(dir))
	return nil
}
