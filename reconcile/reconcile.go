package reconcile

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"wap5/libsockcap"
	"wap5/trace"
)

// Reconcile reads the inputs and returns one message trace. Damaged or
// foreign inputs become warnings in the trace (with file and offset); the
// error is for nothing readable at all or bad options.
func Reconcile(in Inputs, opts Options) (*trace.Trace, error) {
	sources := append([]Source(nil), in.Sources...)
	var warns []string
	var lastErr error
	inputs := len(in.Sources)
	if len(in.Logs) > 0 {
		files, err := libsockcap.FindLogs(in.Logs...)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			warns = append(warns, fmt.Sprintf("no libsockcap logs in %s", strings.Join(in.Logs, " ")))
		}
		for _, f := range files {
			inputs++
			s, err := NewLogSource(f)
			if err != nil {
				warns = append(warns, err.Error())
				lastErr = err
				continue
			}
			sources = append(sources, s)
		}
	}
	var cover *logCover
	if len(in.Pcaps) > 0 && len(sources) > 0 && !opts.DisableNATDetection {
		// Mixed inputs: learn the translations the logs show first, so
		// that a capture's view of a translated flow lines up with the
		// logs' from its first packet (a capture behind a masquerade
		// otherwise looks like a host of its own).
		var files []string
		for _, s := range sources {
			if ls, ok := s.(*logSource); ok && ls.close != nil {
				files = append(files, ls.name)
			}
		}
		var pre []Source
		for _, f := range files {
			if s, err := NewLogSource(f); err == nil {
				pre = append(pre, s)
			}
		}
		preOpts := opts
		preOpts.Sink, preOpts.Stream = nil, nil
		if _, m, err := reconcileSources(pre, preOpts); err == nil {
			// What the logs cover, for the captures' clocks (P3).
			cover = newLogCover(m)
			for _, tr := range m.nat.found {
				if tr.Flows > 0 {
					opts.NAT = append(opts.NAT, *tr)
				}
			}
		}
	}
	if len(in.Pcaps) > 0 {
		inputs += len(in.Pcaps)
		ss, translations, w, err := openPcaps(in.Pcaps, opts, in.Hosts, cover)
		warns = append(warns, w...)
		// The translations found in the packets canonicalise the logs too.
		opts.NAT = append(opts.NAT, translations...)
		if err != nil {
			lastErr = err
		}
		sources = append(sources, ss...)
	}
	if len(sources) == 0 {
		if lastErr != nil {
			return nil, fmt.Errorf("nothing readable in %d inputs (last error: %v)", inputs, lastErr)
		}
		if inputs == 0 {
			return nil, fmt.Errorf("no inputs")
		}
	}
	var ps *prefixSink
	var pss *prefixStream
	if opts.Sink != nil {
		ps = &prefixSink{Sink: opts.Sink, warns: warns}
		opts.Sink = ps
	} else if opts.Stream != nil {
		pss = &prefixStream{StreamSink: opts.Stream, warns: warns}
		opts.Stream = pss
	}
	t, err := ReconcileSources(sources, opts)
	if t != nil && (ps == nil || !ps.applied) && (pss == nil || !pss.applied) {
		t.Warnings = append(warns, t.Warnings...)
	}
	return t, err
}

// openPcaps opens the captures together (so that each host's clock and the
// translations are chosen across all of them); a capture that cannot be read
// is left out with a warning.
func openPcaps(paths []string, opts Options, hosts HostNames, logs *logCover) ([]Source, []Translation, []string, error) {
	var warns []string
	set, err := openPcapFiles(paths, opts, hosts, logs)
	if err != nil {
		var good []string
		var lastErr error
		for _, p := range paths {
			if _, err := OpenPcaps([]string{p}, opts, hosts); err != nil {
				warns = append(warns, err.Error())
				lastErr = err
				continue
			}
			good = append(good, p)
		}
		if len(good) == 0 {
			return nil, nil, warns, lastErr
		}
		if set, err = openPcapFiles(good, opts, hosts, logs); err != nil {
			return nil, nil, append(warns, err.Error()), err
		}
	}
	var trs []Translation
	if set.NAT != nil {
		known := map[Translation]bool{}
		for _, t := range opts.NAT {
			known[t] = true
		}
		for _, t := range set.NAT.Translations {
			if !known[Translation(t)] {
				trs = append(trs, Translation(t))
			}
		}
	}
	return set.Sources, trs, append(warns, set.Warnings...), nil
}

