package trace

// ClockMap maps a node's local timestamps to the reference clock using the
// trace's clock corrections. Corrections already applied to the message
// times (Applied) map to themselves.
type ClockMap struct {
	corr []*Correction // by node; nil: no correction
}

// NewClockMap indexes t.Clock by node.
func NewClockMap(t *Trace) *ClockMap {
	c := &ClockMap{corr: make([]*Correction, len(t.Nodes))}
	for i := range t.Clock {
		k := &t.Clock[i]
		if k.Applied || k.Node < 0 || int(k.Node) >= len(c.corr) {
			continue
		}
		c.corr[k.Node] = k
	}
	return c
}

// Reference returns the reference-clock time of local time local on node n
// (node clock = reference + Offset + DriftPPM·1e-6·(t − At)); Unknown stays
// Unknown.
func (c *ClockMap) Reference(n NodeID, local int64) int64 {
	if local == Unknown || c == nil || n < 0 || int(n) >= len(c.corr) || c.corr[n] == nil {
		return local
	}
	k := c.corr[n]
	drift := int64(k.DriftPPM * 1e-6 * float64(local-k.At))
	return local - k.Offset - drift
}
