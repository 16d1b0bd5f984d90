package trace

import "math"

// Paths is what every inference algorithm returns: causal path patterns
// ranked by importance, optionally their instances, and warnings. It is the
// one representation renderers, comparison, critical-path and outlier
// analysis work on, whichever algorithm produced it.
type Paths struct {
	Algorithm string // "linking", "nesting", "convolution"
	Patterns  []*Pattern
	Instances []Instance
	Warnings  []string
}

// Pattern is a causal path pattern: a tree of steps (linking and nesting) or
// a chain (convolution), with how often it occurred.
type Pattern struct {
	Rank     int     // 1-based
	Count    int     // number of instances (convolution: the smallest message count along the path)
	Expected float64 // sum of instance probabilities (linking); Count otherwise
	MaxProb  float64 // highest instance probability (linking); 1 otherwise
	Root     *Step
	// Metrics holds extra ranking metrics by name (WAP5 §6.6), e.g. "depth",
	// "endpoints", "time_s".
	Metrics map[string]float64
}

// Step is one message edge of a pattern, from the node that sent it to the
// node that received it, with the delays measured on it.
type Step struct {
	From, To string
	Kind     Kind  // call, return or none
	Count    int   // instances (or messages) that contributed
	Net      Stats // one-way network delay, send to receive (offset-corrected where possible)
	Wait     Stats // delay inside From between receiving the parent message and sending this one
	Latency  Stats // a call's duration: from sending the call to receiving its return
	// Delays are the distinct delays found on this edge (convolution's spikes), seconds.
	Delays   []float64
	Children []*Step
}

// Walk calls f for s and every step below it, depth first, with its depth.
func (s *Step) Walk(f func(st *Step, depth int)) { s.walk(f, 0) }

func (s *Step) walk(f func(*Step, int), d int) {
	f(s, d)
	for _, c := range s.Children {
		c.walk(f, d+1)
	}
}

// Instance is one occurrence of a pattern: message indices into the trace,
// in the order of a depth-first walk of the pattern.
type Instance struct {
	Pattern  int // rank
	Prob     float64
	Messages []int32
}

// Stats summarises a delay in seconds over weighted samples. W == 0 means no
// sample: the delay is unknown.
type Stats struct {
	W                   float64 // total weight (a count, or a sum of probabilities)
	Mean, Std, Min, Max float64
	Hist                *Histogram
}

// Known reports whether there was any sample.
func (s Stats) Known() bool { return s.W > 0 }

// Accumulator builds Stats from weighted samples (West's weighted variance).
type Accumulator struct {
	w, mean, s2, min, max float64
	hist                  *Histogram
}

// WithHistogram makes the accumulator also fill h.
func (a *Accumulator) WithHistogram(h *Histogram) *Accumulator { a.hist = h; return a }

// Add adds sample x (seconds) with weight w > 0.
func (a *Accumulator) Add(x, w float64) {
	if w <= 0 || math.IsNaN(x) {
		return
	}
	if a.w == 0 {
		a.min, a.max = x, x
	}
	// math.Min and math.Max without the calls: x and the extremes are
	// never NaN here, so only zeros of both signs need their rule (−0 is
	// the smaller).
	if x < a.min || x == 0 && a.min == 0 && math.Signbit(x) {
		a.min = x
	}
	if x > a.max || x == 0 && a.max == 0 && !math.Signbit(x) {
		a.max = x
	}
	a.w += w
	d := x - a.mean
	a.mean += d * w / a.w
	a.s2 += w * d * (x - a.mean)
	if a.hist != nil {
		a.hist.Add(x, w)
	}
}

// Stats returns the summary so far.
func (a *Accumulator) Stats() Stats {
	if a.w == 0 {
		return Stats{}
	}
	return Stats{W: a.w, Mean: a.mean, Std: math.Sqrt(math.Max(a.s2/a.w, 0)), Min: a.min, Max: a.max, Hist: a.hist}
}

// Histogram has logarithmic bins: bin i covers [Lo·Ratio^i, Lo·Ratio^(i+1));
// samples below Lo go to Under, at or above the top to Over.
type Histogram struct {
	Lo, Ratio   float64
	Counts      []float64
	Under, Over float64
}

// NewLogHistogram returns n bins from lo growing by ratio (Project 5 uses
// lo = 1 ms, ratio = 1.05, n = 340: 2 h falls in bin 323).
func NewLogHistogram(lo, ratio float64, n int) *Histogram {
	return &Histogram{Lo: lo, Ratio: ratio, Counts: make([]float64, n)}
}

// Bin returns the bin of x, −1 below the range and len(Counts) above it.
func (h *Histogram) Bin(x float64) int {
	if x < h.Lo {
		return -1
	}
	i := int(math.Log(x/h.Lo) / math.Log(h.Ratio))
	if i >= len(h.Counts) {
		return len(h.Counts)
	}
	return i
}

// Add adds x with weight w.
func (h *Histogram) Add(x, w float64) {
	switch i := h.Bin(x); {
	case i < 0:
		h.Under += w
	case i >= len(h.Counts):
		h.Over += w
	default:
		h.Counts[i] += w
	}
}

// Edge returns the lower edge of bin i.
func (h *Histogram) Edge(i int) float64 { return h.Lo * math.Pow(h.Ratio, float64(i)) }
