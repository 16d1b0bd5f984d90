package analyze

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"wap5/libsockcap"
	"wap5/linking"
	"wap5/nesting"
	"wap5/reconcile"
	"wap5/skew"
	"wap5/trace"
)

// SkewMode says when clock corrections are applied to the trace.
type SkewMode uint8

const (
	SkewAuto   SkewMode = iota // apply unless every traced node reads one clock
	SkewAlways                 // apply whatever the logs say about clocks
	SkewNever                  // do not estimate offsets at all
)

// ParseSkewMode parses "auto", "always" or "never".
func ParseSkewMode(s string) (SkewMode, error) {
	switch s {
	case "auto":
		return SkewAuto, nil
	case "always":
		return SkewAlways, nil
	case "never":
		return SkewNever, nil
	}
	return 0, fmt.Errorf("unknown skew mode %q (want auto, always or never)", s)
}

// Options control Run. The zero value runs every stage with its defaults.
type Options struct {
	Reconcile reconcile.Options
	Skew      SkewMode
	SkewOpts  skew.Options
	Link      linking.Options
	// Nest runs the nesting algorithm too (nest.json); NoNest turns it off.
	NoNest bool
	Nest   *nesting.Options // nil: nesting.DefaultOptions()
}

// Stage is how long one stage took.
type Stage struct {
	Name string
	Time time.Duration
}

// Report is everything one run of the pipeline produced.
type Report struct {
	Inputs reconcile.Inputs
	// Trace is the reconciled trace, its times on the reference clock when
	// SkewApplied (its Clock then records the corrections), sorted by time:
	// Link's and Nest's instances index its messages.
	Trace *trace.Trace
	// Skew is the clock estimate (nil with SkewNever or when it failed).
	Skew        *skew.Result
	SkewApplied bool
	// SkewNote says why the estimate was not applied ("" when it was).
	SkewNote string
	// Clocks maps traced node names to the clock they read, as far as
	// the logs' headers tell ("host boot-id clock-source").
	Clocks map[string]string
	Link   *linking.Result
	Method string // linking method used
	// EndToEnd is each linking pattern's response time (by rank) at the
	// node that sent its first message.
	EndToEnd map[int]trace.Stats
	Nest     *nesting.Result // nil with NoNest
	// Warnings of every stage, each prefixed with the stage's name.
	Warnings []string
	Stages   []Stage
}

func (r *Report) warn(stage string, ws []string) {
	for _, w := range ws {
		r.Warnings = append(r.Warnings, stage+": "+w)
	}
}

func (r *Report) timed(name string, f func() error) error {
	start := time.Now()
	err := f()
	r.Stages = append(r.Stages, Stage{name, time.Since(start)})
	return err
}

