package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"wap5/skew"

	"github.com/urfave/cli/v2"

	"wap5/internal/hugemem"
	"wap5/linking"
	"wap5/render"
	"wap5/trace"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "link",
			Usage:     "message linking (WAP5 §5): causal path patterns with node and network delays",
			ArgsUsage: "TRACE",
			Description: "Infers causal paths by message linking. --method joint (default) pairs RPCs and " +
				"chooses parents jointly per node (spans, delay models learned by iteration, minimum-cost " +
				"assignment); --method wap5 is WAP5 §5 as published (exponential delay model, try-both " +
				"trees). --window D links in time chunks of D so that memory stays bounded by a chunk " +
				"(text input is then read as a stream and must be in time order, binary input block by block; " +
				"pattern shapes and delays, and the joint linker's carried delay models, beyond --window-memory go to temporary files; --instances are spooled " +
				"to a temporary file next to FILE and written once the patterns are ranked).",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "machine-readable output (the contract's JSON)"},
				&cli.StringFlag{Name: "instances", Usage: "write one JSON line per path instance to `FILE`"},
				&cli.StringFlag{Name: "method", Value: linking.MethodJoint, Usage: "joint or wap5"},
				&cli.DurationFlag{Name: "max-delay", Value: 2 * time.Second, Usage: "x: the longest causal delay considered"},
				&cli.Float64Flag{Name: "spontaneous", Value: 4, Usage: "y: the spontaneous alternative weighs as a delay of y·d"},
				&cli.StringFlag{Name: "delay-model", Usage: "exp, gamma (shape 2) or fit (joint: gamma fitted by moments); default exp for wap5, fit for joint"},
				&cli.BoolFlag{Name: "iterate", Usage: "wap5: iterate steps 1–2 until λ settles"},
				&cli.IntFlag{Name: "iterations", Usage: "at most `N` iterations (default 8 wap5, 4 joint)"},
				&cli.Float64Flag{Name: "settle", Usage: "joint: skip the second repair pass when the first changed fewer than this `SHARE` of the links (default 0.001; negative: never)"},
				&cli.Float64Flag{Name: "settle-sweep", Usage: "joint: skip the second sweep when fewer than this `SHARE` of the first's sends chose a parent less likely than 0.99 (default 0.01; negative: never)"},
				&cli.Float64Flag{Name: "settle-node", Usage: "joint: do not sweep again a node where fewer than this `SHARE` of the last sweep's sends chose a parent less likely than 0.99; the repair moves only its unsure calls (default 0.01; negative: never)"},
				&cli.IntFlag{Name: "try-both", Value: 4, Usage: "wap5: try-both budget per tree"},
				&cli.BoolFlag{Name: "aggregate-clients", Usage: "name client nodes CLIENT (WAP5 §2.5)"},
				&cli.BoolFlag{Name: "ignore-kinds", Usage: "ignore kind=/call= and pair RPCs by connection only"},
				&cli.DurationFlag{Name: "window", Usage: "streaming: link in time chunks of `D`, memory bounded by a chunk"},
				&cli.IntFlag{Name: "window-memory", Value: linking.DefaultStreamMemory >> 20, Usage: "streaming: keep at most `MB` of pattern shapes and delays, and as much of the joint linker's carried delay models, in memory and spill the rest to temporary files (same result; 0: spill every chunk, negative: never)"},
				&cli.IntFlag{Name: "top", Usage: "show only the top `N` patterns (text default 20)"},
				&cli.BoolFlag{Name: "histograms", Usage: "text: draw node-delay histograms"},
				&cli.BoolFlag{Name: "no-skew", Usage: "do not estimate clock offsets when the trace carries none (net_s then uses raw timestamps)"},
				&cli.Float64Flag{Name: "actor-min", Value: 0.99, Usage: "joint: a call from another thread (sa=/da=) than the one that received a span's request costs a lot where at least this `SHARE` of a node's calls with one possible span show the habit (> 1: never)"},
				&cli.Float64Flag{Name: "actor-chance", Value: 1e-6, Usage: "... and that agreement has at most this `PROBABILITY` of being chance"},
			},
			Action: linkAction,
		}
	})
}

func linkAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("link wants one TRACE, got %d arguments", c.NArg())
	}
	o := linking.Options{
		Method:           c.String("method"),
		Window:           c.Duration("max-delay"),
		Spontaneous:      c.Float64("spontaneous"),
		DelayModel:       c.String("delay-model"),
		Iterate:          c.Bool("iterate"),
		MaxIterations:    c.Int("iterations"),
		Settle:           c.Float64("settle"),
		SettleSweep:      c.Float64("settle-sweep"),
		SettleNode:       c.Float64("settle-node"),
		TryBoth:          c.Int("try-both"),
		AggregateClients: c.Bool("aggregate-clients"),
		IgnoreKinds:      c.Bool("ignore-kinds"),
		Stream:           c.Duration("window"),
		StreamMemory:     streamMemory(c.Int("window-memory")),
		// Instances cost memory per message; keep them only when asked.
		NoInstances: c.String("instances") == "",
		Top:         c.Int("top"),
		ActorMin:    c.Float64("actor-min"),
		ActorChance: c.Float64("actor-chance"),
		// Nothing reads the messages after linking but --instances
		// (their ids): the linker may drop them during its passes, and
		// without --instances need not make them again.
		Lean:         true,
		DropMessages: c.String("instances") == "",
	}
	if o.Method != linking.MethodJoint && o.Method != linking.MethodWAP5 {
		return usagef("--method %q: want joint or wap5", o.Method)
	}
	if m := o.DelayModel; m != "" && m != linking.DelayExp && m != linking.DelayGamma && m != linking.DelayFit {
		return usagef("--delay-model %q: want exp, gamma or fit", m)
	}
	if o.Window <= 0 || o.Stream < 0 || c.Int("top") < 0 || o.TryBoth < 1 {
		return usagef("--max-delay, --window, --top and --try-both must be positive")
	}
	if o.ActorMin <= 0 || o.ActorChance <= 0 {
		return usagef("--actor-min and --actor-chance must be positive")
	}
	path := c.Args().First()
	// Streaming keeps no instances: they go to a spool file as they are
	// found and are written out once the patterns have their ranks.
	var spool *instanceSpool
	if p := c.String("instances"); p != "" && o.Stream > 0 {
		var err error
		if spool, err = newInstanceSpool(p); err != nil {
			return err
		}
		defer spool.close()
		o.OnInstance = spool.add
	}
	var (
		t   *trace.Trace
		res *linking.Result
		err error
	)
	// What goes to stderr once the trace is linked, before the patterns.
	report := func(res *linking.Result) {
		for _, w := range res.Warnings {
			fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
		}
		if f := res.Fit; f.Samples > 0 {
			fmt.Fprintf(c.App.ErrWriter, "wap5: link: delay models over %d links (log-likelihood): exp %.1f, gamma %.1f, fit %.1f; best %s; %d iterations\n",
				f.Samples, f.LogLik[linking.DelayExp], f.LogLik[linking.DelayGamma], f.LogLik[linking.DelayFit], f.Best, res.Iterations)
		}
		for _, a := range res.Actors {
			fmt.Fprintf(c.App.ErrWriter, "wap5: link: actors at %s: %s\n", t.NodeName(a.Node), a)
		}
	}
	// The patterns are taken as the linker builds them (Options.OnPattern;
	// a whole trace's in memory the linker reuses for the next,
	// Options.ReusePatterns), so that they are not all held at once: with
	// --json each is written and dropped; as text, the shown ones are
	// copied and kept, and the others handed over with their counts only
	// (Options.Shown), which are summed for the table's first line.
	var (
		pw     *render.PathsWriter
		kept   []*trace.Pattern
		counts render.LinkCounts
	)
	o.BeforePatterns = report
	o.ReusePatterns = true
	if c.Bool("json") {
		pw = render.NewPathsWriter(c.App.Writer, "linking")
		o.OnPattern = pw.Pattern
	} else {
		shown := c.Int("top")
		if shown == 0 {
			shown = 20
		}
		o.Shown = shown
		o.OnPattern = func(p *trace.Pattern) error {
			counts.Patterns++
			counts.Instances += p.Count
			counts.Expected += p.Expected
			if len(kept) < shown {
				kept = append(kept, clonePattern(p))
			}
			return nil
		}
	}
	if o.Stream > 0 {
		var reset func() error
		if spool != nil {
			reset = spool.reset
		}
		t, res, err = linkStreaming(path, o, reset)
	} else {
		hugemem.Reserve(linkReserve(path))
		// The memory outside the heap that the reader and the linker's
		// steps give back is kept for the arrays of the steps that
		// follow, rather than unmapped and fresh memory faulted in.
		hugemem.KeepUpTo(math.MaxInt, keepIdle(o), o.Method != linking.MethodWAP5)
		defer hugemem.Keep(false)
		// Where the linker reads no more of a message than its envelope,
		// a version 3 binary trace is decoded straight into envelopes
		// (two thirds of the messages' memory, which a fresh process
		// pays for in page faults), without the endpoints' names (nothing
		// reads them without instances or clients aggregated); anything
		// else is read whole.
		var env []trace.Envelope
		if linking.EnvelopesSuffice(o) {
			var release func()
			var ok bool
			if t, env, release, ok = trace.ReadFileEnvelopesNoNames(path); ok {
				defer release()
			}
			if len(env) == 0 {
				env = nil // (an empty trace is read the usual way)
			}
		}
		if env == nil {
			// Nor the endpoints' names where no instances are written
			// and the linker reads no more than which are unix sockets.
			if o.NoInstances && linking.NamesUnread(o) {
				var release func()
				if t, release, err = trace.ReadFileKindNames(path); err != nil {
					return err
				}
				defer release()
			} else if t, err = trace.ReadFile(path); err != nil {
				return err
			}
		}
		if !c.Bool("no-skew") {
			// The clock estimate's garbage (its samples) would pile up
			// to the size of the trace's messages or envelopes before
			// the collector ran where the heap holds them: on a large
			// trace it runs at GOGC 20 (Link gives the heap's free
			// memory back after; the messages are outside the heap
			// where memory is kept, and the heap is then small, but
			// J1's tables grow into what the estimate left), and GOGC
			// 35 with envelopes in the heap. Envelopes read outside the
			// heap (kept memory) leave the heap the estimate's own
			// memory only, and the default is kept: at GOGC 35 the
			// collector ran 16 times during the estimate on the
			// CoDeeN-sized trace, 8 at 100, for a peak of 266 and
			// 275-280 MB (both below the WAP5 steps').
			restore := func() {}
			if pct := 20; (len(t.Messages) >= 1<<20 || len(env) >= 1<<20) && !(env != nil && hugemem.Mapped(env)) {
				if env != nil {
					pct = 35
				}
				old := debug.SetGCPercent(pct)
				restore = func() { debug.SetGCPercent(old) }
			}
			for _, w := range correctClocks(t, env) {
				fmt.Fprintf(c.App.ErrWriter, "wap5: warning: skew: %s\n", w)
			}
			restore()
		}
		if env != nil {
			res, err = linking.LinkEnvelopes(t, env, o)
		} else {
			res, err = linking.Link(t, o)
		}
	}
	if err != nil {
		return err
	}
	if p := c.String("instances"); p != "" {
		if spool != nil {
			err = spool.finish(p, t, res.StreamPatterns, o.Top)
		} else {
			err = writeInstances(p, t, &res.Paths)
		}
		if err != nil {
			return err
		}
	}
	if pw != nil {
		return pw.Close(res.Warnings)
	}
	res.Paths.Patterns = kept
	return writePaths(c, res.Paths, func(w io.Writer, p *trace.Paths, top int) error {
		lo := &render.LinkTextOptions{Top: top, Histograms: c.Bool("histograms"), Counts: &counts}
		return render.LinkText(w, p, lo)
	})
}

