package linking

import (
	"fmt"
	"math"
	"runtime/debug"
	"time"

	"wap5/trace"
)

// Methods.
const (
	MethodJoint = "joint" // concurrency-aware joint linker (default)
	MethodWAP5  = "wap5"  // WAP5 §5 as published
)

// Delay models.
const (
	DelayExp   = "exp"   // f(t) = λe^{−λt}
	DelayGamma = "gamma" // f(t) = λ²te^{−λt} (shape 2), WAP5 §5.1
	DelayFit   = "fit"   // gamma with shape fitted by moments (joint only)
)

// Options control linking. The zero value means the defaults (see Defaults).
type Options struct {
	Method string // MethodJoint (default) or MethodWAP5
	// Window is x: the longest causal delay considered (default 2 s, WAP5's
	// value for CoDeeN and Coral).
	Window time.Duration
	// Spontaneous is y: the spontaneous alternative weighs as much as a link
	// with delay y·d (default 4).
	Spontaneous float64
	// DelayModel is DelayExp, DelayGamma or DelayFit; default DelayExp for
	// wap5 and DelayFit for joint.
	DelayModel string
	// Iterate repeats steps 1–2 (wap5) or J3–J4 (joint) until the estimates
	// settle, at most MaxIterations times (default 8 for wap5 when Iterate is
	// set; joint always iterates, default 4).
	Iterate       bool
	MaxIterations int
	// Settle (joint, whole traces): when the first pass with the joint
	// repair changes fewer than this share of the links chosen by the
	// sweeps before it, the assignment has settled and that pass is the
	// last (J5c; the second repair pass is skipped). Default 1e-3, the
	// share the sweeps' iteration calls settled; negative: never (always
	// the second repair pass).
	Settle float64
	// SettleSweep (joint, whole traces): when fewer than this share of
	// the first sweep's sends chose a parent less likely than 0.99, the
	// second sweep alone is skipped and the repair passes follow the
	// first (J5c). Default 0.01; negative: never.
	SettleSweep float64
	// SettleNode (joint, whole traces): a node where fewer than this share
	// of the sends the last sweep before the repair passes linked chose a
	// parent less likely than 0.99 is settled: the repair passes do not
	// sweep it again, and J4 moves only the calls that sweep was unsure
	// of (J5c per node). Default 0.01; negative: never.
	SettleNode float64
	// TryBoth is the try-both budget per tree (wap5; default 4: at most 16
	// instances per root); TryBothBand is the half width of the probability
	// band around 0.5 that makes a link try-both (default 0.25: 0.25–0.75).
	TryBoth     int
	TryBothBand float64
	// MinProb drops instances less likely than this (default 1e-3).
	MinProb float64
	// IgnoreKinds pairs RPCs by connection only, ignoring kind=/call=.
	IgnoreKinds bool
	// AggregateClients names client nodes CLIENT (WAP5 §2.5).
	AggregateClients bool
	// FixedPortPeers is how many distinct peer endpoints make a port fixed
	// (default 3).
	FixedPortPeers int
	// RootReturnsEnd (joint): the return of a spontaneous call ends its path;
	// a later send by that node starts a new one. Default true; set
	// KeepRootChains to link on past such returns.
	KeepRootChains bool
	// Histograms fills log histograms of the delays of the top HistTop
	// patterns (default 20; negative: none).
	HistTop int
	// NoInstances leaves Paths.Instances empty (patterns are still built).
	NoInstances bool
	// Top, when positive, builds only the top patterns (and their
	// instances): ranking still counts every pattern, but delays and steps
	// are computed for these alone.
	Top int
	// OnPattern, when set, receives every built pattern in rank order as
	// soon as it is built, instead of Paths.Patterns (which stays empty):
	// the linker keeps nothing of the pattern, so a caller that writes each
	// one out and drops it holds one pattern at a time rather than all of
	// them (hundreds of thousands on a large noisy trace). An error it
	// returns stops the aggregation, and Link returns it. With Stream,
	// Close hands the patterns over (Stream.Err is OnPattern's error), only
	// the top Top when Top is positive and without the warning Top adds
	// for a whole trace: what the caller would have kept of Paths.Patterns.
	OnPattern func(*trace.Pattern) error
	// ReusePatterns, with OnPattern, hands over patterns that are the
	// linker's again once OnPattern returns: the next pattern overwrites
	// the Pattern, its steps and its metrics, so OnPattern must copy what
	// it keeps. This saves making every pattern anew (hundreds of
	// thousands of patterns, millions of steps on a large noisy trace).
	ReusePatterns bool
	// Shown, when positive with OnPattern and NoInstances, hands over the
	// patterns ranked below the top Shown with their rank and counts only
	// (Rank, Count, Expected, MaxProb; no steps, no metrics): for a caller
	// that shows the top patterns and counts the others. Unlike Top, every
	// pattern is still handed over and no warning is added.
	Shown int
	// BeforePatterns, when set with OnPattern, is called once before the
	// first pattern is handed over (or before Link returns, when there is
	// none) with the result as it will be returned but for the patterns
	// and instances: what a caller reports before the patterns (the
	// warnings, the fit) in the order it did when Link returned them all.
	BeforePatterns func(*Result)
	// Stream links in time chunks of this length (plus the window on both
	// sides) so memory is bounded by a chunk; 0 links the trace at once.
	Stream time.Duration
	// OnInstance (with Stream) receives every path instance as soon as its
	// chunk is linked, instead of keeping it in Paths.Instances; the
	// result's StreamPatterns then place each pattern.
	OnInstance func(StreamInstance)
	// StreamMemory (with Stream) bounds the bytes of pattern shapes and
	// delay accumulators kept in memory: beyond it they are spilled to a
	// temporary file and read back when needed, with the same result
	// (spill.go). 0: DefaultStreamMemory; negative: never spill.
	StreamMemory int64
	// ActorMin and ActorChance (joint) gate the same-thread hint (J2b,
	// actors.go): where a node's calls with one possible request span left
	// from the thread that received it in at least the share ActorMin
	// (default 0.99) and chance agreement is at most ActorChance (default
	// 1e-6), a call from another thread costs a lot in a span. ActorMin > 1:
	// never. Traces without actors are unaffected.
	ActorMin    float64
	ActorChance float64
	// Lean (joint, whole traces) lets Link drop t.Messages during the
	// passes (J3–J5), when it keeps what they read of the messages apart
	// (a large trace's messages are most of the Go heap), and make them
	// again after J6 from what it kept: times, nodes, endpoints, kind and
	// threads, and ID where instances are kept (NoInstances unset; else
	// NoRef); Bytes is 0, Call and Truth NoRef. For a caller that reads
	// no more of t's messages after Link (wap5 link). Ignored with Stream.
	Lean bool
	// DropMessages, with Lean and NoInstances, leaves t.Messages empty
	// after Link (whole traces): the aggregation reads what the passes
	// kept of them, and they are not made again, but where clients are
	// aggregated (AggregateClients finds them from the messages). For a
	// caller that reads none of them (wap5 link without --instances).
	DropMessages bool
}

