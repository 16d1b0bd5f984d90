package linking

import (
	"fmt"
	"math"
	"slices"

	"wap5/trace"
)

// Stream links messages pushed in time order with memory bounded by a chunk:
// it links time chunks of Options.Stream, each with the window x of context
// on both sides, keeps the instances whose root falls in the chunk, and
// carries the delay models from chunk to chunk. Instances are aggregated as
// they are found and not kept (Paths.Instances stays empty; Options.OnInstance
// receives each one as its chunk is linked), and histograms are not filled.
type Stream struct {
	t   *trace.Trace // node, endpoint and label tables; Messages unused
	o   Options
	buf []trace.Message
	// bufMem holds buf outside the heap (joint): the chunk and its context
	// (≈ 80,000 messages, 5 MB, on the CoDeeN-sized trace) live as long as
	// the stream, and in the heap they would count up to twice towards the
	// peak through the collector's goal. The WAP5 method keeps buf in the
	// heap: without heapCap, a smaller live heap only makes the collector
	// run more often (+7 % CPU on the CoDeeN-sized trace).
	bufMem offHeap
	bufOff bool
	seq    []int64 // push position of every buffered message (OnInstance only)
	next   int64   // push position of the next message
	inst   StreamInstance
	core   int64 // start of the chunk being filled; MinInt64 before the first message
	a      *aggregator
	tab    *spillTable // the patterns, bounded (spill.go)
	mod    *models
	late   int
	fit    Fit
	iters  int
	warn   []string
	order  []int32
	// claimed marks the buffered messages the chunk's instances took
	// (joint), dropped from the next chunk's context.
	claimed []bool
	// endpoints is the size of the endpoint table after the last compaction.
	endpoints int
	shared    bool // t holds the whole trace: its tables must stay intact
	// classBudget bounds the carried classes' bytes (--window-memory), apart
	// from the pattern table's budget, which a failed spill file gives up.
	classBudget int64
	err         error // OnPattern's, in Close
	// renum maps the pushed messages' endpoint ids (an external table's,
	// RenumberEndpoints) to t's; unix tells which are unix sockets.
	renum map[trace.EndpointID]trace.EndpointID
	unix  func(trace.EndpointID) bool
	// hcap keeps the Go memory after the first chunks at what they needed
	// (joint; heapcap.go); nil where another stream holds it.
	hcap *heapCap
}