// Run reconciles the inputs, estimates and applies clock offsets, and
// infers causal paths; see the package comment for the steps. The error is
// for a stage that could not produce a result at all; everything
// recoverable is a warning in the report.
func Run(in reconcile.Inputs, o Options) (*Report, error) {
	r := &Report{Inputs: in}

	// 1. Reconcile.
	err := r.timed("reconcile", func() error {
		t, err := reconcile.Reconcile(in, o.Reconcile)
		if t != nil {
			r.warn("reconcile", t.Warnings)
			t.Warnings = nil
		}
		r.Trace = t
		return err
	})
	if err != nil {
		return r, fmt.Errorf("reconcile: %w", err)
	}
	t := r.Trace
	if err := t.CheckValid(); err != nil {
		return r, fmt.Errorf("reconcile: %w", err)
	}
	if len(t.Messages) == 0 {
		return r, fmt.Errorf("no messages in %s: nothing was sent between traced processes", describeInputs(in))
	}

	// 2. Clock offsets.
	if o.Skew != SkewNever {
		_ = r.timed("skew", func() error {
			if o.Skew == SkewAuto {
				r.Clocks = nodeClocks(in.Logs, o.Reconcile.Granularity)
			}
			if !skew.Comparable(t) {
				r.SkewNote = "no message between two traced nodes: no clocks to compare"
				return nil
			}
			res, err := skew.Estimate(t, o.SkewOpts)
			if err != nil {
				r.warn("skew", []string{err.Error() + "; clock offsets not corrected"})
				return nil
			}
			r.Skew = res
			r.warn("skew", res.Warnings)
			if o.Skew == SkewAuto {
				if clk, ok := oneClock(t, r.Clocks); ok {
					r.SkewNote = "every traced node reads one clock (" + clk + "): offsets estimated as a check, not applied"
					return nil
				}
			}
			cs := res.Corrections()
			if len(cs) == 0 {
				r.SkewNote = "no node could be related to the reference"
				return nil
			}
			if err := skew.Apply(t, cs); err != nil {
				r.SkewNote = err.Error()
				r.warn("skew", []string{err.Error()})
				return nil
			}
			r.SkewApplied = true
			return nil
		})
	} else {
		r.SkewNote = "clock offsets not estimated (--no-skew)"
	}
	t.Sort()

	// 3. Link.
	r.Method = o.Link.Defaults().Method
	err = r.timed("link", func() error {
		res, err := linking.Link(t, o.Link)
		if err != nil {
			return err
		}
		r.Link = res
		r.EndToEnd = endToEnd(t, &res.Paths)
		r.warn("link", res.Warnings)
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("link: %w", err)
	}

	// 4. Nest.
	if !o.NoNest {
		no := nesting.DefaultOptions()
		if o.Nest != nil {
			no = *o.Nest
		}
		_ = r.timed("nest", func() error {
			r.Nest = nesting.Nest(t, no)
			r.warn("nest", r.Nest.Warnings)
			return nil
		})
	}
	return r, nil
}

func describeInputs(in reconcile.Inputs) string {
	all := append(append([]string(nil), in.Logs...), in.Pcaps...)
	if len(all) == 0 {
		return "the inputs"
	}
	return strings.Join(all, " ")
}

// nodeClocks reads the logs' headers: for every node name a process maps to
// at granularity g, the clock it read ("" when processes of one node read
// different clocks). Unreadable logs are left out; reconcile reports them.
// It stops at the second distinct clock: the nodes then share none.
func nodeClocks(paths []string, g reconcile.Granularity) map[string]string {
	clocks := map[string]string{}
	if len(paths) == 0 {
		return clocks
	}
	files, err := libsockcap.FindLogs(paths...)
	if err != nil {
		return clocks
	}
	distinct := map[string]bool{}
	for _, f := range files {
		sc, err := libsockcap.Open(f)
		if err != nil {
			continue
		}
		p := sc.Process()
		host := p.Node
		if host == "" {
			host = p.Host
		}
		name := reconcile.NodeName(&reconcile.Observer{Host: host, Exe: p.Program(), Pid: p.Pid}, g)
		clk := clockKey(p)
		sc.Close()
		if old, ok := clocks[name]; ok && old != clk {
			clk = ""
		}
		clocks[name] = clk
		distinct[clk] = true
		if len(distinct) > 1 {
			break
		}
	}
	return clocks
}

// clockKey names the clock a process's timestamps come from: the realtime
// clock of one host while it runs one boot; a monotonic clock the same way.
// A log without a boot id shares no clock known to be the same.
func clockKey(p *libsockcap.Process) string {
	if p.BootID == "" || p.Host == "" {
		return ""
	}
	src := p.ClockSource
	if src == "" {
		src = fmt.Sprintf("clock %d", p.Clock)
	}
	return fmt.Sprintf("host %s boot %.8s %s", p.Host, p.BootID, src)
}

// oneClock reports whether every traced node of t is known to read the
// same clock, and which.
func oneClock(t *trace.Trace, clocks map[string]string) (string, bool) {
	seen := map[string]bool{}
	for _, n := range t.Nodes {
		if n.Untraced {
			continue
		}
		clk, ok := clocks[n.Name]
		if !ok || clk == "" {
			return "", false
		}
		seen[clk] = true
	}
	if len(seen) != 1 {
		return "", false
	}
	for k := range seen {
		return k, true
	}
	return "", false
}

// NodeClocks lists the distinct clocks in Clocks, sorted.
func (r *Report) NodeClocks() []string {
	set := map[string]bool{}
	for _, c := range r.Clocks {
		if c != "" {
			set[c] = true
		}
	}
	var out []string
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
