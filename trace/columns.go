package trace

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"

	"wap5/internal/hugemem"
	"wap5/internal/prefetch"
)

// The message section of a version 3 binary trace is columnar: messages in
// blocks of up to colBlock, each block a count followed by colCount
// columns, each a length and its bytes. A column holds one field of every
// message of the block (or of those that have it), delta-encoded against
// the previous message so that its values are small and alike: zstd then
// has far less to do than over whole rows, and compresses better.
//
//	flags    one byte per message: the bf* bits (bfActors instead of bfExtra),
//	         kind in the top two bits
//	time     sv(Time() − previous Time())
//	recv     sv(Recv − Send), messages with both times
//	nodes    uv(Src) uv(Dst)
//	eps      uv(SrcEP) uv(DstEP)
//	bytes    uv(Bytes)
//	id       sv(ID − previous ID − 1), messages with an id
//	call     sv(Call − previous Call), messages with a call
//	truth    sv(Truth − previous Truth), messages with a truth
//	actors   uv(SrcActor) uv(DstActor), messages with bfActors
//	extra    uv(count), then per message uv(index in block) and the string
const (
	colFlags = iota
	colTime
	colRecv
	colNodes
	colEPs
	colBytes
	colID
	colCall
	colTruth
	colActors
	colExtra
	colCount
)

const colBlock = 1 << 16

// colActorsFlag replaces bfExtra in a version 3 flags byte.
const colActorsFlag = bfExtra

// colState carries the deltas from block to block.
type colState struct {
	prevTime, prevID  int64
	prevCall, prevTru int32
}

// writeColumns writes the messages of t as columns (the message count has
// been written).
func writeColumns(b *binWriter, t *Trace) {
	var cols [colCount][]byte
	for i := range cols {
		cols[i] = make([]byte, 0, 4*colBlock)
	}
	var st colState
	msgs := t.Messages
	for start := 0; start < len(msgs); start += colBlock {
		block := msgs[start:min(start+colBlock, len(msgs))]
		for i := range cols {
			cols[i] = cols[i][:0]
		}
		nExtra := 0
		if len(t.Extra) > 0 {
			for i := range block {
				if _, ok := t.Extra[int32(start+i)]; ok {
					nExtra++
				}
			}
		}
		encodeBlock(&cols, block, &st)
		cols[colExtra] = binary.AppendUvarint(cols[colExtra], uint64(nExtra))
		if nExtra > 0 {
			for i := range block {
				if x, ok := t.Extra[int32(start+i)]; ok {
					cols[colExtra] = binary.AppendUvarint(cols[colExtra], uint64(i))
					cols[colExtra] = binary.AppendUvarint(cols[colExtra], uint64(len(x)))
					cols[colExtra] = append(cols[colExtra], x...)
				}
			}
		}
		b.block(&cols, len(block))
	}
}

// block writes one block of k messages from its columns.
func (b *binWriter) block(cols *[colCount][]byte, k int) {
	b.uv(uint64(k))
	for i := range cols {
		b.uv(uint64(len(cols[i])))
		b.flush()
		if b.err == nil {
			_, b.err = b.w.Write(cols[i])
		}
	}
}