// NewStream starts a stream over messages whose nodes and endpoints are
// interned in t (t.Messages is ignored; t's tables may keep growing).
func NewStream(t *trace.Trace, opts Options) (*Stream, error) {
	opts = opts.Defaults()
	if opts.Stream <= 0 {
		return nil, fmt.Errorf("linking: stream needs a chunk length")
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.NoInstances = true
	opts.HistTop = -1
	a := newAggregator(-1)
	a.byHash = nil // the table's (spillTable)
	budget := opts.StreamMemory
	if budget == 0 {
		budget = DefaultStreamMemory
	}
	s := &Stream{t: t, o: opts, core: math.MinInt64, a: a, tab: newSpillTable(a, budget), classBudget: budget, mod: newModels()}
	if opts.Method != MethodWAP5 {
		s.bufMem.from, s.bufOff = 1, true // every buffer outside the heap
		s.hcap = newHeapCap()
	}
	return s, nil
}

// KeepTables tells s that its trace's tables are complete and fixed (a
// binary trace's, read as a stream): it never compacts the endpoint table,
// whose ids the messages pushed keep.
func (s *Stream) KeepTables() { s.shared = true }

// RenumberEndpoints tells s that the messages pushed carry the endpoint ids
// of an external table whose names t does not hold (a binary trace's, read
// by trace.NewBinaryScannerNoNames: millions of ephemeral ports), and unix
// which of them are unix sockets. s gives the endpoints its chunks use ids
// of its own in t's table, named by their kind only ("unix:" or ""; the
// linking reads nothing else of an endpoint but its identity), and keeps
// that table to the endpoints it buffers, as for a text stream; the
// messages handed to Options.OnInstance carry those ids. Call it before the
// first Push.
func (s *Stream) RenumberEndpoints(unix func(trace.EndpointID) bool) {
	s.renum, s.unix = map[trace.EndpointID]trace.EndpointID{}, unix
	s.t.Endpoints = []string{s.t.Endpoints[trace.NoEndpoint]}
}

// local is the stream's id of external endpoint e (RenumberEndpoints).
func (s *Stream) local(e trace.EndpointID) trace.EndpointID {
	if e == trace.NoEndpoint {
		return e
	}
	l, ok := s.renum[e]
	if !ok {
		l = trace.EndpointID(len(s.t.Endpoints))
		name := ""
		if s.unix(e) {
			name = "unix:"
		}
		s.t.Endpoints = append(s.t.Endpoints, name)
		s.renum[e] = l
	}
	return l
}

// compactRenumbered keeps the stream's endpoint table (RenumberEndpoints)
// to the endpoints the buffer uses, renumbered in buffer order (as
// trace.CompactEndpoints does a text stream's), and the map from the
// external ids to them.
func (s *Stream) compactRenumbered() {
	remap := make(map[trace.EndpointID]trace.EndpointID, 2*len(s.buf)+1)
	eps := []string{s.t.Endpoints[trace.NoEndpoint]}
	remap[trace.NoEndpoint] = trace.NoEndpoint
	get := func(e trace.EndpointID) trace.EndpointID {
		n, ok := remap[e]
		if !ok {
			n = trace.EndpointID(len(eps))
			eps = append(eps, s.t.Endpoints[e])
			remap[e] = n
		}
		return n
	}
	for i := range s.buf {
		s.buf[i].SrcEP = get(s.buf[i].SrcEP)
		s.buf[i].DstEP = get(s.buf[i].DstEP)
	}
	renum := make(map[trace.EndpointID]trace.EndpointID, len(eps))
	for e, l := range s.renum {
		if n, ok := remap[l]; ok {
			renum[e] = n
		}
	}
	s.t.Endpoints, s.renum = eps, renum
}

// Discard abandons s (without Close): it frees the pattern spill file and
// the memory outside the heap.
func (s *Stream) Discard() {
	s.hcap.stop()
	s.tab.close()
	s.mod.free()
	s.buf = nil
	s.bufMem.free()
}

// StreamInstance is one path instance found by a Stream, given to
// Options.OnInstance as soon as its chunk is linked (the slices are valid
// during the call only).
type StreamInstance struct {
	// Pattern is the instance's pattern, by stream id: the result's
	// StreamPatterns[Pattern] gives its rank and final step order.
	Pattern int
	Prob    float64
	// Messages are the instance's messages in the pattern's canonical
	// order; Seq their positions in push order (for a loaded trace, their
	// indices in the sorted trace).
	Messages []trace.Message
	Seq      []int64
}

// StreamPattern places a stream pattern in the result: its rank in
// Result.Patterns and, when the final step order differs from the canonical
// one that StreamInstance.Messages follow, Perm (final position → canonical
// position).
type StreamPattern struct {
	Rank int
	Perm []int32
}

// Push adds the next message. Messages must come in time order, give or
// take the window x; later stragglers are dropped with a warning.
func (s *Stream) Push(m trace.Message) {
	tm := m.Time()
	seq := s.next
	s.next++
	if s.core == math.MinInt64 {
		s.core = tm
	}
	if tm < s.core-int64(s.o.Window) {
		s.late++
		return
	}
	if s.renum != nil {
		m.SrcEP, m.DstEP = s.local(m.SrcEP), s.local(m.DstEP)
	}
	if s.bufOff && len(s.buf) == cap(s.buf) {
		s.buf = offGrow(&s.bufMem, s.buf, 1)
	}
	s.buf = append(s.buf, m)
	if s.o.OnInstance != nil {
		s.seq = append(s.seq, seq)
	}
	if tm >= s.core+int64(s.o.Stream)+2*int64(s.o.Window) {
		s.flush(false)
	}
}

// flush links the current chunk; at the end, everything left.
func (s *Stream) flush(final bool) {
	if len(s.buf) == 0 {
		return
	}
	s.sortBuf()
	x, w := int64(s.o.Window), int64(s.o.Stream)
	end := s.core + w
	ctxEnd := len(s.buf)
	if !final {
		ctxEnd, _ = slices.BinarySearchFunc(s.buf, end+x, func(m trace.Message, t int64) int { return cmpTime(m.Time(), t) })
	}
	ct := &trace.Trace{Messages: s.buf[:ctxEnd], Nodes: s.t.Nodes, Endpoints: s.t.Endpoints, Labels: s.t.Labels, Clock: s.t.Clock}
	l := newLinker(ct, s.o, s.mod)
	var in *instances
	if s.o.Method == MethodWAP5 {
		in, s.fit, _ = l.runWAP5()
	} else {
		in, s.fit, _ = l.runJoint()
	}
	s.iters++
	for _, wmsg := range l.warnings {
		if !slices.Contains(s.warn, wmsg) {
			s.warn = append(s.warn, wmsg)
		}
	}
	if s.a.clock == nil || len(s.t.Clock) > 0 {
		s.a.clock = trace.NewClockMap(ct)
	}
	labels := s.a.linkerLabels(l)
	// The joint linker gives every message one instance: the messages of
	// this chunk's instances are claimed, and the next chunk links its
	// context without them, so that it cannot put them in an instance of
	// its own as well (the chunks may assign the overlap differently).
	claim := s.o.Method != MethodWAP5 && !final
	if claim {
		s.claimed = slices.Grow(s.claimed[:0], ctxEnd)[:ctxEnd]
		clear(s.claimed)
	}
	for i := 0; i < in.len(); i++ {
		msgs, par := in.get(i)
		rt := ct.Messages[msgs[0]].Time()
		if rt < s.core || !final && rt >= end {
			continue // another chunk's instance
		}
		if claim {
			for _, k := range msgs {
				s.claimed[k] = true
			}
		}
		var h uint64
		h, s.order = s.a.order(ct.Messages, labels, msgs, par, s.order[:0])
		p := s.tab.get(h, ct.Messages, labels, s.order)
		s.a.accumulate(p, ct.Messages, s.order, in.prob[i])
		s.a.add(p, in.prob[i])
		if f := s.o.OnInstance; f != nil {
			si := &s.inst
			si.Pattern, si.Prob = int(p.idx), in.prob[i]
			si.Messages, si.Seq = si.Messages[:0], si.Seq[:0]
			for _, k := range s.order {
				si.Messages = append(si.Messages, ct.Messages[k])
				si.Seq = append(si.Seq, s.seq[k])
			}
			f(*si)
		}
	}
	// Keep the window before the next chunk as its context.
	keep, _ := slices.BinarySearchFunc(s.buf, end-x, func(m trace.Message, t int64) int { return cmpTime(m.Time(), t) })
	if final {
		keep = len(s.buf)
	}
	n := 0
	for k := keep; k < len(s.buf); k++ {
		if claim && k < ctxEnd && s.claimed[k] {
			continue
		}
		s.buf[n] = s.buf[k]
		if s.seq != nil {
			s.seq[n] = s.seq[k]
		}
		n++
	}
	s.buf = s.buf[:n]
	if s.seq != nil {
		s.seq = s.seq[:n]
	}
	s.core = end
	// The patterns' shapes and delays beyond the budget go to the spill
	// file (spill.go).
	if s.tab.over() {
		s.tab.spill(false)
	}
	s.tab.endChunk()
	// The carried classes this chunk did not use, beyond the budget, go
	// to their own spill file (classspill.go).
	if s.o.Method != MethodWAP5 {
		s.mod.evict(s.classBudget)
	}
	s.hcap.chunk(s.mod.chunk)
	s.mod.chunk++
	// Ephemeral endpoints accumulate in the interning table: keep only
	// those the buffer still uses once the table has doubled.
	if !s.shared && len(s.t.Endpoints) > 2*s.endpoints+1024 {
		if s.renum != nil {
			s.compactRenumbered()
		} else {
			s.t.CompactEndpoints(s.buf)
		}
		s.endpoints = len(s.t.Endpoints)
	}
}

// Close links what is left and returns the paths.
func (s *Stream) Close() *Result {
	for len(s.buf) > 0 {
		last := s.buf[len(s.buf)-1].Time()
		final := last < s.core+int64(s.o.Stream)+int64(s.o.Window)
		s.flush(final)
		if final {
			break
		}
	}
	s.hcap.stop()
	out := trace.Paths{Algorithm: "linking", Warnings: append(append([]string(nil), s.t.Warnings...), s.warn...)}
	if s.late > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("linking: %d messages arrived out of time order beyond the window and were left out", s.late))
	}
	if s.tab.warn != "" {
		out.Warnings = append(out.Warnings, s.tab.warn)
	}
	// The carried classes' fit (classspill.go, step 4), and the class
	// spill file's error, which makes the result wrong: it comes first.
	var classErr error
	if s.o.Method != MethodWAP5 && s.iters > 0 {
		s.fit, classErr = s.mod.compare(s.fit)
	}
	if sp := s.mod.spill; sp != nil {
		if sp.warn != "" {
			out.Warnings = append(out.Warnings, sp.warn)
		}
		if sp.err != nil {
			classErr = sp.err
		}
	}
	defer func() {
		if classErr != nil {
			s.err = classErr
		}
	}()
	res := &Result{Fit: s.fit, Iterations: s.iters}
	// The buffers go before the ranking (spillTable.ranked collects).
	s.buf, s.seq, s.claimed, s.order = nil, nil, nil, nil
	s.bufMem.free()
	defer s.tab.close()
	defer s.mod.free()
	if s.o.OnInstance != nil {
		res.StreamPatterns = make([]StreamPattern, s.tab.pats)
	}
	ranked, err := s.tab.ranked()
	if err != nil {
		res.Paths = out
		if s.err = s.tab.err; s.err == nil {
			s.err = err
		}
		return res
	}
	if s.o.OnPattern != nil {
		res.Paths = out
		s.err = s.handOver(ranked, res)
		if s.err == nil {
			s.err = s.tab.err
		}
		return res
	}
	for r, e := range ranked {
		p, err := s.tab.take(e)
		if err != nil {
			s.err = err
			break
		}
		tp, perm := s.a.build(p)
		tp.Rank = r + 1
		out.Patterns = append(out.Patterns, tp)
		if res.StreamPatterns != nil {
			res.StreamPatterns[p.idx] = StreamPattern{Rank: r + 1, Perm: perm}
		}
	}
	if s.err == nil {
		s.err = s.tab.err
	}
	res.Paths = out
	return res
}

