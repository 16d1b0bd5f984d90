package trace

import (
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// BinaryWriter writes a binary trace whose messages come in pieces, so that
// a producer that has them in order (reconcile's merge of its sorted
// blocks) need not gather them into one slice first. The tables come from
// the trace given to NewBinaryWriter and must be final; its Messages and
// Extra are not written (messages have no extra text this way).
type BinaryWriter struct {
	zw      *zstd.Encoder
	b       *binWriter
	cols    [colCount][]byte
	st      colState
	inBlock int
	n, done int
}

// NewBinaryWriter writes the tables of t and announces n messages, which
// Write must then deliver in total before Close.
func NewBinaryWriter(w io.Writer, t *Trace, n int) (*BinaryWriter, error) {
	zw, b, err := startBinary(w, t, n)
	if err != nil {
		return nil, err
	}
	bw := &BinaryWriter{zw: zw, b: b, n: n}
	for i := range bw.cols {
		bw.cols[i] = make([]byte, 0, 4*colBlock)
	}
	return bw, nil
}

// Write appends messages (in the order the trace is to hold them).
func (bw *BinaryWriter) Write(msgs []Message) error {
	if bw.done+len(msgs) > bw.n {
		return fmt.Errorf("binary trace: %d messages announced, %d written", bw.n, bw.done+len(msgs))
	}
	for len(msgs) > 0 && bw.b.err == nil {
		k := min(len(msgs), colBlock-bw.inBlock)
		encodeBlock(&bw.cols, msgs[:k], &bw.st)
		bw.inBlock += k
		bw.done += k
		msgs = msgs[k:]
		if bw.inBlock == colBlock {
			bw.flushBlock()
		}
	}
	return bw.b.err
}

func (bw *BinaryWriter) flushBlock() {
	if bw.inBlock == 0 {
		return
	}
	bw.cols[colExtra] = appendUv(bw.cols[colExtra], 0)
	bw.b.block(&bw.cols, bw.inBlock)
	for i := range bw.cols {
		bw.cols[i] = bw.cols[i][:0]
	}
	bw.inBlock = 0
}

// Close writes what is left and ends the compressed stream (not w).
func (bw *BinaryWriter) Close() error {
	if bw.done != bw.n {
		bw.zw.Close()
		return fmt.Errorf("binary trace: %d messages announced, %d written", bw.n, bw.done)
	}
	bw.flushBlock()
	if bw.b.flush(); bw.b.err != nil {
		bw.zw.Close()
		return bw.b.err
	}
	return bw.zw.Close()
}