// streamMemory is Options.StreamMemory for --window-memory mb.
func streamMemory(mb int) int64 {
	switch {
	case mb < 0:
		return -1
	case mb == 0:
		return 1 // spill at the end of every chunk
	}
	return int64(mb) << 20
}

// clonePattern is a copy of p that shares nothing with it but the steps'
// histograms (which the linker makes anew for every pattern).
func clonePattern(p *trace.Pattern) *trace.Pattern {
	q := *p
	q.Metrics = maps.Clone(p.Metrics)
	q.Root = cloneStep(p.Root)
	return &q
}

func cloneStep(s *trace.Step) *trace.Step {
	if s == nil {
		return nil
	}
	c := *s
	c.Delays = slices.Clone(s.Delays)
	if s.Children != nil {
		c.Children = make([]*trace.Step, len(s.Children))
		for i, k := range s.Children {
			c.Children[i] = cloneStep(k)
		}
	}
	return &c
}

// keepIdle is how much of the memory kept outside the heap (hugemem.KeepUpTo)
// may be resident and idle at once. The joint linker hands the messages'
// memory (hundreds of MB) to the arrays of its passes, which take it over
// J2 and the first sweep, and the decompressed input's to J1's (the input
// is kept as it is read: KeepUpTo's input); its peak comes later, in the
// passes, and what is kept goes back before J6 (and as fresh memory is
// taken). The WAP5 method's arrays take the packed envelopes' second
// part, and its steps' memory would reach above the clock estimate's
// (the base's peak) with all of it kept: on the CoDeeN-sized trace, with
// at most 48, 96, 160 MB or no bound kept idle, 286-289, 285-293, 313 and
// 312-314 MB at the peak and 779-788, 692-693, 633-657 and 595-676 MB
// faulted in afresh (2 runs each; the base: 305-316 MB and 924-949 MB).
func keepIdle(o linking.Options) int {
	if o.Method == linking.MethodWAP5 {
		return keepIdleWAP5
	}
	return math.MaxInt
}