// Err is the error Options.OnPattern returned in Close, if any, or the
// pattern spill file's.
func (s *Stream) Err() error { return s.err }

// handOver is Close with Options.OnPattern: the top Options.Top patterns
// (all when 0) are handed over in rank order as they are built, those
// ranked from Options.Shown on with their counts only when no instances
// need their step order, and each pattern is dropped once it is built, so
// that the built patterns are never all held at once (on the CoDeeN-sized
// trace they outweigh everything else the stream keeps). ranked holds the
// table's patterns in rank order. Options.BeforePatterns sees res first.
func (s *Stream) handOver(ranked []rankEnt, res *Result) error {
	if s.o.BeforePatterns != nil {
		s.o.BeforePatterns(res)
	}
	top := len(ranked)
	if s.o.Top > 0 {
		top = min(top, s.o.Top)
	}
	full := top
	if s.o.Shown > 0 && res.StreamPatterns == nil {
		full = min(full, s.o.Shown)
	}
	for r, e := range ranked {
		if r >= top && res.StreamPatterns == nil {
			break
		}
		var tp *trace.Pattern
		if r < full || res.StreamPatterns != nil {
			p, err := s.tab.take(e)
			if err != nil {
				return err
			}
			var perm []int32
			tp, perm = s.a.build(p)
			tp.Rank = r + 1
			if res.StreamPatterns != nil {
				res.StreamPatterns[p.idx] = StreamPattern{Rank: r + 1, Perm: perm}
			}
		}
		if r >= top {
			continue
		}
		if r >= full {
			tp = &trace.Pattern{Rank: r + 1, Count: int(e.count), Expected: e.expected, MaxProb: e.maxProb}
		}
		if err := s.o.OnPattern(tp); err != nil {
			return err
		}
	}
	return nil
}

// sortBuf puts the buffer in time order (stable), with the push positions
// alongside when they are kept.
func (s *Stream) sortBuf() {
	less := func(a, b *trace.Message) bool { return a.Time() < b.Time() }
	sorted := true
	for i := 1; i < len(s.buf); i++ {
		if less(&s.buf[i], &s.buf[i-1]) {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	if s.seq == nil {
		slices.SortStableFunc(s.buf, func(a, b trace.Message) int { return cmpTime(a.Time(), b.Time()) })
		return
	}
	idx := make([]int32, len(s.buf))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmpTime(s.buf[a].Time(), s.buf[b].Time()) })
	buf, seq := make([]trace.Message, len(idx)), make([]int64, len(idx))
	for k, i := range idx {
		buf[k], seq[k] = s.buf[i], s.seq[i]
	}
	copy(s.buf, buf)
	copy(s.seq, seq)
}

// linkStream links a loaded trace through a Stream (the same result a
// streaming reader gets).
func linkStream(t *trace.Trace, opts Options) (*Result, error) {
	s, err := NewStream(t, opts)
	if err != nil {
		return nil, err
	}
	s.shared = true
	for i := range t.Messages {
		s.Push(t.Messages[i])
	}
	res := s.Close()
	return res, s.Err()
}
