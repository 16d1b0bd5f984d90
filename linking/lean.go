package linking

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"sort"
	"unsafe"

	"wap5/internal/hugemem"
	"wap5/internal/prefetch"
	"wap5/trace"
)

// leanCols is what Options.Lean keeps of the messages beyond what the
// passes read (joint.hot, eps, actors), to make them again after J6.
type leanCols struct {
	kind []trace.Kind
	// eps and actors hold the messages' endpoints and actors where the
	// WAP5 steps' packed messages are made again (packMessages; else
	// nil).
	eps    []epPair
	actors []actorPair
	// id holds the messages' ids where instances are kept (else nil),
	// each as the zigzag varint of its difference from the one before:
	// ids mostly follow the message order (a byte or two each instead of
	// eight; 10 at most).
	id []byte
	// lastID is the last message's id (packMessages: the ids are read
	// back from the last).
	lastID int64
}

// dropMessages drops the trace's messages for the passes (Options.Lean),
// keeping their kinds and, where instances are kept, their ids (in
// keepMem). What reads the messages before the passes has run (the fixed
// endpoints are computed here if no step asked for them yet).
func (l *linker) dropMessages() *leanCols {
	l.fixedEndpoints()
	n := len(l.msgs)
	lc := &leanCols{kind: offMake[trace.Kind](&l.keepMem, n)}
	keepID := !l.o.NoInstances
	prev := int64(0)
	for i := range l.msgs {
		m := &l.msgs[i]
		lc.kind[i] = m.Kind
		if keepID {
			lc.id = binary.AppendVarint(lc.id, m.ID-prev)
			prev = m.ID
		}
	}
	// (Where the reader made them outside the heap, their memory is
	// kept for the run's arrays: hugemem.Keeping.)
	hugemem.Release(l.msgs)
	l.msgs, l.t.Messages = nil, nil
	// (The decoder's mark, trace.MessagesChecked, named their memory,
	// which a later mapping may reuse: it goes with them.)
	l.t.MessagesEdited()
	return lc
}

// remakeMessages makes the messages dropMessages dropped again, in the
// same order, from j.hot, eps and actors and lc (Options.Lean).
func (l *linker) remakeMessages(j *joint, lc *leanCols) {
	n := len(j.hot)
	msgs := hugemem.Make[trace.Message](n, n)
	if hugemem.Keeping() {
		// In the memory the run gave back (hugemem.Keep).
		b, _ := hugemem.Map(n * int(unsafe.Sizeof(trace.Message{})))
		msgs = unsafe.Slice((*trace.Message)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	ids, prev := lc.id, int64(0)
	for i := range msgs {
		h, e := &j.hot[i], j.eps[i]
		a := j.actorOf(int32(i))
		id := int64(trace.NoRef)
		if ids != nil {
			d, k := binary.Varint(ids)
			ids = ids[k:]
			id = prev + d
			prev = id
		}
		msgs[i] = trace.Message{Send: h.send, Recv: h.recv, ID: id, Src: l.edgeSrc[h.edge], Dst: l.edgeDst[h.edge],
			SrcEP: e.src, DstEP: e.dst, Call: trace.NoRef, Truth: trace.NoRef, Kind: lc.kind[i], SrcActor: a.src, DstActor: a.dst}
	}
	l.msgs, l.t.Messages = msgs, msgs
}

// msgTimes is a message as Options.Lean keeps it for the WAP5 steps:
// what they read of it, its times (its nodes are its edge's). Its kind
// (which the aggregation reads) is in leanCols.kind, and where the
// messages are made again their endpoints and actors are in leanCols too:
// 16 bytes a message in place of the message's 72 (or the envelope's 48),
// 17 more where they are kept aside.
type msgTimes struct {
	send, recv int64
}

// (Times take at most an envelope, which is smaller than a message.)
var _ [unsafe.Sizeof(trace.Envelope{}) - unsafe.Sizeof(msgTimes{})]struct{}
var _ [unsafe.Sizeof(trace.Message{}) - unsafe.Sizeof(trace.Envelope{})]struct{}

// remakes reports whether the linker makes the messages again after the
// WAP5 steps (unpackMessages): clients are aggregated, or instances or
// the messages are kept.
func (l *linker) remakes() bool {
	return l.o.AggregateClients || !(l.o.DropMessages && l.o.NoInstances)
}

// packMessages packs the messages' times in place into the start of their
// array, gives the rest of its pages back to the system (a large trace's
// messages are most of the memory the WAP5 steps would otherwise hold)
// and drops them from the trace until unpackMessages makes them again
// (Options.Lean, WAP5). Their kinds go to l.lean.kind; where they are
// made again their endpoints and actors to l.lean too, and where
// instances are kept their ids to l.lean.id; else they are NoRef. The
// edges must be indexed already.
//
//  1. Message i is read before times i are written: they end at byte
//     16(i+1) ≤ 72i for i ≥ 1, before message i, and message 0 is read
//     whole first.
//  2. The whole pages from byte 16n on are discarded (hugemem.Discard),
//     or, where the messages are not made again (unpackMessages writes
//     them there), given back (hugemem.Shrink: kept for the arrays that
//     follow where the reader made them outside the heap).
func (l *linker) packMessages() {
	msgs := l.msgs
	n := len(msgs)
	p := unsafe.Slice((*msgTimes)(unsafe.Pointer(unsafe.SliceData(msgs))), n)
	lc := &leanCols{kind: make([]trace.Kind, n)}
	keepID := !l.o.NoInstances
	if keepID {
		lc.id = make([]byte, 0, n+n/2)
	}
	if l.remakes() {
		lc.eps, lc.actors = make([]epPair, n), make([]actorPair, n)
	}
	prev := int64(0)
	for i := range msgs {
		m := &msgs[i]
		if keepID {
			lc.id = binary.AppendVarint(lc.id, m.ID-prev)
			prev = m.ID
		}
		if lc.eps != nil {
			lc.eps[i], lc.actors[i] = epPair{m.SrcEP, m.DstEP}, actorPair{m.SrcActor, m.DstActor}
		}
		lc.kind[i] = m.Kind
		send, recv := m.Send, m.Recv // (step 1)
		p[i] = msgTimes{send: send, recv: recv}
	}
	lc.lastID = prev
	// Step 2.
	if l.remakes() {
		hugemem.Discard(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(msgs))), n*int(unsafe.Sizeof(trace.Message{})))[n*int(unsafe.Sizeof(msgTimes{})):])
	} else {
		hugemem.Shrink(msgs, n*int(unsafe.Sizeof(msgTimes{})))
	}
	l.tm, l.lean = p, lc
	l.msgs, l.t.Messages = nil, nil
	l.t.MessagesEdited() // (packed over in place: as dropMessages)
}