const keepIdleWAP5 = 96 << 20

// linkReserve is how much heap to reserve in huge pages (hugemem.Reserve)
// before reading the trace at path and linking it whole: the heap grows to
// ~5.5 times a binary trace's size by the joint linker's passes (the
// messages, J1's tables, the clients' endpoint sets, the instances) and to
// ~8 times with every pattern built (the CoDeeN-sized trace: 111 MB, 600
// MB of heap at J2, more while the patterns are built and written), which
// 4 KB page faults would touch in 150,000 faults or more; a text trace is
// ~5 times larger per message. So 9 times a binary trace and once a text
// one, at most 4 GB (Reserve takes at most half the memory available;
// untouched, the reserve costs address space only).
func linkReserve(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	var head [len(trace.BinaryMagic)]byte
	size := st.Size()
	if _, err := io.ReadFull(f, head[:]); err == nil && string(head[:]) == trace.BinaryMagic {
		size *= 9
	}
	return int(min(size, 4<<30))
}

func writeInstances(path string, t *trace.Trace, p *trace.Paths) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := render.Instances(f, t, p); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// instanceSpool holds the instances of a streaming run in a temporary file
// (pattern id, probability, and every message's id and push position, as
// varints) until the patterns are ranked; finish then writes the contract's
// --instances lines, in the order the instances were found.
type instanceSpool struct {
	f   *os.File
	w   *bufio.Writer
	err error
	buf []byte
}

