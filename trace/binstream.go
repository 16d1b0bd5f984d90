package trace

import (
	"fmt"
	"io"
	"strings"

	"wap5/internal/hugemem"

	"github.com/klauspost/compress/zstd"
)

// BinaryScanner reads a binary trace as a stream: its tables first (they
// come before the messages, complete: WriteBinary writes a whole trace's),
// then its messages a block at a time (version 3's columns; versions 1 and
// 2 a message at a time), so that it holds the tables and one block, never
// the whole message section. It hands over the same messages, in the same
// order, with the same warnings and errors as ReadBinary, but for the
// messages' extra text (not kept) and where an error shows: a message that
// fails CheckValid's checks ends the scan (Err) when it is reached, and the
// clock corrections are checked once the messages are read (ReadBinary
// checks everything before returning; its error texts are the same).
//
// Use:
//
//	s, err := NewBinaryScanner(r, file)
//	for s.Scan() { m := s.Message() ... }
//	if err := s.Err(); err != nil { ... }
type BinaryScanner struct {
	b        *binReader
	zr       *zstd.Decoder
	t        *Trace
	version  uint64
	n, done  int // messages said to follow; handed over or in blk
	st       colState
	lim      colLimits
	blk      Trace // the block being handed over (version 3)
	pos      int   // next message of blk
	all      []byte
	prevTime int64 // versions 1–2
	prevID   int64
	m        Message
	idx      int // the message's position in the trace
	err      error
	over     bool
}

// NewBinaryScanner reads the magic and the tables of the binary trace r;
// Trace returns them (with no messages).
func NewBinaryScanner(r io.Reader, file string) (*BinaryScanner, error) {
	return newBinaryScanner(r, file, false)
}

// NewBinaryScannerNoNames is NewBinaryScanner for a reader that needs no
// endpoint names: a large trace's table (millions of ephemeral ports) is
// most of what the scanner would hold. Trace's Endpoints hold only "-";
// the messages keep the file's endpoint ids, of which there are
// Endpoints(), and UnixEndpoint tells which name a unix socket. The
// checks, warnings and errors are NewBinaryScanner's.
func NewBinaryScannerNoNames(r io.Reader, file string) (*BinaryScanner, error) {
	return newBinaryScanner(r, file, true)
}

// Endpoints is the number of endpoints in the file's table.
func (s *BinaryScanner) Endpoints() int {
	if s.b.noNames {
		return s.b.eps
	}
	return len(s.t.Endpoints)
}

// UnixEndpoint says whether endpoint e's name is a unix socket's
// ("unix:…"), e < Endpoints().
func (s *BinaryScanner) UnixEndpoint(e EndpointID) bool {
	if s.b.noNames {
		return s.b.unix[e/64]&(1<<(e%64)) != 0
	}
	return strings.HasPrefix(s.t.Endpoints[e], "unix:")
}

