package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"wap5/internal/hugemem"
)

// Envelope is a message without its id, size, truth and extra text: who
// sent it to whom and when, over which connection, as which part of which
// call, from and to which actor. It is what call inference reads (package
// nesting), in 48 bytes instead of a Message's 72.
type Envelope struct {
	Send, Recv         int64
	Src, Dst           NodeID
	SrcEP, DstEP       EndpointID
	Call               int32
	Kind               Kind
	SrcActor, DstActor ActorID
}

// Time is the envelope's send time, or its receive time when the sender
// was not traced (Message.Time).
func (e *Envelope) Time() int64 {
	if e.Send != Unknown {
		return e.Send
	}
	return e.Recv
}

// EnvelopeOf returns m's envelope.
func EnvelopeOf(m *Message) Envelope {
	return Envelope{Send: m.Send, Recv: m.Recv, Src: m.Src, Dst: m.Dst, SrcEP: m.SrcEP, DstEP: m.DstEP,
		Call: m.Call, Kind: m.Kind, SrcActor: m.SrcActor, DstActor: m.DstActor}
}

// Envelopes returns the envelopes of msgs, in a new slice.
func Envelopes(msgs []Message) []Envelope {
	env := make([]Envelope, len(msgs))
	for i := range msgs {
		env[i] = EnvelopeOf(&msgs[i])
	}
	return env
}

// envelopes is a list of envelopes outside the Go heap (hugemem.Map):
// tens of megabytes that would otherwise make the collector run, and
// that have a clear end of life.
type envelopes struct {
	list []Envelope
	free func()
	// noNames: the endpoints' names are not kept (ReadFileEnvelopesNoNames).
	noNames bool
}

// make gives e room for n envelopes.
func (e *envelopes) make(n int) {
	b, free := hugemem.Map(n * int(unsafe.Sizeof(Envelope{})))
	e.list, e.free = unsafe.Slice((*Envelope)(unsafe.Pointer(unsafe.SliceData(b))), n)[:0], free
}

// release gives back e's memory; e.list must not be used after it (what
// grew beyond it is on the Go heap).
func (e *envelopes) release() {
	if e.free != nil {
		e.free()
	}
	*e = envelopes{}
}

// errNoEnvelopes: the input cannot be decoded straight into envelopes.
var errNoEnvelopes = errors.New("not decoded into envelopes")

// ReadFileEnvelopes is ReadFileValid for readers of envelopes only: it
// returns the trace (its tables, clock and warnings) and its messages'
// envelopes. A version 3 binary file is decoded straight into the
// envelopes, checked on the way: two thirds of the memory of the
// messages, and no ids, sizes or texts built.
// Other inputs, and binary files that are damaged or not proven valid by
// the decoder, are read by ReadFileValid, so that what is kept, the
// warnings and the errors are ReadFileValid's (the envelopes then take the
// messages' memory). Either way t.Messages and t.Extra are empty.
//
// The envelopes may be outside the Go heap: release gives their memory
// back, after which they must not be used.
func ReadFileEnvelopes(path string) (t *Trace, env []Envelope, release func(), err error) {
	if path != "-" {
		var e envelopes
		t, err := readFileEnvelopes(path, &e)
		if err != errNoEnvelopes {
			return t, e.list, e.release, err
		}
	}
	t, err = ReadFileValid(path)
	if err != nil {
		return nil, nil, func() {}, err
	}
	env = envelopesInPlace(t.Messages)
	t.Messages, t.Extra = nil, nil
	return t, env, func() {}, nil
}

// envelopesInPlace turns msgs into their envelopes in their own memory
// (an envelope is smaller than a message, so envelope i is written over
// messages already read): no second array. msgs must not be used after.
func envelopesInPlace(msgs []Message) []Envelope {
	if len(msgs) == 0 {
		return nil
	}
	env := unsafe.Slice((*Envelope)(unsafe.Pointer(unsafe.SliceData(msgs))), len(msgs))
	for i := range msgs {
		e := EnvelopeOf(&msgs[i]) // read whole before env[i] overwrites its start
		env[i] = e
	}
	return env
}