func newInstanceSpool(path string) (*instanceSpool, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".wap5-instances-*")
	if err != nil {
		return nil, err
	}
	return &instanceSpool{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

func (sp *instanceSpool) add(in linking.StreamInstance) {
	if sp.err != nil {
		return
	}
	b := binary.AppendUvarint(sp.buf[:0], uint64(in.Pattern))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(in.Prob))
	b = binary.AppendUvarint(b, uint64(len(in.Messages)))
	for k := range in.Messages {
		b = binary.AppendVarint(b, in.Messages[k].ID)
		b = binary.AppendVarint(b, in.Seq[k])
	}
	_, sp.err = sp.w.Write(b)
	sp.buf = b
}

// reset empties the spool.
func (sp *instanceSpool) reset() error {
	if sp.err == nil {
		sp.w.Reset(sp.f)
		if sp.err = sp.f.Truncate(0); sp.err == nil {
			_, sp.err = sp.f.Seek(0, io.SeekStart)
		}
	}
	return sp.err
}

func (sp *instanceSpool) close() {
	sp.f.Close()
	os.Remove(sp.f.Name())
}

// finish writes the spooled instances of the patterns ranked within top (all
// when top is 0) to path, with ranks and the patterns' final step order.
func (sp *instanceSpool) finish(path string, t *trace.Trace, pats []linking.StreamPattern, top int) error {
	if sp.err == nil {
		sp.err = sp.w.Flush()
	}
	if sp.err == nil {
		_, sp.err = sp.f.Seek(0, io.SeekStart)
	}
	if sp.err != nil {
		return fmt.Errorf("%s: spooling instances: %w", path, sp.err)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	enc := json.NewEncoder(bw)
	type inst struct {
		Pattern int      `json:"pattern"`
		Prob    float64  `json:"prob"`
		IDs     []string `json:"ids"`
	}
	r := bufio.NewReaderSize(sp.f, 1<<16)
	var canon []string
	bad := func(err error) error {
		out.Close()
		return fmt.Errorf("%s: reading the instance spool: %w", path, err)
	}
	for {
		pat, err := binary.ReadUvarint(r)
		if err == io.EOF {
			break
		}
		var pb [8]byte
		if err == nil {
			_, err = io.ReadFull(r, pb[:])
		}
		var n uint64
		if err == nil {
			n, err = binary.ReadUvarint(r)
		}
		if err != nil {
			return bad(err)
		}
		canon = canon[:0]
		for k := uint64(0); k < n; k++ {
			id, err := binary.ReadVarint(r)
			if err != nil {
				return bad(err)
			}
			seq, err := binary.ReadVarint(r)
			if err != nil {
				return bad(err)
			}
			if id != trace.NoRef {
				canon = append(canon, t.RefString(id))
			} else {
				canon = append(canon, "L"+strconv.FormatInt(seq+1, 10))
			}
		}
		if pat >= uint64(len(pats)) {
			return bad(fmt.Errorf("pattern %d of %d", pat, len(pats)))
		}
		p := pats[pat]
		if top > 0 && p.Rank > top {
			continue
		}
		o := inst{Pattern: p.Rank, Prob: math.Round(math.Float64frombits(binary.LittleEndian.Uint64(pb[:]))*1e9) / 1e9, IDs: canon}
		if p.Perm != nil {
			o.IDs = make([]string, len(canon))
			for k, src := range p.Perm {
				o.IDs[k] = canon[src]
			}
		}
		if err := enc.Encode(o); err != nil {
			out.Close()
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// linkStreaming reads a text or binary trace message by message into a
// linking stream; other forms (and binary input on stdin) are read whole
// and then streamed. A binary trace whose messages are not in time order
// is read again whole (Link sorts it), after reset (which empties what
// the stream gave Options.OnInstance), so that the result is the same.
func linkStreaming(path string, o linking.Options, reset func() error) (*trace.Trace, *linking.Result, error) {
	var r *bufio.Reader
	name := path
	if path == "-" {
		r, name = bufio.NewReaderSize(os.Stdin, 1<<16), "<stdin>"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		r = bufio.NewReaderSize(f, 1<<16)
	}
	head, _ := r.Peek(512)
	if bytes.HasPrefix(head, []byte(trace.BinaryMagic)) && path != "-" {
		t, res, sorted, err := linkBinaryStreaming(r, name, o)
		if sorted {
			return t, res, err
		}
		if reset != nil {
			if err := reset(); err != nil {
				return nil, nil, err
			}
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		r = bufio.NewReaderSize(f, 1<<16)
		head, _ = r.Peek(512)
	}
	if !bytes.HasPrefix(head, []byte(trace.TextHeader)) && !strings.HasPrefix(string(head), "#") {
		t, err := trace.Read(r, name)
		if err != nil {
			return nil, nil, err
		}
		res, err := linking.Link(t, o)
		return t, res, err
	}
	t := trace.New()
	s, err := linking.NewStream(t, o)
	if err != nil {
		return nil, nil, err
	}
	sc := trace.NewTextScanner(r, name, t)
	for sc.Scan() {
		s.Push(sc.Message())
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	res := s.Close()
	return t, res, s.Err()
}

// linkBinaryStreaming links a binary trace as it is read, a block of
// messages at a time (trace.BinaryScanner: the tables, then the blocks).
// sorted is false, and nothing is returned, when its messages turn out
// not to be in time order: the stream is abandoned, for the caller to
// read the trace whole.
func linkBinaryStreaming(r io.Reader, name string, o linking.Options) (t *trace.Trace, res *linking.Result, sorted bool, err error) {
	// The stream needs no endpoint names (a large trace's table is most of
	// what the scanner would hold): it numbers the endpoints itself.
	sc, err := trace.NewBinaryScannerNoNames(r, name)
	if err != nil {
		return nil, nil, true, err
	}
	defer sc.Close()
	t = sc.Trace()
	s, err := linking.NewStream(t, o)
	if err != nil {
		return nil, nil, true, err
	}
	s.RenumberEndpoints(sc.UnixEndpoint)
	last := int64(math.MinInt64)
	for sc.Scan() {
		m := sc.Message()
		if tm := m.Time(); tm >= last {
			last = tm
		} else {
			s.Discard()
			return nil, nil, false, nil
		}
		s.Push(m)
	}
	if err := sc.Err(); err != nil {
		s.Discard()
		return nil, nil, true, err
	}
	res = s.Close()
	return t, res, true, s.Err()
}

// correctClocks estimates clock offsets for a trace that carries no clock
// corrections, so that network delays (net_s) are offset-corrected by
// default (issue 5). Only offsets larger than their error bound are recorded:
// nodes that share one clock (one host, or namespaces of one kernel) then
// keep their raw timestamps instead of gaining a spurious offset. A trace
// with no second clock to compare (skew.Comparable) is left as it is, without
// a warning. The messages are t's, or env where it is not nil
// (trace.ReadFileEnvelopesOnly).
func correctClocks(t *trace.Trace, env []trace.Envelope) []string {
	if len(t.Clock) > 0 {
		return nil
	}
	var res *skew.Result
	var err error
	switch {
	case env != nil && !skew.ComparableEnvelopes(env), env == nil && !skew.Comparable(t):
		return nil
	case env != nil:
		res, err = skew.EstimateEnvelopes(t, env, skew.Options{})
	default:
		res, err = skew.Estimate(t, skew.Options{})
	}
	if err != nil {
		return []string{err.Error()}
	}
	var cs []trace.Correction
	for _, n := range res.Nodes {
		if n.Status != skew.Corrected || abs64(n.Offset) <= n.Error {
			continue
		}
		cs = append(cs, n.Segments...)
	}
	if len(cs) > 0 {
		skew.Record(t, cs)
	}
	return res.Warnings
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
