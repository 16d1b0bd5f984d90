package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"wap5/render"
	"wap5/score"
	"wap5/trace"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "score",
			Usage:     "accuracy of inferred paths against ground truth (Project 5 §7.5.1)",
			ArgsUsage: "RESULT",
			Description: "RESULT is the JSON of wap5 link/nest/convolve --json (- for stdin); --truth is the trace " +
				"they ran on, with truth= ids (wap5 gen). Instance precision and recall need --instances, the file " +
				"written by --instances of the algorithm.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "truth", Usage: "the trace with truth= ids (`TRACE`); required"},
				&cli.StringFlag{Name: "instances", Usage: "inferred instances, one JSON object per line (`FILE`)"},
				&cli.IntFlag{Name: "top", Value: 20, Usage: "largest N of the top-N curve and patterns listed"},
				&cli.Float64Flag{Name: "tolerance", Value: 0.02, Usage: "forgive top-N misses within this fraction of the N-th score (negative: none)"},
				&cli.StringSliceFlag{Name: "alias", Usage: "rename a truth node to the result's name, `TRUTH=RESULT`; repeatable"},
				&cli.BoolFlag{Name: "no-client-alias", Usage: "do not map client-like truth nodes to CLIENT"},
				&cli.DurationFlag{Name: "min-delay", Value: time.Millisecond, Usage: "no relative error for true delays below this"},
				&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			},
			Action: scoreAction,
		}
	})
}

func scoreAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("score wants one RESULT file, got %d arguments", c.NArg())
	}
	if c.String("truth") == "" {
		return usagef("score needs --truth TRACE")
	}
	opts := score.Options{Top: c.Int("top"), Tolerance: c.Float64("tolerance"), NoClientAlias: c.Bool("no-client-alias"),
		MinDelay: c.Duration("min-delay").Seconds()}
	if opts.Top < 1 {
		return usagef("--top must be ≥ 1")
	}
	if opts.Tolerance == 0 {
		opts.Tolerance = -1 // an explicit 0 means none
	}
	for _, kv := range c.StringSlice("alias") {
		from, to, ok := strings.Cut(kv, "=")
		if !ok || from == "" || to == "" {
			return usagef("--alias wants TRUTH=RESULT, got %q", kv)
		}
		if opts.Aliases == nil {
			opts.Aliases = map[string]string{}
		}
		opts.Aliases[from] = to
	}
	truth, err := trace.ReadFile(c.String("truth"))
	if err != nil {
		return err
	}
	for _, w := range truth.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	name := c.Args().First()
	var in io.Reader = c.App.Reader
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	paths, err := render.ReadJSON(in)
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	if file := c.String("instances"); file != "" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		insts, warns, err := render.ReadInstances(f, truth)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
		for _, w := range warns {
			fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s: %s\n", file, w)
		}
		paths.Instances = insts
	}
	r := score.Score(truth, paths, opts)
	for _, w := range r.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", " ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	return score.WriteText(c.App.Writer, &r)
}