// ReconcileSources runs steps 1–9 over observation sources.
func ReconcileSources(sources []Source, opts Options) (*trace.Trace, error) {
	t, _, err := reconcileSources(sources, opts)
	return t, err
}

func reconcileSources(sources []Source, opts Options) (*trace.Trace, *matcher, error) {
	t := trace.New()
	m, err := newMatcher(t, opts)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range sources {
		if ls, ok := s.(*logSource); ok {
			m.logged[ls.obs.Host] = true
			m.registerLog(ls.obs)
		}
	}
	// 0. Clock offsets between the sources, for matching only (and what
	// step 6 may rely on of them).
	var offsets []int64
	if !opts.SyncedClocks {
		var warns []string
		m.clk, warns = estimateClocks(sources, opts)
		offsets = m.clk.off
		t.Warnings = append(t.Warnings, warns...)
	} else {
		m.clk = sameHostClocks(sourceHosts(sources))
	}
	// Streaming (emit.go): messages go out as the window lets them,
	// unless aggregation needs the whole trace first.
	if opts.Stream != nil && opts.Sink == nil && !opts.AggregateClients {
		minCorr := int64(0)
		for _, o := range offsets {
			minCorr = min(minCorr, o)
		}
		m.st = newStreamState(opts.Stream, opts, minCorr)
	}
	// 1. Merge the sources by (offset-corrected) time.
	h := make(sourceHeap, 0, len(sources))
	var ended []*cursor
	for i, s := range sources {
		c := newCursor(s, i, len(sources))
		if offsets != nil {
			c.corr = offsets[i]
		}
		if s.Next(&c.ob) {
			c.at = c.ob.Time - c.corr
			h = append(h, heapItem{c.at, c, c.sc})
		} else {
			ended = append(ended, c)
		}
	}
	h.init()
	for len(h) > 0 {
		c := h[0].c
		m.observe(c.idx, &c.ob, c.corr)
		if m.due() {
			if err := m.releaseMsgs(false); err != nil {
				return nil, nil, err
			}
		}
		if c.src.Next(&c.ob) {
			c.at = c.ob.Time - c.corr
			h[0].at = c.at
			m.prefetchObs(c.idx, &c.ob)
			h.down(0)
		} else {
			ended = append(ended, c)
			h.pop()
		}
		if len(h) > 0 {
			h[0].prefetch()
		}
	}
	m.finish()
	// Warnings of the namer's tables (a node out of actor ids) came as
	// the matcher decided.
	t.Warnings = append(t.Warnings, m.names.t.Warnings...)
	sort.Slice(ended, func(i, j int) bool { return ended[i].idx < ended[j].idx })
	for _, c := range ended {
		t.Warnings = append(t.Warnings, c.src.Warnings()...)
		if err := c.src.Err(); err != nil {
			t.Warnf("%s: %v", c.src.Name(), err)
		}
	}
	m.report()
	if m.st != nil {
		// 9. What is left goes out, numbered as it goes (emit.go).
		if err := m.releaseMsgs(true); err != nil {
			return nil, nil, err
		}
		m.st.warnings(t)
		m.canon.finishTables(!m.st.lateNames)
		var err error
		if m.st.lateNames {
			err = m.st.sink.(LateNames).EndNamed(t, m.st.n, m.canon)
		} else {
			err = m.st.sink.End(t, m.st.n)
		}
		if err != nil {
			return nil, nil, err
		}
		return t, m, nil
	}
	// 9. The messages are numbered, and the calls renumbered in the order
	// they were made, as m.messages gathers them (aggregation keeps the
	// order). A sink takes them as they are gathered, unless aggregation
	// needs the whole trace first.
	if opts.Sink != nil && !opts.AggregateClients {
		m.sink = opts.Sink
	}
	if err := m.messages(); err != nil {
		return nil, nil, err
	}
	if opts.AggregateClients {
		t = AggregateClients(t)
		if opts.Sink == nil && opts.Stream != nil {
			if err := opts.Stream.Messages(t, t.Messages); err != nil {
				return nil, nil, err
			}
			if err := opts.Stream.End(t, len(t.Messages)); err != nil {
				return nil, nil, err
			}
			t.Messages, t.Extra = nil, nil
		}
		if opts.Sink != nil {
			if err := opts.Sink.Begin(t, len(t.Messages)); err != nil {
				return nil, nil, err
			}
			if err := opts.Sink.Messages(t.Messages); err != nil {
				return nil, nil, err
			}
			t.Messages, t.Extra = nil, nil
		}
	}
	return t, m, nil
}