// readFileEnvelopes is ReadFileEnvelopes' direct path: errNoEnvelopes
// when the file is not a regular one holding a binary trace of version 3
// that decodes without damage into valid messages.
func readFileEnvelopes(path string, env *envelopes) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errNoEnvelopes // ReadFileValid says what
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < int64(len(BinaryMagic)) {
		return nil, errNoEnvelopes
	}
	var magic [len(BinaryMagic)]byte
	if _, err := f.ReadAt(magic[:], 0); err != nil || string(magic[:]) != BinaryMagic {
		return nil, errNoEnvelopes
	}
	t, _, err := readBinarySized(f, path, st.Size(), env)
	return t, err
}

// decodeEnvelopes is decodeBlock into envelopes: the same columns read,
// the same damage found and the same checks made (ids, sizes, truths and
// extra texts are decoded for them, not kept). It goes a column at a time
// over runs of envEach envelopes (a run stays in the cache), each column in
// a small loop of its own, one- and two-byte varints inline; a column
// whose values are not kept (ids, truths) is read without looking at the
// messages.
func decodeEnvelopes(env *[]Envelope, raw *[colCount][]byte, k int, st *colState, lim *colLimits) (bool, error) {
	flags := raw[colFlags]
	if len(flags) != k {
		return false, fmt.Errorf("flags column has %d bytes for %d messages", len(flags), k)
	}
	base := len(*env)
	if cap(*env)-base < k {
		*env = append(*env, make([]Envelope, k)...)
	}
	// Every field of every envelope is written below: no clearing first.
	*env = (*env)[:base+k]
	all := (*env)[base:]
	var d envDecoder
	d.tm, d.rv, d.nodes, d.eps, d.by = raw[colTime], raw[colRecv], raw[colNodes], raw[colEPs], raw[colBytes]
	d.calls, d.actors = raw[colCall], raw[colActors]
	d.prevTime, d.prevCall = st.prevTime, st.prevCall
	d.minRef = NoRef
	for lo := 0; lo < k; lo += envEach {
		out := all[lo:min(lo+envEach, k)]
		fls := flags[lo : lo+len(out)]
		d.times(out, fls)
		d.nodesAndEPs(out)
		d.sizes(len(out))
		d.callsAndActors(out, fls, lim)
	}
	// Ids and truths: only their smallest value is checked, so their
	// columns are read on their own, not message by message.
	ids, truths := raw[colID], raw[colTruth]
	ip, prevID, minID := refColumn(ids, d.nID, 1, st.prevID)
	trp, prevTru, minTru := refColumn(truths, d.nTruth, 0, int64(st.prevTru))
	minRef := min(d.minRef, minID, minTru)
	bad := d.tp > len(d.tm) || d.rp > len(d.rv) || d.np > len(d.nodes) || d.ep > len(d.eps) || d.bp > len(d.by) ||
		ip > len(ids) || d.cp > len(d.calls) || trp > len(truths) || d.ap > len(d.actors)
	extra := colReader{b: raw[colExtra]}
	if !bad {
		for x := extra.uv(); x > 0 && !extra.bad; x-- {
			i, l := extra.uv(), extra.uv()
			if extra.bad || i >= uint64(k) || l > uint64(len(extra.b)-extra.p) {
				extra.bad = true
				break
			}
			extra.p += int(l)
		}
	}
	if bad || extra.bad {
		*env = (*env)[:base]
		return false, fmt.Errorf("corrupt column")
	}
	st.prevTime, st.prevID, st.prevCall, st.prevTru = d.prevTime, prevID, d.prevCall, int32(prevTru)
	valid := d.maxNode < lim.nodes && d.maxEP < lim.eps && d.orBytes>>63 == 0 && d.maxFlags>>bfKindShift <= byte(KindReturn) &&
		!d.noTime && !d.badActor && minRef >= lim.minRef
	return valid, nil
}

// envEach is how many envelopes decodeEnvelopes fills a column at a time
// (48 KB of them).
const envEach = 1024

// envDecoder is decodeEnvelopes' place in each column and what it has
// found so far.
type envDecoder struct {
	tm, rv, nodes, eps, by, calls, actors []byte
	tp, rp, np, ep, bp, cp, ap            int
	prevTime                              int64
	prevCall                              int32
	nID, nTruth                           int
	maxNode, maxEP, orBytes               uint64
	maxFlags                              byte
	minRef                                int64
	noTime, badActor                      bool
}