// encodeBlock appends one block's fields to the columns, one column (or
// two that go together) per pass over the block: a single pass keeps ten
// slices live and spills them on every message; a pass keeps one or two in
// registers, and the block is in cache for the next pass.
//
//  1. flags' kind and time bits, the time and recv columns;
//  2. nodes, endpoints and bytes;
//  3. id, call and truth, each with its flag bit;
//  4. actors, with theirs.
func encodeBlock(cols *[colCount][]byte, block []Message, st *colState) {
	// step 1
	flags, tm, rv := cols[colFlags], cols[colTime], cols[colRecv]
	f0 := len(flags)
	prevTime := st.prevTime
	for i := range block {
		m := &block[i]
		fl := byte(m.Kind) << bfKindShift
		if m.Send == Unknown {
			fl |= bfSendUnknown
			tm = appendSv(tm, m.Recv-prevTime)
			prevTime = m.Recv
		} else {
			tm = appendSv(tm, m.Send-prevTime)
			prevTime = m.Send
			if m.Recv == Unknown {
				fl |= bfRecvUnknown
			} else {
				rv = appendSv(rv, m.Recv-m.Send)
			}
		}
		flags = append(flags, fl)
	}
	st.prevTime = prevTime
	cols[colTime], cols[colRecv] = tm, rv
	fl := flags[f0:len(flags):len(flags)]
	cols[colFlags] = flags
	// step 2
	nodes := cols[colNodes]
	for i := range block {
		m := &block[i]
		nodes = appendUv(appendUv(nodes, uint64(m.Src)), uint64(m.Dst))
	}
	cols[colNodes] = nodes
	eps := cols[colEPs]
	for i := range block {
		m := &block[i]
		eps = appendUv(appendUv(eps, uint64(m.SrcEP)), uint64(m.DstEP))
	}
	cols[colEPs] = eps
	by := cols[colBytes]
	for i := range block {
		by = appendUv(by, uint64(block[i].Bytes))
	}
	cols[colBytes] = by
	// step 3
	ids, prevID := cols[colID], st.prevID
	for i := range block {
		if m := &block[i]; m.ID != NoRef {
			fl[i] |= bfID
			ids = appendSv(ids, m.ID-prevID-1)
			prevID = m.ID
		}
	}
	cols[colID], st.prevID = ids, prevID
	calls, prevCall := cols[colCall], st.prevCall
	for i := range block {
		if m := &block[i]; m.Call != NoRef {
			fl[i] |= bfCall
			calls = appendSv(calls, int64(m.Call)-int64(prevCall))
			prevCall = m.Call
		}
	}
	cols[colCall], st.prevCall = calls, prevCall
	truths, prevTru := cols[colTruth], st.prevTru
	for i := range block {
		if m := &block[i]; m.Truth != NoRef {
			fl[i] |= bfTruth
			truths = appendSv(truths, int64(m.Truth)-int64(prevTru))
			prevTru = m.Truth
		}
	}
	cols[colTruth], st.prevTru = truths, prevTru
	// step 4
	actors := cols[colActors]
	for i := range block {
		if m := &block[i]; m.SrcActor != NoActor || m.DstActor != NoActor {
			fl[i] |= colActorsFlag
			actors = appendUv(appendUv(actors, uint64(m.SrcActor)), uint64(m.DstActor))
		}
	}
	cols[colActors] = actors
}

// appendUv is binary.AppendUvarint with the one-byte case first (most
// column values are small).
func appendUv(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	if v < 1<<14 {
		return append(b, byte(v)|0x80, byte(v>>7))
	}
	return binary.AppendUvarint(b, v)
}

func appendSv(b []byte, v int64) []byte { return appendUv(b, uint64(v<<1)^uint64(v>>63)) }

// uvAt decodes the varint at b[p:] and returns it with the position after
// it; past the end of b or on a bad varint it returns a position beyond
// len(b), and so does every later call: one test after the block tells a
// damaged column. The one-byte case is inlined into the decoding loop.
func uvAt(b []byte, p int) (uint64, int) {
	if uint(p) < uint(len(b)) && b[p] < 0x80 {
		return uint64(b[p]), p + 1
	}
	return uvSlow(b, p)
}

// uvSlow is uvAt past the one-byte case. With eight bytes left it finds the
// varint's last byte in one word and gathers its 7-bit groups without a
// branch per byte (time deltas take three or four bytes, of varying length:
// a byte loop mispredicts).
func uvSlow(b []byte, p int) (uint64, int) {
	if uint(p) >= uint(len(b)) {
		return 0, len(b) + 1
	}
	if len(b)-p >= 8 {
		w := binary.LittleEndian.Uint64(b[p:])
		if ^w&0x8080808080808080 != 0 {
			v, n := gather7(w)
			return v, p + n
		}
	}
	v, n := binary.Uvarint(b[p:])
	if n <= 0 {
		return 0, len(b) + 1
	}
	return v, p + n
}

// gather7 decodes the varint that starts at w's first byte (little
// endian) and ends within the word (some byte of w has its top bit clear):
// its value and its length in bytes. It finds the last byte in one step and
// gathers the 7-bit groups without a branch per byte (the decoders' loops
// call it inline for the varints longer than one byte).
func gather7(w uint64) (uint64, int) {
	n := uint(bits.TrailingZeros64(^w&0x8080808080808080)) >> 3 // index of the last byte
	w &= 1<<(8*n+8) - 1                                         // n = 7: the shift gives 0, the mask all ones
	return w&0x7f | w>>1&(0x7f<<7) | w>>2&(0x7f<<14) | w>>3&(0x7f<<21) |
		w>>4&(0x7f<<28) | w>>5&(0x7f<<35) | w>>6&(0x7f<<42) | w>>7&(0x7f<<49), int(n) + 1
}

