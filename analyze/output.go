package analyze

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"wap5/render"
	"wap5/skew"
	"wap5/trace"
)

// Output is one file of an analysis directory. Write returns nil without
// writing anything useful only when the report has nothing for it; Skip
// tells WriteDir to leave such a file out.
type Output struct {
	Name string
	Skip func(r *Report) bool // nil: always written
	// Write writes the file's content. opts are the report's text options.
	Write func(w io.Writer, r *Report, opts *render.ReportOptions) error
}

// Outputs are the files `wap5 analyze` writes, in order. Renderers added
// later (HTML, Perfetto, Jaeger) are more entries here.
var Outputs = []Output{
	{Name: "trace.bin", Write: func(w io.Writer, r *Report, _ *render.ReportOptions) error { return trace.WriteBinary(w, r.Trace) }},
	{Name: "trace.txt", Write: func(w io.Writer, r *Report, _ *render.ReportOptions) error { return trace.WriteText(w, r.Trace) }},
	{Name: "skew.json", Skip: func(r *Report) bool { return r.Skew == nil },
		Write: func(w io.Writer, r *Report, _ *render.ReportOptions) error {
			return render.SkewJSON(w, r.ClockSummary())
		}},
	{Name: "link.json", Write: func(w io.Writer, r *Report, _ *render.ReportOptions) error { return render.JSON(w, &r.Link.Paths) }},
	{Name: "instances.jsonl", Write: func(w io.Writer, r *Report, _ *render.ReportOptions) error {
		return render.Instances(w, r.Trace, &r.Link.Paths)
	}},
	{Name: "nest.json", Skip: func(r *Report) bool { return r.Nest == nil },
		Write: func(w io.Writer, r *Report, _ *render.ReportOptions) error { return render.JSON(w, &r.Nest.Paths) }},
	{Name: "report.txt", Write: func(w io.Writer, r *Report, o *render.ReportOptions) error {
		return render.Report(w, r.Data(), o)
	}},
}

// WriteDir creates dir (and its parents) and writes every output into it;
// an output the report has nothing for is removed, so that no file of an
// earlier analysis in dir passes for this one's. It returns the paths
// written.
func (r *Report) WriteDir(dir string, opts *render.ReportOptions) ([]string, error) {
	if r.Trace == nil || r.Link == nil {
		return nil, fmt.Errorf("analysis incomplete: nothing to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, o := range Outputs {
		p := filepath.Join(dir, o.Name)
		if o.Skip != nil && o.Skip(r) {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return written, err
			}
			continue
		}
		if err := writeFile(p, func(w io.Writer) error { return o.Write(w, r, opts) }); err != nil {
			return written, fmt.Errorf("%s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}

// writeFile writes through a temporary file renamed into place, so that a
// failed run never leaves a half-written result next to good ones.
func writeFile(path string, f func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<16)
	err = f(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// ClockSummary is the clock estimate in the renderers' plain form (nil
// when clocks were not estimated).
func (r *Report) ClockSummary() *render.ClockSummary {
	if r.Skew == nil {
		return nil
	}
	res := r.Skew
	c := &render.ClockSummary{Applied: r.SkewApplied, Note: r.SkewNote}
	steps := map[trace.NodeID]int{}
	for _, s := range res.Steps {
		steps[s.Node]++
	}
	for _, n := range res.Nodes {
		if n.Node == res.Reference {
			c.Reference = n.Name
		}
		if n.Status == skew.NoClock {
			continue
		}
		c.Nodes = append(c.Nodes, render.ClockRow{Node: n.Name, Status: n.Status.String(), Offset: n.Offset,
			DriftPPM: n.DriftPPM, Error: n.Error, FitError: n.FitError, Samples: n.Samples, Steps: steps[n.Node]})
	}
	sort.SliceStable(c.Nodes, func(i, j int) bool { return c.Nodes[i].Node < c.Nodes[j].Node })
	return c
}

// Data is the report's content for render.Report.
func (r *Report) Data() *render.ReportData {
	d := &render.ReportData{Trace: r.Trace, Clock: r.ClockSummary(), Warnings: r.Warnings}
	d.Inputs = append(append(d.Inputs, r.Inputs.Logs...), r.Inputs.Pcaps...)
	if r.Link != nil {
		d.Paths = &r.Link.Paths
		d.Method = r.Method
		d.EndToEnd = r.EndToEnd
	}
	if r.Nest != nil {
		d.Nesting = &r.Nest.Paths
	}
	return d
}