// prefixSink puts the warnings Reconcile found opening its inputs before
// the matcher's when the sink begins (they lead the trace's warnings).
type prefixSink struct {
	Sink
	warns   []string
	applied bool
}

func (p *prefixSink) Begin(t *trace.Trace, n int) error {
	t.Warnings = append(append([]string(nil), p.warns...), t.Warnings...)
	p.applied = true
	return p.Sink.Begin(t, n)
}

// prefixStream is prefixSink for a StreamSink: the warnings go first when
// it ends.
type prefixStream struct {
	StreamSink
	warns   []string
	applied bool
}

func (p *prefixStream) End(t *trace.Trace, n int) error {
	t.Warnings = append(append([]string(nil), p.warns...), t.Warnings...)
	p.applied = true
	return p.StreamSink.End(t, n)
}

// EndNamed is End for a StreamSink that implements LateNames.
func (p *prefixStream) EndNamed(t *trace.Trace, n int, names trace.EndpointNames) error {
	t.Warnings = append(append([]string(nil), p.warns...), t.Warnings...)
	p.applied = true
	return p.StreamSink.(LateNames).EndNamed(t, n, names)
}

// report turns the matcher's counts and translations into warnings.
func (m *matcher) report() {
	t := m.t
	for _, tr := range m.nat.found {
		if tr.Flows > 0 {
			t.Warnf("nat: %s %s %s -> %s (%d flows)", tr.Kind, tr.Proto, tr.Before, tr.After, tr.Flows)
		}
	}
	if m.lostDgrams > 0 {
		t.Warnf("%d datagrams sent to traced receivers were never received (lost); kept with an unknown receive time", m.lostDgrams)
	}
	if m.dupDgrams > 0 {
		t.Warnf("%d duplicate datagrams dropped", m.dupDgrams)
	}
	if m.unreadBytes > 0 {
		t.Warnf("%d bytes sent to traced ends were never read; kept with an unknown receive time", m.unreadBytes)
	}
}

// Translations returns the address translations a trace's warnings report
// (as Reconcile found them).
func Translations(t *trace.Trace) []Translation {
	var out []Translation
	for _, w := range t.Warnings {
		var tr Translation
		var arrow string
		if _, err := fmt.Sscanf(w, "nat: %s %s %s %s %s (%d flows)", &tr.Kind, &tr.Proto, &tr.Before, &arrow, &tr.After, &tr.Flows); err == nil && arrow == "->" {
			out = append(out, tr)
		}
	}
	return out
}

// callNumbers makes call ids follow time order (they were handed out as
// calls were decided): number numbers the messages it is given, in order.
type callNumbers struct {
	ids  []int32
	next int32
	id   int64
}

func newCallNumbers(n int32) *callNumbers {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = -1
	}
	return &callNumbers{ids: ids}
}

func (c *callNumbers) number(msgs []trace.Message) {
	n := int32(len(c.ids))
	for i := range msgs {
		m := &msgs[i]
		m.ID = c.id
		c.id++
		if m.Kind == trace.KindNone || m.Call < 0 || m.Call >= n {
			continue
		}
		if c.ids[m.Call] < 0 {
			c.ids[m.Call] = c.next
			c.next++
		}
		m.Call = c.ids[m.Call]
	}
}