// Defaults returns o with every unset field at its default.
func (o Options) Defaults() Options {
	if o.Method == "" {
		o.Method = MethodJoint
	}
	if o.Window <= 0 {
		o.Window = 2 * time.Second
	}
	if o.Spontaneous <= 0 {
		o.Spontaneous = 4
	}
	if o.DelayModel == "" {
		if o.Method == MethodWAP5 {
			o.DelayModel = DelayExp
		} else {
			o.DelayModel = DelayFit
		}
	}
	if o.MaxIterations <= 0 {
		if o.Method == MethodWAP5 {
			o.MaxIterations = 8
		} else {
			o.MaxIterations = 4
		}
	}
	if o.Settle == 0 {
		o.Settle = 1e-3
	}
	if o.SettleSweep == 0 {
		o.SettleSweep = 0.01
	}
	if o.SettleNode == 0 {
		o.SettleNode = 0.01
	}
	if o.TryBoth <= 0 {
		o.TryBoth = 4
	}
	if o.TryBothBand <= 0 {
		o.TryBothBand = 0.25
	}
	if o.MinProb <= 0 {
		o.MinProb = 1e-3
	}
	if o.FixedPortPeers <= 0 {
		o.FixedPortPeers = 3
	}
	if o.HistTop == 0 {
		o.HistTop = 20
	}
	if o.ActorMin <= 0 {
		o.ActorMin = 0.99
	}
	if o.ActorChance <= 0 {
		o.ActorChance = 1e-6
	}
	return o
}

func (o Options) check() error {
	switch o.Method {
	case MethodJoint, MethodWAP5:
	default:
		return fmt.Errorf("unknown linking method %q (want joint or wap5)", o.Method)
	}
	switch o.DelayModel {
	case DelayExp, DelayGamma, DelayFit:
	default:
		return fmt.Errorf("unknown delay model %q (want exp, gamma or fit)", o.DelayModel)
	}
	if o.Method == MethodWAP5 && o.DelayModel == DelayFit {
		return fmt.Errorf("delay model fit is for method joint; wap5 takes exp or gamma")
	}
	if math.IsNaN(o.Spontaneous) || o.TryBoth > 30 || o.TryBothBand > 0.5 {
		return fmt.Errorf("bad linking options: y=%v try-both=%d band=%v", o.Spontaneous, o.TryBoth, o.TryBothBand)
	}
	return nil
}

// Result is the outcome of linking: the paths, and how well the delay models
// fit the chosen links.
type Result struct {
	trace.Paths
	Fit        Fit
	Iterations int // passes of steps 1–2 (wap5) or J3 (joint)
	// StreamPatterns (Stream with OnInstance): by stream pattern id, its
	// rank and step order.
	StreamPatterns []StreamPattern
	// Actors (joint, whole trace) holds what J2b learnt per node whose
	// requests or calls carry actors.
	Actors []ActorHabit
}

// Fit compares delay models on the delays of the chosen (most likely)
// links: the total log-likelihood of each model with its maximum-likelihood
// parameters per transition class.
type Fit struct {
	Samples int
	LogLik  map[string]float64 // by model: exp, gamma (shape 2), fit (gamma, free shape)
	Best    string
	Settled bool    // iteration stopped because the estimates settled
	Change  float64 // last relative change of the estimates
}

// Link infers causal paths from t. It sorts t's messages by time (instances
// refer to message indices of the sorted trace) and never modifies them
// otherwise.
func Link(t *trace.Trace, opts Options) (*Result, error) {
	opts = opts.Defaults()
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := t.CheckValid(); err != nil {
		return nil, fmt.Errorf("linking: %w", err)
	}
	t.Sort()
	if opts.Stream > 0 {
		opts.Lean = false
		return linkStream(t, opts)
	}
	// Options.Lean on a large trace: what the caller left in the heap
	// (a text reader's tables and their growth, the clock estimate's
	// samples: hundreds of MB on the CoDeeN-sized text trace) is given
	// back before the run's arrays are made outside the heap, where they
	// could not reuse it.
	if opts.Lean && len(t.Messages) >= lowGCMessages {
		debug.FreeOSMemory()
	}
	l := newLinker(t, opts, nil)
	return l.run()
}
