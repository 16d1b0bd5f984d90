package trace

import (
	"bufio"
	"fmt"
	"io"
	"os"

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
	zw, b, err := startBinary(w, t, n, nil)
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

// SpoolWriter writes a binary trace whose tables are only final after its
// messages: a producer that streams messages in order while it is still
// naming nodes and endpoints and collecting warnings (reconcile's windowed
// emission). The messages are encoded into columns as they come and the
// blocks spooled, uncompressed, to a scratch file; Finish writes the
// magic, the final tables and the message count, then the spooled blocks,
// all through one compressor: the file is exactly what WriteBinary writes
// for the same trace. Memory stays one block of columns whatever the
// number of messages; the scratch file takes the raw columns (about 16
// bytes per message).
type SpoolWriter struct {
	spool   *os.File
	buf     *bufio.Writer
	b       binWriter
	cols    [colCount][]byte
	st      colState
	inBlock int
	n       int
}

// NewSpoolWriter spools to scratch, an empty file open for reading and
// writing (typically created and removed at once: it is only read back by
// Finish); it is not closed.
func NewSpoolWriter(scratch *os.File) *SpoolWriter {
	sw := &SpoolWriter{spool: scratch, buf: bufio.NewWriterSize(scratch, 1<<20)}
	sw.b = binWriter{w: sw.buf, b: make([]byte, 0, 64)}
	for i := range sw.cols {
		sw.cols[i] = make([]byte, 0, 4*colBlock)
	}
	return sw
}

// Write appends messages (in the order the trace is to hold them).
func (sw *SpoolWriter) Write(msgs []Message) error {
	for len(msgs) > 0 && sw.b.err == nil {
		k := min(len(msgs), colBlock-sw.inBlock)
		encodeBlock(&sw.cols, msgs[:k], &sw.st)
		sw.inBlock += k
		sw.n += k
		msgs = msgs[k:]
		if sw.inBlock == colBlock {
			sw.flushBlock()
		}
	}
	return sw.b.err
}

// Len is the number of messages written so far.
func (sw *SpoolWriter) Len() int { return sw.n }

func (sw *SpoolWriter) flushBlock() {
	if sw.inBlock == 0 {
		return
	}
	sw.cols[colExtra] = appendUv(sw.cols[colExtra], 0)
	sw.b.block(&sw.cols, sw.inBlock)
	for i := range sw.cols {
		sw.cols[i] = sw.cols[i][:0]
	}
	sw.inBlock = 0
}

// Finish writes the whole binary trace to w: the tables of t (final now;
// its Messages and Extra are not written) and the messages written.
func (sw *SpoolWriter) Finish(w io.Writer, t *Trace) error {
	return sw.FinishNamed(w, t, nil)
}

// EndpointNames names a trace's endpoints for a writer without holding
// them as strings (FinishNamed): a producer of millions of endpoints that
// keeps them as integers makes each name only as it is written.
type EndpointNames interface {
	// Len is the number of endpoints, "-" (id 0) included.
	Len() int
	// AppendName appends the name of endpoint id (0: "-").
	AppendName(b []byte, id EndpointID) []byte
}

// FinishNamed is Finish with the endpoints' names taken from names (t's
// Endpoints are not read) unless it is nil: the file is the one Finish
// writes for a t whose Endpoints hold the same names.
func (sw *SpoolWriter) FinishNamed(w io.Writer, t *Trace, names EndpointNames) error {
	sw.flushBlock()
	if sw.b.flush(); sw.b.err != nil {
		return sw.b.err
	}
	if err := sw.buf.Flush(); err != nil {
		return err
	}
	if _, err := sw.spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	zw, b, err := startBinary(w, t, sw.n, names)
	if err != nil {
		if zw != nil {
			zw.Close()
		}
		return err
	}
	// The blocks follow the tables in the same compressed stream, in
	// pieces of the size BinaryWriter hands the compressor.
	b.flush()
	if b.err != nil {
		zw.Close()
		return b.err
	}
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(writerOnly{zw}, readerOnly{sw.spool}, buf); err != nil {
		zw.Close()
		return err
	}
	return zw.Close()
}

// writerOnly and readerOnly hide ReadFrom and WriteTo, so that the copy
// goes through Write in large pieces.
type writerOnly struct{ io.Writer }
type readerOnly struct{ io.Reader }