// ephemeralLow is where Linux starts ephemeral ports.
const ephemeralLow = 32768

// AggregateClients replaces client nodes by CLIENT and ephemeral ports by
// `*` (WAP5 §2.5). A port is fixed when it accepts connections (it
// receives calls), talks to at least three other ports, or lies below the
// ephemeral range; a node is a server when it uses a fixed port locally.
func AggregateClients(t *trace.Trace) *trace.Trace {
	type epInfo struct {
		peers  map[trace.EndpointID]bool
		server bool
	}
	info := make([]epInfo, len(t.Endpoints))
	note := func(ep, peer trace.EndpointID, server bool) {
		if ep == trace.NoEndpoint {
			return
		}
		in := &info[ep]
		if in.peers == nil {
			in.peers = map[trace.EndpointID]bool{}
		}
		if len(in.peers) < 3 {
			in.peers[peer] = true
		}
		in.server = in.server || server
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		note(m.SrcEP, m.DstEP, m.Kind == trace.KindReturn)
		note(m.DstEP, m.SrcEP, m.Kind == trace.KindCall)
	}
	fixed := make([]bool, len(t.Endpoints))
	for i, name := range t.Endpoints {
		if i == 0 {
			continue
		}
		fixed[i] = info[i].server || len(info[i].peers) >= 3
		if ap, err := netip.ParseAddrPort(name); err == nil && ap.Port() < ephemeralLow {
			fixed[i] = true
		}
		if strings.HasPrefix(name, "unix:") {
			fixed[i] = true
		}
	}
	serverNode := make([]bool, len(t.Nodes))
	for i := range t.Messages {
		m := &t.Messages[i]
		if fixed[m.SrcEP] {
			serverNode[m.Src] = true
		}
		if fixed[m.DstEP] {
			serverNode[m.Dst] = true
		}
	}
	out := trace.New()
	out.Clock, out.Warnings, out.Labels = t.Clock, t.Warnings, t.Labels
	nodeMap := make([]trace.NodeID, len(t.Nodes))
	for i, n := range t.Nodes {
		name := n.Name
		if !serverNode[i] {
			name = "CLIENT"
		}
		id := out.Node(name)
		out.Nodes[id].Untraced = out.Nodes[id].Untraced || n.Untraced && name != "CLIENT"
		nodeMap[i] = id
	}
	epMap := make([]trace.EndpointID, len(t.Endpoints))
	for i, name := range t.Endpoints {
		if i > 0 && !fixed[i] {
			if ap, err := netip.ParseAddrPort(name); err == nil {
				name = ap.Addr().String() + ":*"
				if ap.Addr().Is6() {
					name = "[" + ap.Addr().String() + "]:*"
				}
			}
		}
		epMap[i] = out.Endpoint(name)
	}
	// Actors move with their node; a CLIENT node stands for many hosts,
	// whose pids and threads say nothing in common: its actors are unknown.
	actor := func(old, now trace.NodeID, a trace.ActorID) trace.ActorID {
		if a == trace.NoActor || !serverNode[old] {
			return trace.NoActor
		}
		return out.Actor(now, t.ActorName(old, a))
	}
	out.Messages = t.Messages
	for i := range out.Messages {
		m := &out.Messages[i]
		if m.SrcActor != trace.NoActor || m.DstActor != trace.NoActor {
			m.SrcActor, m.DstActor = actor(m.Src, nodeMap[m.Src], m.SrcActor), actor(m.Dst, nodeMap[m.Dst], m.DstActor)
		}
		m.Src, m.Dst = nodeMap[m.Src], nodeMap[m.Dst]
		m.SrcEP, m.DstEP = epMap[m.SrcEP], epMap[m.DstEP]
	}
	out.Extra = t.Extra
	return out
}

// sourceHeap is a min-heap of cursors by their next observation's time.
func (h sourceHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h sourceHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h[r].at < h[l].at {
			j = r
		}
		if h[j].at >= h[i].at {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (h *sourceHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	old[n] = heapItem{}
	*h = old[:n]
	h.down(0)
}