// unpackMessages makes the messages packMessages packed again, in place
// and in the same order: times, nodes, endpoints, kind and actors, and
// the ids where instances are kept (else NoRef); Bytes is 0, Call and
// Truth NoRef.
//
//  1. Messages go from the last to the first: message i covers bytes 72i
//     to 72(i+1), after the times of messages before it (they end at
//     16i), and times 0 are read before message 0 is written.
//  2. The ids are read from the end of their varints: each is the
//     difference from the id before, so the one before is this one less
//     the difference.
func (l *linker) unpackMessages() {
	p, lc := l.tm, l.lean
	if lc.eps == nil {
		panic("linking: messages made again without their endpoints (packMessages kept none)")
	}
	n := len(p)
	msgs := unsafe.Slice((*trace.Message)(unsafe.Pointer(unsafe.SliceData(p))), n)
	ids, id := lc.id, lc.lastID
	for i := n - 1; i >= 0; i-- {
		q := p[i] // (step 1)
		mid := int64(trace.NoRef)
		if ids != nil {
			// Step 2.
			d, k := lastVarint(ids)
			ids = ids[:len(ids)-k]
			mid, id = id, id-d
		}
		e, ep, a := l.edge[i], lc.eps[i], lc.actors[i]
		msgs[i] = trace.Message{Send: q.send, Recv: q.recv, ID: mid, Src: l.edgeSrc[e], Dst: l.edgeDst[e],
			SrcEP: ep.src, DstEP: ep.dst, Call: trace.NoRef, Truth: trace.NoRef, Kind: lc.kind[i], SrcActor: a.src, DstActor: a.dst}
	}
	l.tm, l.lean = nil, nil
	l.msgs, l.t.Messages = msgs, msgs
}

// lastVarint decodes the last varint (binary.AppendVarint) of b and
// returns it with its length in bytes: a varint's last byte is the only
// one below 0x80, so the one before it ends the varint before.
func lastVarint(b []byte) (int64, int) {
	s := len(b) - 1
	for s > 0 && b[s-1] >= 0x80 {
		s--
	}
	v, _ := binary.Varint(b[s:])
	return v, len(b) - s
}