// unzig undoes the zigzag encoding of a signed varint.
func unzig(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// colLimits is what decodeBlock checks messages against, so that a trace
// whose every block passed needs no CheckValid pass over its messages.
type colLimits struct {
	nodes, eps uint64
	minRef     int64   // smallest id, call or truth that names a label
	actors     []int32 // actor table size by node; nil: no node has actors
}

func newColLimits(t *Trace) colLimits {
	l := colLimits{nodes: uint64(len(t.Nodes)), eps: uint64(len(t.Endpoints)), minRef: -1 - int64(len(t.Labels))}
	if t.HasActors() {
		l.actors = make([]int32, len(t.Nodes))
		for n := range l.actors {
			l.actors[n] = int32(t.actorCount(NodeID(n)))
		}
	}
	return l
}

// readColumns reads n messages in columns into t (into *env instead, as
// envelopes, when env is not nil); a damaged block ends the read with b.err
// set (the messages of the blocks before it are kept). It reports whether
// every message kept passed CheckValid's message checks.
func (b *binReader) readColumns(t *Trace, n int, env *[]Envelope) (valid bool) {
	done := func() int { return len(t.Messages) }
	if env != nil {
		done = func() int { return len(*env) }
	}
	var st colState
	var raw [colCount][]byte
	// The block's columns, one after the other, in one buffer (in huge
	// pages: a fresh process would take a page fault per 4 KB of it),
	// unless the rest of the input is in b.buf already.
	var all []byte
	lim := newColLimits(t)
	if b.noNames {
		lim.eps = uint64(b.eps) // (t.Endpoints holds only the first name)
	}
	valid = true
	for done() < n && b.err == nil {
		k := b.count("block message", colBlock)
		if b.err != nil {
			return valid
		}
		if k == 0 || k > n-done() {
			b.fail("block of %d messages at message %d of %d", k, done(), n)
			return valid
		}
		all = all[:0]
		var ends [colCount]int // in all, of the columns copied there
		var copied [colCount]bool
		for i := range raw {
			l := b.count("column length", 64*colBlock+1<<26)
			if b.err != nil {
				return valid
			}
			if !b.ensure(l) {
				b.fail("truncated column: %v", errUnexpectedEOF)
				return valid
			}
			if b.eof {
				// The rest of the input is in b.buf, which no longer moves.
				raw[i] = b.buf[b.pos : b.pos+l : b.pos+l]
			} else {
				if all == nil {
					all = hugemem.MakeSmall[byte](0, min(2<<20, 32*n+4096))
				}
				all = append(all, b.buf[b.pos:b.pos+l]...)
				ends[i], copied[i] = len(all), true
			}
			b.pos += l
		}
		start := 0
		for i := range raw {
			if copied[i] {
				raw[i] = all[start:ends[i]:ends[i]]
				start = ends[i]
			}
		}
		var ok bool
		var err error
		if env != nil {
			ok, err = decodeEnvelopes(env, &raw, k, &st, &lim)
		} else {
			ok, err = decodeBlock(t, &raw, k, &st, &lim)
		}
		if err != nil {
			b.fail("block at message %d: %v", done(), err)
			return valid
		}
		valid = valid && ok
		// A whole input's blocks decoded so far are read no more: their
		// pages go back to the system every 8 MB, so that the input and
		// the messages decoded from it do not both take memory in full.
		// (Not while the input's memory is kept for what follows,
		// touched already: hugemem.KeepsInput.)
		if b.whole && !hugemem.KeepsInput() && b.pos-b.given >= 8<<20 {
			hugemem.Discard(b.buf[b.given:b.pos])
			b.given = b.pos
		}
	}
	return valid
}

var errUnexpectedEOF = fmt.Errorf("unexpected end of data")

// decodeBlock appends k messages decoded from one block's columns and
// reports whether they all pass CheckValid's message checks against lim
// (false only means "not proven": CheckValid then decides); on damage it
// appends none. Each column is read in one tight loop straight into the
// messages, with the checks folded in as running maxima.
// decodeAhead is how many messages ahead decodeBlock asks for the lines it
// will write.
const decodeAhead = 64

func decodeBlock(t *Trace, raw *[colCount][]byte, k int, st *colState, lim *colLimits) (bool, error) {
	flags := raw[colFlags]
	if len(flags) != k {
		return false, fmt.Errorf("flags column has %d bytes for %d messages", len(flags), k)
	}
	base := len(t.Messages)
	if cap(t.Messages)-base < k {
		t.Messages = grownMessages(t.Messages, k)
	}
	// Every field of every message is written below: no clearing first.
	t.Messages = t.Messages[:base+k]
	out := t.Messages[base:]
	flags = flags[:len(out)]
	tm, rv, nodes, eps, by := raw[colTime], raw[colRecv], raw[colNodes], raw[colEPs], raw[colBytes]
	ids, calls, truths, actors := raw[colID], raw[colCall], raw[colTruth], raw[colActors]
	var tp, rp, np, ep, bp, ip, cp, trp, ap int
	prevTime, prevID, prevCall, prevTru := st.prevTime, st.prevID, st.prevCall, st.prevTru
	var maxNode, maxEP, orBytes uint64
	var maxFlags byte
	minRef := int64(NoRef)
	noTime, badActor := false, false
	// The one-byte case of each varint is written out in the loop (uvAt
	// would not be inlined), as in the envelope decoder (envDecoder): the
	// two-byte one too where values mostly take two bytes on a large
	// trace (node and endpoint ids, sizes, id, call and truth deltas),
	// the three-byte one of the endpoints, and uvSlow's word at a time of
	// the time and receive deltas (three to five bytes). On the
	// CoDeeN-sized trace ≈ 39M varints take more than one byte: each was
	// a call of uvSlow.
	for i := range out {
		// The messages are written in order among a dozen column
		// streams read: the lines of the 8 messages decodeAhead on are
		// asked for at every 8th (their first store stalled; a hint on a
		// page not faulted in yet is dropped).
		if i&7 == 0 && i+decodeAhead+8 <= len(out) {
			prefetch.Lines(uintptr(unsafe.Pointer(&out[i+decodeAhead])), 8*unsafe.Sizeof(Message{}))
		}
		fl := flags[i]
		maxFlags = max(maxFlags, fl)
		var u, v uint64
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
		var src, dst, sep, dep uint64
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
		if uint(ep) < uint(len(eps)) && eps[ep] < 0x80 {
			sep, ep = uint64(eps[ep]), ep+1
		} else if uint(ep+1) < uint(len(eps)) && eps[ep+1] < 0x80 {
			sep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1])<<7, ep+2
		} else if uint(ep+2) < uint(len(eps)) && eps[ep+2] < 0x80 {
			// (Three bytes: a large trace's ephemeral ports.)
			sep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1]&0x7f)<<7|uint64(eps[ep+2])<<14, ep+3
		} else {
			sep, ep = uvSlow(eps, ep)
		}
		if uint(ep) < uint(len(eps)) && eps[ep] < 0x80 {
			dep, ep = uint64(eps[ep]), ep+1
		} else if uint(ep+1) < uint(len(eps)) && eps[ep+1] < 0x80 {
			dep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1])<<7, ep+2
		} else if uint(ep+2) < uint(len(eps)) && eps[ep+2] < 0x80 {
			// (Three bytes: a large trace's ephemeral ports.)
			dep, ep = uint64(eps[ep]&0x7f)|uint64(eps[ep+1]&0x7f)<<7|uint64(eps[ep+2])<<14, ep+3
		} else {
			dep, ep = uvSlow(eps, ep)
		}
		maxNode = max(maxNode, src, dst)
		maxEP = max(maxEP, sep, dep)
		var size uint64
		if uint(bp) < uint(len(by)) && by[bp] < 0x80 {
			size, bp = uint64(by[bp]), bp+1
		} else if uint(bp+1) < uint(len(by)) && by[bp+1] < 0x80 {
			size, bp = uint64(by[bp]&0x7f)|uint64(by[bp+1])<<7, bp+2
		} else if uint(bp+2) < uint(len(by)) && by[bp+2] < 0x80 {
			// (Three bytes: a third of a large trace's sizes.)
			size, bp = uint64(by[bp]&0x7f)|uint64(by[bp+1]&0x7f)<<7|uint64(by[bp+2])<<14, bp+3
		} else {
			size, bp = uvSlow(by, bp)
		}
		orBytes |= size
		id, call, truth := int64(NoRef), int32(NoRef), int32(NoRef)
		if fl&bfID != 0 {
			if uint(ip) < uint(len(ids)) && ids[ip] < 0x80 {
				u, ip = uint64(ids[ip]), ip+1
			} else if uint(ip+1) < uint(len(ids)) && ids[ip+1] < 0x80 {
				u, ip = uint64(ids[ip]&0x7f)|uint64(ids[ip+1])<<7, ip+2
			} else if uint(ip+2) < uint(len(ids)) && ids[ip+2] < 0x80 {
				u, ip = uint64(ids[ip]&0x7f)|uint64(ids[ip+1]&0x7f)<<7|uint64(ids[ip+2])<<14, ip+3
			} else {
				u, ip = uvSlow(ids, ip)
			}
			id = prevID + 1 + unzig(u)
			prevID = id
			minRef = min(minRef, id)
		}
		if fl&bfCall != 0 {
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
		if fl&bfTruth != 0 {
			if uint(trp) < uint(len(truths)) && truths[trp] < 0x80 {
				u, trp = uint64(truths[trp]), trp+1
			} else if uint(trp+1) < uint(len(truths)) && truths[trp+1] < 0x80 {
				u, trp = uint64(truths[trp]&0x7f)|uint64(truths[trp+1])<<7, trp+2
			} else {
				u, trp = uvSlow(truths, trp)
			}
			truth = int32(int64(prevTru) + unzig(u))
			prevTru = truth
			minRef = min(minRef, int64(truth))
		}
		var sa, da ActorID
		if fl&colActorsFlag != 0 {
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
			badActor = badActor || !actorsFit(lim, src, dst, sa, da)
		}
		out[i] = Message{Send: send, Recv: recv, ID: id, Bytes: int64(size), Src: NodeID(src), Dst: NodeID(dst),
			SrcEP: EndpointID(sep), DstEP: EndpointID(dep), Call: call, Truth: truth, Kind: Kind(fl >> bfKindShift),
			SrcActor: sa, DstActor: da}
	}
	bad := tp > len(tm) || rp > len(rv) || np > len(nodes) || ep > len(eps) || bp > len(by) ||
		ip > len(ids) || cp > len(calls) || trp > len(truths) || ap > len(actors)
	extra := colReader{b: raw[colExtra]}
	if !bad {
		for x := extra.uv(); x > 0 && !extra.bad; x-- {
			i, l := extra.uv(), extra.uv()
			if extra.bad || i >= uint64(k) || l > uint64(len(extra.b)-extra.p) {
				extra.bad = true
				break
			}
			if t.Extra == nil {
				t.Extra = map[int32]string{}
			}
			t.Extra[int32(base+int(i))] = string(extra.b[extra.p : extra.p+int(l)])
			extra.p += int(l)
		}
	}
	if bad || extra.bad {
		for i := range out {
			delete(t.Extra, int32(base+i))
		}
		t.Messages = t.Messages[:base]
		return false, fmt.Errorf("corrupt column")
	}
	st.prevTime, st.prevID, st.prevCall, st.prevTru = prevTime, prevID, prevCall, prevTru
	valid := maxNode < lim.nodes && maxEP < lim.eps && orBytes>>63 == 0 && maxFlags>>bfKindShift <= byte(KindReturn) &&
		!noTime && !badActor && minRef >= lim.minRef
	return valid, nil
}

// actorsFit says whether the actors of a message from src to dst are in
// their nodes' tables (NoActor always is).
func actorsFit(lim *colLimits, src, dst uint64, sa, da ActorID) bool {
	n := uint64(len(lim.actors))
	switch {
	case sa != NoActor && (src >= n || int32(sa) > lim.actors[src]):
		return false
	case da != NoActor && (dst >= n || int32(da) > lim.actors[dst]):
		return false
	}
	return true
}

// colReader decodes the extra column of a block.
type colReader struct {
	b   []byte
	p   int
	bad bool
}

func (c *colReader) uv() uint64 {
	v, p := uvAt(c.b, c.p)
	if p > len(c.b) {
		c.bad = true
		return 0
	}
	c.p = p
	return v
}
