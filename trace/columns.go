package trace

import (
	"encoding/binary"
	"fmt"
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

// encodeBlock appends one block's fields to the columns.
func encodeBlock(cols *[colCount][]byte, block []Message, st *colState) {
	flags, tm, rv := cols[colFlags], cols[colTime], cols[colRecv]
	nodes, eps, by := cols[colNodes], cols[colEPs], cols[colBytes]
	ids, calls, truths, actors := cols[colID], cols[colCall], cols[colTruth], cols[colActors]
	prevTime, prevID, prevCall, prevTru := st.prevTime, st.prevID, st.prevCall, st.prevTru
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
		nodes = appendUv(nodes, uint64(m.Src))
		nodes = appendUv(nodes, uint64(m.Dst))
		eps = appendUv(eps, uint64(m.SrcEP))
		eps = appendUv(eps, uint64(m.DstEP))
		by = appendUv(by, uint64(m.Bytes))
		if m.ID != NoRef {
			fl |= bfID
			ids = appendSv(ids, m.ID-prevID-1)
			prevID = m.ID
		}
		if m.Call != NoRef {
			fl |= bfCall
			calls = appendSv(calls, int64(m.Call)-int64(prevCall))
			prevCall = m.Call
		}
		if m.Truth != NoRef {
			fl |= bfTruth
			truths = appendSv(truths, int64(m.Truth)-int64(prevTru))
			prevTru = m.Truth
		}
		if m.SrcActor != NoActor || m.DstActor != NoActor {
			fl |= colActorsFlag
			actors = appendUv(actors, uint64(m.SrcActor))
			actors = appendUv(actors, uint64(m.DstActor))
		}
		flags = append(flags, fl)
	}
	st.prevTime, st.prevID, st.prevCall, st.prevTru = prevTime, prevID, prevCall, prevTru
	cols[colFlags], cols[colTime], cols[colRecv] = flags, tm, rv
	cols[colNodes], cols[colEPs], cols[colBytes] = nodes, eps, by
	cols[colID], cols[colCall], cols[colTruth], cols[colActors] = ids, calls, truths, actors
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

// colReader decodes one column of a block.
type colReader struct {
	b   []byte
	p   int
	bad bool
}

func (c *colReader) uv() uint64 {
	if c.p < len(c.b) && c.b[c.p] < 0x80 {
		v := uint64(c.b[c.p])
		c.p++
		return v
	}
	v, n := binary.Uvarint(c.b[c.p:])
	if n <= 0 {
		c.bad = true
		return 0
	}
	c.p += n
	return v
}

func (c *colReader) sv() int64 {
	u := c.uv()
	return int64(u>>1) ^ -int64(u&1)
}

// readColumns reads n messages in columns into t; a damaged block ends the
// read with b.err set (the messages of the blocks before it are kept).
func (b *binReader) readColumns(t *Trace, n int) {
	var st colState
	var raw [colCount][]byte
	for len(t.Messages) < n && b.err == nil {
		k := b.count("block message", colBlock)
		if b.err != nil {
			return
		}
		if k == 0 || k > n-len(t.Messages) {
			b.fail("block of %d messages at message %d of %d", k, len(t.Messages), n)
			return
		}
		for i := range raw {
			l := b.count("column length", 64*colBlock+1<<26)
			if b.err != nil {
				return
			}
			if !b.ensure(l) {
				b.fail("truncated column: %v", errUnexpectedEOF)
				return
			}
			raw[i] = append(raw[i][:0], b.buf[b.pos:b.pos+l]...)
			b.pos += l
		}
		if err := decodeBlock(t, &raw, k, &st); err != nil {
			b.fail("block at message %d: %v", len(t.Messages), err)
			return
		}
	}
}

var errUnexpectedEOF = fmt.Errorf("unexpected end of data")

// decodeBlock appends k messages decoded from one block's columns; on
// damage it appends none.
func decodeBlock(t *Trace, raw *[colCount][]byte, k int, st *colState) error {
	flags := raw[colFlags]
	if len(flags) != k {
		return fmt.Errorf("flags column has %d bytes for %d messages", len(flags), k)
	}
	tm, rv := colReader{b: raw[colTime]}, colReader{b: raw[colRecv]}
	nodes, eps, by := colReader{b: raw[colNodes]}, colReader{b: raw[colEPs]}, colReader{b: raw[colBytes]}
	ids, calls, truths := colReader{b: raw[colID]}, colReader{b: raw[colCall]}, colReader{b: raw[colTruth]}
	actors, extra := colReader{b: raw[colActors]}, colReader{b: raw[colExtra]}
	base := len(t.Messages)
	t.Messages = append(t.Messages, make([]Message, k)...)
	out := t.Messages[base:]
	prevTime, prevID, prevCall, prevTru := st.prevTime, st.prevID, st.prevCall, st.prevTru
	for i := range out {
		fl := flags[i]
		m := &out[i]
		m.Send, m.Recv, m.ID, m.Call, m.Truth = Unknown, Unknown, NoRef, NoRef, NoRef
		if fl&bfSendUnknown != 0 {
			m.Recv = prevTime + tm.sv()
			prevTime = m.Recv
		} else {
			m.Send = prevTime + tm.sv()
			prevTime = m.Send
			if fl&bfRecvUnknown == 0 {
				m.Recv = m.Send + rv.sv()
			}
		}
		m.Src, m.Dst = NodeID(nodes.uv()), NodeID(nodes.uv())
		m.SrcEP, m.DstEP = EndpointID(eps.uv()), EndpointID(eps.uv())
		m.Bytes = int64(by.uv())
		if fl&bfID != 0 {
			m.ID = prevID + 1 + ids.sv()
			prevID = m.ID
		}
		if fl&bfCall != 0 {
			m.Call = int32(int64(prevCall) + calls.sv())
			prevCall = m.Call
		}
		if fl&bfTruth != 0 {
			m.Truth = int32(int64(prevTru) + truths.sv())
			prevTru = m.Truth
		}
		if fl&colActorsFlag != 0 {
			m.SrcActor, m.DstActor = ActorID(actors.uv()), ActorID(actors.uv())
		}
		m.Kind = Kind(fl >> bfKindShift)
	}
	bad := tm.bad || rv.bad || nodes.bad || eps.bad || by.bad || ids.bad || calls.bad || truths.bad || actors.bad
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
		return fmt.Errorf("corrupt column")
	}
	st.prevTime, st.prevID, st.prevCall, st.prevTru = prevTime, prevID, prevCall, prevTru
	return nil
}