// EnvelopesSuffice reports whether LinkEnvelopes links with o: the WAP5
// method over a whole trace with Lean and DropMessages, no instances kept
// and clients not aggregated. Then nothing reads a message's id, size,
// call, truth or text.
func EnvelopesSuffice(o Options) bool {
	o = o.Defaults()
	return o.Method == MethodWAP5 && o.Stream <= 0 && o.Lean && o.DropMessages && o.NoInstances && !o.AggregateClients
}

// NamesUnread reports whether Link with o reads of an endpoint's name no
// more than whether it is a unix socket's (clientsOf): where clients are
// not aggregated (AggregateEndpoint reads the names). A trace whose
// endpoints are named by their kind alone (trace.ReadFileKindNames) then
// links as the trace does, for a caller that does not read the names
// either (wap5 link without instances).
func NamesUnread(o Options) bool {
	return !o.Defaults().AggregateClients
}

// LinkEnvelopes is Link for a trace whose messages are given as their
// envelopes instead of in t.Messages (trace.ReadFileEnvelopesOnly, whose
// decoder has checked them), with options for which EnvelopesSuffice: the
// same result, without a trace.Message array (72 bytes a message where an
// envelope is 48 and the packed record 16, its kind 1 and its edge 4). env is sorted and packed in
// place (packEnvelopes) and must not be used after; t.Messages stays
// empty.
//
//  1. The tables and the clock are checked as CheckValid checks them
//     (t.Messages is empty).
//  2. env is put in time order as Trace.Sort orders messages (stable).
//  3. The heap's garbage goes back to the system as in Link, then the
//     envelopes are packed with their edges and indexed as newLinker does.
func LinkEnvelopes(t *trace.Trace, env []trace.Envelope, opts Options) (*Result, error) {
	opts = opts.Defaults()
	if err := opts.check(); err != nil {
		return nil, err
	}
	if !EnvelopesSuffice(opts) || len(t.Messages) > 0 {
		return nil, fmt.Errorf("linking: envelopes do not suffice (want WAP5, Lean and DropMessages, no instances or clients, and no messages in the trace)")
	}
	// Step 1.
	if err := t.CheckValid(); err != nil {
		return nil, fmt.Errorf("linking: %w", err)
	}
	// Step 2.
	sortEnvelopes(env)
	// Step 3.
	if len(env) >= lowGCMessages {
		debug.FreeOSMemory()
	}
	l := &linker{t: t, o: opts, x: int64(opts.Window)}
	phase("index")
	l.packEnvelopes(env)
	l.index()
	return l.run()
}

// sortEnvelopes is Trace.Sort for envelopes: by Time, stable, and only
// when they are out of order.
func sortEnvelopes(env []trace.Envelope) {
	for i := 1; i < len(env); i++ {
		if env[i].Time() < env[i-1].Time() {
			sort.SliceStable(env, func(i, j int) bool { return env[i].Time() < env[j].Time() })
			return
		}
	}
}

// packEnvelopes is indexEdges and packMessages for envelopes, in one pass:
// every envelope's edge and kind, and the envelopes' times packed in place
// into the start of their array, whose rest goes back to the system (the
// messages are never made again: EnvelopesSuffice).
//
//  1. Envelope i is read before times i are written: they end at byte
//     16(i+1) ≤ 48i for i ≥ 1, before envelope i, and envelope 0 is read
//     whole first; the envelope candAhead on, read for its edge's slot, is
//     not reached.
//  2. The whole pages from byte 16n on are given back (hugemem.Shrink).
func (l *linker) packEnvelopes(env []trace.Envelope) {
	n := len(env)
	p := unsafe.Slice((*msgTimes)(unsafe.Pointer(unsafe.SliceData(env))), n)
	l.edge = make([]int32, n)
	kind := make([]trace.Kind, n)
	tab := newPairTable(64)
	for i := range env {
		if a := i + candAhead; a < n {
			m := &env[a]
			k := uint64(uint32(m.Src))<<32 | uint64(uint32(m.Dst))
			prefetch.At(tab.ents, int32(mix(k)&uint64(len(tab.ents)-1)))
		}
		m := &env[i]
		send, recv := m.Send, m.Recv // (step 1)
		l.edge[i] = l.edgeOf(tab, m.Src, m.Dst)
		kind[i] = m.Kind
		p[i] = msgTimes{send: send, recv: recv}
	}
	// Step 2.
	hugemem.Shrink(env, n*int(unsafe.Sizeof(msgTimes{})))
	l.tm, l.lean = p, &leanCols{kind: kind}
}
