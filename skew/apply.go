package skew

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"wap5/trace"
)

// Corrections returns the clock corrections of every node that has one (the
// reference included, with zero offset), one per clock segment, not yet
// applied.
func (r *Result) Corrections() []trace.Correction {
	var cs []trace.Correction
	for _, n := range r.Nodes {
		if n.Status == Reference || n.Status == Corrected {
			cs = append(cs, n.Segments...)
		}
	}
	return cs
}

// ToReference converts a time read on a node's clock to the reference clock
// under correction c (Unknown stays Unknown).
func ToReference(c trace.Correction, local int64) int64 {
	if local == trace.Unknown {
		return local
	}
	return local - c.Offset - int64(math.Round(c.DriftPPM*1e-6*float64(local-c.At)))
}

// ToLocal is the inverse of ToReference: what the node's clock reads at
// reference time ref.
func ToLocal(c trace.Correction, ref int64) int64 {
	if ref == trace.Unknown {
		return ref
	}
	k := c.DriftPPM * 1e-6
	x := ref + c.Offset - c.At
	return c.At + x + int64(math.Round(float64(x)*k/(1-k)))
}

// Corrector looks up nodes' corrections quickly. A node with several
// corrections (clock steps) uses, at local time t, the one with the latest
// At ≤ t (the first before that).
type Corrector struct {
	by [][]trace.Correction
}

// NewCorrector indexes corrections by node.
func NewCorrector(cs []trace.Correction) *Corrector {
	c := &Corrector{}
	for _, x := range cs {
		for int(x.Node) >= len(c.by) {
			c.by = append(c.by, nil)
		}
		if x.Node >= 0 {
			c.by[x.Node] = append(c.by[x.Node], x)
		}
	}
	for _, l := range c.by {
		sort.SliceStable(l, func(i, j int) bool { return l[i].At < l[j].At })
	}
	return c
}

// Has reports whether node n has a correction.
func (c *Corrector) Has(n trace.NodeID) bool {
	return n >= 0 && int(n) < len(c.by) && len(c.by[n]) > 0
}

// For returns the correction that applies to node n at local time t.
func (c *Corrector) For(n trace.NodeID, local int64) (trace.Correction, bool) {
	if !c.Has(n) {
		return trace.Correction{}, false
	}
	l := c.by[n]
	if len(l) == 1 {
		return l[0], true
	}
	i := sort.Search(len(l), func(i int) bool { return l[i].At > local })
	if i > 0 {
		i--
	}
	return l[i], true
}

// ToReference converts node n's local time to the reference clock; nodes
// without a correction are returned unchanged.
func (c *Corrector) ToReference(n trace.NodeID, local int64) int64 {
	x, ok := c.For(n, local)
	if !ok {
		return local
	}
	return ToReference(x, local)
}

// NetDelay is a message's one-way network delay with both ends on the
// reference clock (ns); ok is false when a timestamp is unknown.
func (c *Corrector) NetDelay(m *trace.Message) (int64, bool) {
	if m.Send == trace.Unknown || m.Recv == trace.Unknown {
		return 0, false
	}
	return c.ToReference(m.Dst, m.Recv) - c.ToReference(m.Src, m.Send), true
}

// ErrApplied is returned by Apply for a trace whose times were already
// corrected.
var ErrApplied = errors.New("trace already has clock corrections applied")

// Apply rewrites every message time onto the reference clock and records
// the corrections in t.Clock with Applied set, replacing what was there.
// Nodes without a correction keep their times. Message order is kept (times
// may no longer be sorted; call t.Sort if that matters).
func Apply(t *trace.Trace, cs []trace.Correction) error {
	for _, c := range t.Clock {
		if c.Applied {
			return ErrApplied
		}
	}
	for _, c := range cs {
		if c.Node < 0 || int(c.Node) >= len(t.Nodes) {
			return fmt.Errorf("clock correction for node %d: no such node", c.Node)
		}
	}
	cr := NewCorrector(cs)
	for i := range t.Messages {
		m := &t.Messages[i]
		m.Send = cr.ToReference(m.Src, m.Send)
		m.Recv = cr.ToReference(m.Dst, m.Recv)
	}
	t.MessagesEdited()
	t.Clock = t.Clock[:0]
	for _, c := range cs {
		c.Applied = true
		t.Clock = append(t.Clock, c)
	}
	return nil
}

// Record stores the corrections in t.Clock without touching message times
// (Applied false), for consumers that convert on the fly with a Corrector.
func Record(t *trace.Trace, cs []trace.Correction) {
	t.Clock = t.Clock[:0]
	for _, c := range cs {
		c.Applied = false
		t.Clock = append(t.Clock, c)
	}
}

// Perturb is Project 5's skewer (§7.5.6): it moves every message time of
// the nodes in clocks from the true (reference) clock to that node's clock,
// which reads reference + Offset + DriftPPM·1e-6·(t − At) at its own time t.
// Existing clock corrections no longer describe the trace and are dropped.
func Perturb(t *trace.Trace, clocks []trace.Correction) error {
	for _, c := range clocks {
		if c.Node < 0 || int(c.Node) >= len(t.Nodes) {
			return fmt.Errorf("clock for node %d: no such node", c.Node)
		}
		if math.Abs(c.DriftPPM) >= 1e5 {
			return fmt.Errorf("clock for node %s: drift %g ppm is not a clock", t.NodeName(c.Node), c.DriftPPM)
		}
	}
	by := make([]*trace.Correction, len(t.Nodes))
	for i := range clocks {
		by[clocks[i].Node] = &clocks[i]
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		if c := by[m.Src]; c != nil {
			m.Send = ToLocal(*c, m.Send)
		}
		if c := by[m.Dst]; c != nil {
			m.Recv = ToLocal(*c, m.Recv)
		}
	}
	t.MessagesEdited()
	if len(t.Clock) > 0 {
		t.Warnf("skewer: dropped %d clock corrections that no longer describe the trace", len(t.Clock))
		t.Clock = nil
	}
	return nil
}
