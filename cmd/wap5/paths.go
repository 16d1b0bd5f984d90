package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"wap5/render"
	"wap5/trace"
)

// writePaths writes an algorithm's paths as the contract's JSON (--json) or
// with text, keeping only the --top patterns (text shows 20 by default).
func writePaths(c *cli.Context, paths trace.Paths, text func(w io.Writer, p *trace.Paths, top int) error) error {
	top := c.Int("top")
	if top > 0 && top < len(paths.Patterns) {
		paths.Patterns = paths.Patterns[:top]
	}
	if c.Bool("json") {
		return render.JSON(c.App.Writer, &paths)
	}
	if top == 0 {
		top = 20
	}
	return text(c.App.Writer, &paths, top)
}
