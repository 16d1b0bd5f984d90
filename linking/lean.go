package linking

import (
	"encoding/binary"

	"wap5/internal/hugemem"
	"wap5/trace"
)

// leanCols is what Options.Lean keeps of the messages beyond what the
// passes read (joint.hot, eps, actors), to make them again after J6.
type leanCols struct {
	kind []trace.Kind
	// id holds the messages' ids where instances are kept (else nil),
	// each as the zigzag varint of its difference from the one before:
	// ids mostly follow the message order (a byte or two each instead of
	// eight; 10 at most).
	id []byte
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
	l.msgs, l.t.Messages = nil, nil
	return lc
}

// remakeMessages makes the messages dropMessages dropped again, in the
// same order, from j.hot, eps and actors and lc (Options.Lean).
func (l *linker) remakeMessages(j *joint, lc *leanCols) {
	n := len(j.hot)
	msgs := hugemem.Make[trace.Message](n, n)
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