// times decodes the flags, times and kinds of out. Time deltas take three
// or four bytes: up to eight are gathered from one word, inline.
func (d *envDecoder) times(out []Envelope, fls []byte) {
	tm, rv, tp, rp, prevTime := d.tm, d.rv, d.tp, d.rp, d.prevTime
	maxFlags, nID, nTruth, noTime := d.maxFlags, d.nID, d.nTruth, d.noTime
	fls = fls[:len(out)]
	for i := range out {
		fl := fls[i]
		maxFlags = max(maxFlags, fl)
		nID += int(fl>>2) & 1    // bfID
		nTruth += int(fl>>4) & 1 // bfTruth
		var u uint64
		if uint(tp) < uint(len(tm)) && tm[tp] < 0x80 {
			u, tp = uint64(tm[tp]), tp+1
		} else if w, ok := word(tm, tp); ok && ^w&0x8080808080808080 != 0 {
			var n int
			u, n = gather7(w)
			tp += n
		} else {
			u, tp = uvSlow(tm, tp)
		}
		at := prevTime + unzig(u)
		prevTime = at
		send, recv := Unknown, at
		if fl&bfSendUnknown == 0 {
			send, recv = at, Unknown
			if fl&bfRecvUnknown == 0 {
				if uint(rp) < uint(len(rv)) && rv[rp] < 0x80 {
					u, rp = uint64(rv[rp]), rp+1
				} else if w, ok := word(rv, rp); ok && ^w&0x8080808080808080 != 0 {
					var n int
					u, n = gather7(w)
					rp += n
				} else {
					u, rp = uvSlow(rv, rp)
				}
				recv = at + unzig(u)
			}
		}
		noTime = noTime || send == Unknown && recv == Unknown
		e := &out[i]
		e.Send, e.Recv, e.Kind = send, recv, Kind(fl>>bfKindShift)
	}
	d.tp, d.rp, d.prevTime = tp, rp, prevTime
	d.maxFlags, d.nID, d.nTruth, d.noTime = maxFlags, nID, nTruth, noTime
}

// nodesAndEPs decodes the nodes and endpoints of out.
func (d *envDecoder) nodesAndEPs(out []Envelope) {
	nodes, np, maxNode := d.nodes, d.np, d.maxNode
	for i := range out {
		var src, dst uint64
		if uint(np) < uint(len(nodes)) && nodes[np] < 0x80 {
			src, np = uint64(nodes[np]), np+1
		} else if uint(np+1) < uint(len(nodes)) && nodes[np+1] < 0x80 {
			src, np = uint64(nodes[np]&0x7f)|uint64(nodes[np+1])<<7, np+2
		} else {
			src, np = uvSlow(nodes, np)
		}
		if uint(np) < uint(len(nodes)) && nodes[np] < 0x80 {
			dst, np = uint64(nodes[np]), np+1
		} else if uint(np+1) < uint(len(nodes)) && nodes[np+1] < 0x80 {
			dst, np = uint64(nodes[np]&0x7f)|uint64(nodes[np+1])<<7, np+2
		} else {
			dst, np = uvSlow(nodes, np)
		}
		maxNode = max(maxNode, src, dst)
		out[i].Src, out[i].Dst = NodeID(src), NodeID(dst)
	}
	d.np, d.maxNode = np, maxNode
	eps, ep, maxEP := d.eps, d.ep, d.maxEP
	for i := range out {
		var sep, dep uint64
		if uint(ep) < uint(len(eps)) && eps[ep] < 0x80 {
			sep, ep = uint64(eps[ep]), ep+1
		} else if uint(ep+1) < uint(len(eps)) && eps[ep+1] < 0x80 {
			sep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1])<<7, ep+2
		} else if uint(ep+2) < uint(len(eps)) && eps[ep+2] < 0x80 {
			// (Three bytes: a large trace's ephemeral ports, 16,384 to
			// 2,097,151 endpoints.)
			sep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1]&0x7f)<<7|uint64(eps[ep+2])<<14, ep+3
		} else {
			sep, ep = uvSlow(eps, ep)
		}
		if uint(ep) < uint(len(eps)) && eps[ep] < 0x80 {
			dep, ep = uint64(eps[ep]), ep+1
		} else if uint(ep+1) < uint(len(eps)) && eps[ep+1] < 0x80 {
			dep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1])<<7, ep+2
		} else if uint(ep+2) < uint(len(eps)) && eps[ep+2] < 0x80 {
			// (Three bytes: a large trace's ephemeral ports, 16,384 to
			// 2,097,151 endpoints.)
			dep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1]&0x7f)<<7|uint64(eps[ep+2])<<14, ep+3
		} else {
			dep, ep = uvSlow(eps, ep)
		}
		maxEP = max(maxEP, sep, dep)
		out[i].SrcEP, out[i].DstEP = EndpointID(sep), EndpointID(dep)
	}
	d.ep, d.maxEP = ep, maxEP
}