func newBinaryScanner(r io.Reader, file string, noNames bool) (*BinaryScanner, error) {
	magic := make([]byte, len(BinaryMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != BinaryMagic {
		return nil, fmt.Errorf("%s: not a wap5 binary trace", file)
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<34))
	if err != nil {
		return nil, err
	}
	s := &BinaryScanner{b: &binReader{r: zr, file: file, noNames: noNames}, zr: zr, idx: -1}
	if err := s.tables(); err != nil {
		zr.Close()
		return nil, err
	}
	return s, nil
}

// tables is decode's reading of everything before the messages (the same
// steps, checks and errors), and the tables' check.
func (s *BinaryScanner) tables() error {
	b, file := s.b, s.b.file
	t, version, err := b.tables()
	if err != nil {
		return err
	}
	s.n = b.count("message", 1<<40)
	if err := t.checkTables(); err != nil {
		return fmt.Errorf("%s: %v", file, err)
	}
	s.t, s.version, s.lim = t, version, newColLimits(t)
	s.lim.eps = uint64(s.Endpoints())
	return nil
}

// Trace is the trace's tables (and warnings: a damaged message section
// adds one when the scan reaches it). Its Messages stay empty.
func (s *BinaryScanner) Trace() *Trace { return s.t }

// Scan moves to the next message; false at the end, after damage (a
// warning in Trace) or an error (Err).
func (s *BinaryScanner) Scan() bool {
	if s.over {
		return false
	}
	if s.version >= 3 {
		for s.pos >= len(s.blk.Messages) {
			if !s.block() {
				return s.end()
			}
		}
		s.m = s.blk.Messages[s.pos]
		s.pos++
	} else {
		if s.done >= s.n || s.b.err != nil {
			return s.end()
		}
		m, _, ok := s.b.message(&s.prevTime, &s.prevID)
		if !ok {
			return s.end()
		}
		if err := s.t.checkMessageEPs(s.done, &m, EndpointID(s.Endpoints())); err != nil {
			s.err = fmt.Errorf("%s: %v", s.b.file, err)
			return s.end()
		}
		s.m = m
		s.done++
	}
	s.idx++
	return true
}

// end finishes the scan: the damage warning (ReadBinary's), the clock's
// check.
func (s *BinaryScanner) end() bool {
	if s.over {
		return false
	}
	s.over = true
	if s.err != nil {
		return false
	}
	if s.b.err != nil {
		kept := s.idx + 1
		s.t.Warnf("%v (kept the %d messages before message %d)", s.b.err, kept, kept)
	}
	if err := s.t.checkClock(); err != nil {
		s.err = fmt.Errorf("%s: %v", s.b.file, err)
	}
	return false
}

// block reads and decodes the next block of columns (readColumns' loop,
// one block at a time); false at the end or on damage (b.err) or an
// invalid message (s.err).
func (s *BinaryScanner) block() bool {
	b, n := s.b, s.n
	if s.done >= n || b.err != nil {
		return false
	}
	k := b.count("block message", colBlock)
	if b.err != nil {
		return false
	}
	if k == 0 || k > n-s.done {
		b.fail("block of %d messages at message %d of %d", k, s.done, n)
		return false
	}
	var raw [colCount][]byte
	s.all = s.all[:0]
	var ends [colCount]int
	var copied [colCount]bool
	for i := range raw {
		l := b.count("column length", 64*colBlock+1<<26)
		if b.err != nil {
			return false
		}
		if !b.ensure(l) {
			b.fail("truncated column: %v", errUnexpectedEOF)
			return false
		}
		if b.eof {
			raw[i] = b.buf[b.pos : b.pos+l : b.pos+l]
		} else {
			if s.all == nil {
				s.all = hugemem.MakeSmall[byte](0, min(2<<20, 32*n+4096))
			}
			s.all = append(s.all, b.buf[b.pos:b.pos+l]...)
			ends[i], copied[i] = len(s.all), true
		}
		b.pos += l
	}
	start := 0
	for i := range raw {
		if copied[i] {
			raw[i] = s.all[start:ends[i]:ends[i]]
			start = ends[i]
		}
	}
	s.blk.Messages, s.blk.Extra, s.pos = s.blk.Messages[:0], nil, 0
	valid, err := decodeBlock(&s.blk, &raw, k, &s.st, &s.lim)
	if err != nil {
		b.fail("block at message %d: %v", s.done, err)
		return false
	}
	s.blk.Extra = nil // not kept
	if !valid {
		for i := range s.blk.Messages {
			if err := s.t.checkMessageEPs(s.done+i, &s.blk.Messages[i], EndpointID(s.Endpoints())); err != nil {
				s.err = fmt.Errorf("%s: %v", b.file, err)
				s.blk.Messages = s.blk.Messages[:0]
				return false
			}
		}
	}
	s.done += k
	return true
}

// Message is the current message.
func (s *BinaryScanner) Message() Message { return s.m }

// Index is the current message's position in the trace.
func (s *BinaryScanner) Index() int { return s.idx }

// Err is the error that ended the scan, if any (damage is a warning).
func (s *BinaryScanner) Err() error { return s.err }

// Close frees the decompressor.
func (s *BinaryScanner) Close() { s.zr.Close() }