// sizes checks the sizes of n messages (none may be negative as an int64).
func (d *envDecoder) sizes(n int) {
	by, bp, or := d.by, d.bp, d.orBytes
	for ; n > 0; n-- {
		var size uint64
		if uint(bp) < uint(len(by)) && by[bp] < 0x80 {
			size, bp = uint64(by[bp]), bp+1
		} else if uint(bp+1) < uint(len(by)) && by[bp+1] < 0x80 {
			size, bp = uint64(by[bp]&0x7f)|uint64(by[bp+1])<<7, bp+2
		} else {
			size, bp = uvSlow(by, bp)
		}
		or |= size
	}
	d.bp, d.orBytes = bp, or
}

// callsAndActors decodes the call ids and the actors of out.
func (d *envDecoder) callsAndActors(out []Envelope, fls []byte, lim *colLimits) {
	calls, cp, prevCall, minRef := d.calls, d.cp, d.prevCall, d.minRef
	fls = fls[:len(out)]
	for i := range out {
		call := int32(NoRef)
		if fls[i]&bfCall != 0 {
			var u uint64
			if uint(cp) < uint(len(calls)) && calls[cp] < 0x80 {
				u, cp = uint64(calls[cp]), cp+1
			} else if uint(cp+1) < uint(len(calls)) && calls[cp+1] < 0x80 {
				u, cp = uint64(calls[cp]&0x7f)|uint64(calls[cp+1])<<7, cp+2
			} else {
				u, cp = uvSlow(calls, cp)
			}
			call = int32(int64(prevCall) + unzig(u))
			prevCall = call
			minRef = min(minRef, int64(call))
		}
		out[i].Call = call
	}
	d.cp, d.prevCall, d.minRef = cp, prevCall, minRef
	actors, ap, bad := d.actors, d.ap, d.badActor
	for i := range out {
		var sa, da ActorID
		if fls[i]&colActorsFlag != 0 {
			var u, v uint64
			if uint(ap) < uint(len(actors)) && actors[ap] < 0x80 {
				u, ap = uint64(actors[ap]), ap+1
			} else {
				u, ap = uvSlow(actors, ap)
			}
			if uint(ap) < uint(len(actors)) && actors[ap] < 0x80 {
				v, ap = uint64(actors[ap]), ap+1
			} else {
				v, ap = uvSlow(actors, ap)
			}
			sa, da = ActorID(u), ActorID(v)
			bad = bad || !actorsFit(lim, uint64(out[i].Src), uint64(out[i].Dst), sa, da)
		}
		out[i].SrcActor, out[i].DstActor = sa, da
	}
	d.ap, d.badActor = ap, bad
}

// refColumn reads n delta-encoded references (ids: step 1, truths: step
// 0, from prev) and returns the position after them, the last and the
// smallest.
func refColumn(b []byte, n int, step, prev int64) (p int, last, least int64) {
	least = NoRef
	for ; n > 0; n-- {
		var u uint64
		if uint(p) < uint(len(b)) && b[p] < 0x80 {
			u, p = uint64(b[p]), p+1
		} else if uint(p+1) < uint(len(b)) && b[p+1] < 0x80 {
			u, p = uint64(b[p]&0x7f)|uint64(b[p+1])<<7, p+2
		} else {
			u, p = uvSlow(b, p)
		}
		prev += step + unzig(u)
		least = min(least, prev)
	}
	return p, prev, least
}

// word is the eight bytes at b[p:] as a little-endian word, if there are
// eight.
func word(b []byte, p int) (uint64, bool) {
	if p < 0 || len(b)-p < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[p:]), true
}
