package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"runtime/debug"
	"slices"
	"unsafe"

	"wap5/internal/hugemem"

	"github.com/klauspost/compress/zstd"
)

// BinaryMagic opens a binary trace; a zstd stream of varint-encoded tables and
// delta-encoded messages follows (see WriteBinary).
const BinaryMagic = "WAP5TRC\x01"

// binaryVersion 2 added the actor tables and columns; version 3 writes the
// messages as columns (columns.go). Versions 1 and 2 (rows) are still read.
const binaryVersion = 3

// binaryLevel is the zstd level of binary traces: over columns (version 3)
// the fastest level compresses about as well as the default one over rows
// did, at a fraction of the CPU.
var binaryLevel = zstd.SpeedFastest

// Message flag bits in the binary form.
const (
	bfSendUnknown = 1 << iota
	bfRecvUnknown
	bfID
	bfCall
	bfTruth
	bfExtra
	bfKindShift = 6      // two bits
	bfActors    = 1 << 8 // version 2: SrcActor and DstActor follow
)

type binWriter struct {
	w   io.Writer
	b   []byte
	err error
}

func (b *binWriter) uv(v uint64) { b.b = binary.AppendUvarint(b.b, v) }
func (b *binWriter) sv(v int64)  { b.b = binary.AppendVarint(b.b, v) }
func (b *binWriter) str(s string) {
	b.uv(uint64(len(s)))
	b.b = append(b.b, s...)
}

// maybeFlush hands full chunks to the compressor.
func (b *binWriter) maybeFlush() {
	if len(b.b) >= 1<<20 {
		b.flush()
	}
}

func (b *binWriter) flush() {
	if b.err == nil && len(b.b) > 0 {
		_, b.err = b.w.Write(b.b)
	}
	b.b = b.b[:0]
}

// WriteBinary writes the trace in the compact binary form (zstd-compressed).
// Times are delta-encoded against the previous message, so a time-sorted
// trace compresses best.
func WriteBinary(w io.Writer, t *Trace) error {
	zw, b, err := startBinary(w, t, len(t.Messages), nil)
	if err != nil {
		return err
	}
	writeColumns(b, t)
	if b.flush(); b.err != nil {
		return b.err
	}
	return zw.Close()
}

// startBinary writes the magic, the tables of t and the message count n,
// and returns the compressor and the writer the messages go to. The
// endpoints' names come from names unless it is nil (then t.Endpoints).
func startBinary(w io.Writer, t *Trace, n int, names EndpointNames) (*zstd.Encoder, *binWriter, error) {
	if _, err := io.WriteString(w, BinaryMagic); err != nil {
		return nil, nil, err
	}
	// One encoder goroutine: CPU-seconds, not wall time, are what a trace
	// costs.
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(binaryLevel), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, nil, err
	}
	b := &binWriter{w: zw, b: make([]byte, 0, 1<<20+4096)}
	b.uv(binaryVersion)
	b.uv(uint64(len(t.Nodes)))
	for _, n := range t.Nodes {
		b.str(n.Name)
		b.uv(uint64(b2i(n.Untraced)))
	}
	if names != nil {
		n := names.Len()
		b.uv(uint64(n))
		var name []byte
		for id := range n {
			name = names.AppendName(name[:0], EndpointID(id))
			b.uv(uint64(len(name)))
			b.b = append(b.b, name...)
			b.maybeFlush()
		}
	} else {
		b.uv(uint64(len(t.Endpoints)))
		for _, e := range t.Endpoints {
			b.str(e)
			b.maybeFlush() // millions of endpoints: not all in one buffer
		}
	}
	b.uv(uint64(len(t.Labels)))
	for _, l := range t.Labels {
		b.str(l)
		b.maybeFlush()
	}
	b.uv(uint64(len(t.Clock)))
	for _, c := range t.Clock {
		b.uv(uint64(c.Node))
		b.sv(c.Offset)
		b.uv(math.Float64bits(c.DriftPPM))
		b.sv(c.At)
		b.sv(c.Error)
		b.uv(uint64(b2i(c.Applied)))
	}
	b.uv(uint64(len(t.Warnings)))
	for _, s := range t.Warnings {
		b.str(s)
	}
	b.uv(uint64(len(t.Actors)))
	for _, tab := range t.Actors {
		b.uv(uint64(len(tab)))
		for _, s := range tab {
			b.str(s)
		}
	}
	b.uv(uint64(n))
	return zw, b, b.err
}

// binReader decodes varints from a buffer of decompressed bytes, refilled
// from the decompressor in large reads (much cheaper than a byte at a time).
type binReader struct {
	r    io.Reader
	buf  []byte
	pos  int
	eof  bool
	file string
	err  error
	size int64 // of the compressed input when known (0: not)
	// noNames: tables keeps none of the endpoints' names but "-" (the
	// table's first), only their number (eps) and which name a unix
	// socket (unix, a bit per endpoint): BinaryScanner's SkipEndpointNames.
	noNames bool
	eps     int
	unix    []uint64
	// kinds: noNames, and decode then names every endpoint by its kind
	// alone in t.Endpoints (kindNames; ReadFileKindNames), whose memory
	// freeKinds gives back.
	kinds     bool
	freeKinds func()
	// given: where buf is a whole input (eof from the start, Map'd), its
	// bytes before given were given back to the system as the message
	// blocks were decoded (readColumns): nothing reads them again.
	given int
	// whole: buf is a whole decompressed input, not a window.
	whole bool
}

func (b *binReader) fail(format string, a ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%s: binary trace: "+format, append([]any{b.file}, a...)...)
	}
}

// ensure tries to make n bytes available; it reports whether they are.
func (b *binReader) ensure(n int) bool {
	if len(b.buf)-b.pos >= n {
		return true
	}
	if b.eof {
		return false
	}
	rest := copy(b.buf, b.buf[b.pos:])
	b.buf, b.pos = b.buf[:rest], 0
	if need := max(n, 1<<20); cap(b.buf) < need {
		// 1 MB: 256 page faults in a fresh process. The capacity must stay
		// need: how far ahead ensure reads decides where a damaged stream
		// stops.
		nb := hugemem.MakeSmall[byte](rest, need)[:rest:need]
		copy(nb, b.buf)
		b.buf = nb
	}
	for len(b.buf) < n || len(b.buf) < cap(b.buf)/2 {
		m, err := b.r.Read(b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+m]
		if err != nil {
			b.eof = true
			if err != io.EOF {
				b.fail("%v", err)
			}
			break
		}
	}
	return len(b.buf)-b.pos >= n
}

func (b *binReader) uv() uint64 {
	if b.err != nil {
		return 0
	}
	if !b.ensure(binary.MaxVarintLen64) && b.pos >= len(b.buf) {
		b.fail("truncated or corrupt: %v", io.ErrUnexpectedEOF)
		return 0
	}
	v, n := binary.Uvarint(b.buf[b.pos:])
	if n <= 0 {
		b.fail("truncated or corrupt varint at byte %d of the message section", b.pos)
		return 0
	}
	b.pos += n
	return v
}

func (b *binReader) sv() int64 {
	u := b.uv()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (b *binReader) count(what string, max uint64) int {
	n := b.uv()
	if n > max {
		b.fail("implausible %s count %d", what, n)
		return 0
	}
	return int(n)
}

func (b *binReader) str() string {
	n := b.count("string length", 1<<24)
	if b.err != nil {
		return ""
	}
	if !b.ensure(n) {
		b.fail("truncated string: %v", io.ErrUnexpectedEOF)
		return ""
	}
	s := string(b.buf[b.pos : b.pos+n])
	b.pos += n
	return s
}

// endpointKinds reads a table of n endpoint names keeping only the first
// (the table returned), their number (b.eps) and which are unix sockets
// (b.unix), with str's errors.
func (b *binReader) endpointKinds(n int) []string {
	b.eps, b.unix = n, make([]uint64, (n+63)/64)
	var first []string
	for i := 0; i < n && b.err == nil; i++ {
		l := b.count("string length", 1<<24)
		if b.err != nil {
			break
		}
		if !b.ensure(l) {
			b.fail("truncated string: %v", io.ErrUnexpectedEOF)
			break
		}
		name := b.buf[b.pos : b.pos+l]
		if i == 0 {
			first = []string{string(name)}
		}
		if bytes.HasPrefix(name, []byte("unix:")) {
			b.unix[i/64] |= 1 << (i % 64)
		}
		b.pos += l
	}
	return first
}

// kindNames is an endpoint table of n entries named by their kind alone:
// "-" first (tables checked that the file's first name is), "unix:" where
// unix has the endpoint's bit set (endpointKinds), "" for the others — what
// the linker reads of an endpoint's name (its identity is its id). A large
// table is outside the Go heap, in memory never touched (hugemem.MapZero):
// only the pages holding "-" and the unix sockets' entries cost memory, and
// the collector does not scan it (its strings are constants, outside the
// heap); free unmaps it. The CoDeeN-sized trace has 2.35M endpoints: 22 MB
// of names and 38 MB of string headers in the heap otherwise, which the
// collector scans at every cycle.
func kindNames(n int, unix []uint64) (names []string, free func()) {
	size := n * int(unsafe.Sizeof(""))
	if size < 1<<20 {
		names, free = make([]string, n), func() {}
	} else {
		b, unmap := hugemem.MapZero(size)
		names, free = unsafe.Slice((*string)(unsafe.Pointer(unsafe.SliceData(b))), n), unmap
	}
	if n > 0 {
		names[0] = "-"
	}
	for w, word := range unix {
		for ; word != 0; word &= word - 1 {
			if i := w*64 + bits.TrailingZeros64(word); i < n {
				names[i] = "unix:"
			}
		}
	}
	return names, free
}

// strs reads n strings (a table): when they are all in b.buf already, into
// one slice of substrings of one string (thousands of endpoints: one
// allocation instead of one each and the slice's regrowth), else one at a
// time with str, whose errors are the ones to give.
func (b *binReader) strs(n int) []string {
	if b.eof && b.err == nil && n > 0 {
		p, ok := b.pos, true
		for i := 0; i < n && ok; i++ {
			var l uint64
			if l, p = uvSlow(b.buf, p); p > len(b.buf) || l > 1<<24 || l > uint64(len(b.buf)-p) {
				ok = false
				break
			}
			p += int(l)
		}
		if ok {
			all := string(b.buf[b.pos:p])
			out := make([]string, n)
			q := 0
			for i := range out {
				l, next := uvSlow(b.buf[b.pos:p], q)
				out[i] = all[next : next+int(l)]
				q = next + int(l)
			}
			b.pos = p
			return out
		}
	}
	var out []string
	for ; n > 0 && b.err == nil; n-- {
		out = append(out, b.str())
	}
	return out
}

// ReadBinary reads a binary trace (starting with BinaryMagic). A truncated or
// corrupt message section keeps the messages read so far and records a
// warning naming the message index; corrupt tables are an error.
func ReadBinary(r io.Reader, file string) (*Trace, error) {
	t, _, err := readBinary(r, file)
	return t, err
}

// readBinary is ReadBinary; decoded says the decoder proved every message
// valid on its own (no CheckValid pass over the messages was needed).
func readBinary(r io.Reader, file string) (t *Trace, decoded bool, err error) {
	return readBinarySized(r, file, 0, nil)
}

// wholeMax is the largest input (bytes) readBinarySized decompresses at once.
const wholeMax = 256 << 20

// readBinarySized is readBinary of an input of size bytes (0: unknown). An
// input of known size up to wholeMax is read whole and decompressed in one
// call into one buffer, which the decoder then reads in place: no
// decompressor window, no copies from it, no copies of the columns (a fresh
// process pays a page fault per 4 KB of the window). Should that fail
// (damage, or a read error), the stream is decompressed as it comes, as
// for other inputs, so that what is kept and the warnings are the same.
//
// With env set, the messages of a version 3 trace are decoded into env as
// envelopes (t.Messages and t.Extra stay empty), and anything but a trace
// whose every message was decoded and proven valid on the way is
// errNoEnvelopes: the caller reads the input again the usual way.
func readBinarySized(r io.Reader, file string, size int64, env *envelopes) (t *Trace, decoded bool, err error) {
	t, decoded, _, err = readBinaryKinds(r, file, size, env, false)
	return t, decoded, err
}

// readBinaryKinds is readBinarySized, with the endpoints named by their
// kind alone where kinds is set (and env is nil: see kindNames); free
// gives back the memory of that table (else it does nothing).
func readBinaryKinds(r io.Reader, file string, size int64, env *envelopes, kinds bool) (t *Trace, decoded bool, free func(), err error) {
	magic := make([]byte, len(BinaryMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != BinaryMagic {
		return nil, false, func() {}, fmt.Errorf("%s: not a wap5 binary trace", file)
	}
	var b *binReader
	if size > 0 && size <= wholeMax {
		var whole []byte
		var release func()
		whole, r, release = decompressWhole(r, int(size))
		defer release() // nothing read keeps a reference into whole
		if whole != nil {
			b = &binReader{buf: whole, eof: true, file: file, whole: true}
		}
	}
	if b == nil {
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<34))
		if err != nil {
			return nil, false, func() {}, err
		}
		defer zr.Close()
		b = &binReader{r: zr, file: file, size: size}
	}
	b.kinds = kinds && env == nil
	t, decoded, err = b.decode(env)
	free = func() {}
	if b.freeKinds != nil {
		free = b.freeKinds
	}
	return t, decoded, free, err
}

// decode is readBinarySized after the magic, from b.
func (b *binReader) decode(env *envelopes) (t *Trace, decoded bool, err error) {
	file := b.file
	if env != nil && env.noNames || b.kinds {
		b.noNames = true
	}
	t, version, err := b.tables()
	if err != nil {
		return nil, false, err
	}
	if b.kinds {
		t.Endpoints, b.freeKinds = kindNames(b.eps, b.unix)
	}
	n := b.count("message", 1<<40)
	if env != nil {
		if version < 3 || b.err != nil {
			return nil, false, errNoEnvelopes
		}
		// Outside the Go heap where freed mappings are kept for what
		// follows (hugemem.Keep); else in the heap, as messages are: the
		// collector then paces itself on a heap that holds them, as it
		// would with the messages (a few collections instead of one every
		// few MB of a small heap at a low GOGC, wap5 link).
		if hugemem.Keeping() {
			env.make(b.sizeFor(n))
		} else {
			env.list, env.free = hugemem.Make[Envelope](0, b.sizeFor(n)), nil
		}
		if !b.readColumns(t, n, &env.list) || b.err != nil {
			env.release()
			return nil, false, errNoEnvelopes
		}
		if err := t.checkTablesAndClock(); err != nil {
			env.release()
			return nil, false, fmt.Errorf("%s: %v", file, err)
		}
		return t, true, nil
	}
	t.Messages = makeMessages(b.sizeFor(n))
	// Version 3's decoder checks the messages as it goes (valid: all
	// passed); otherwise CheckValid does.
	valid := false
	if version >= 3 {
		valid = b.readColumns(t, n, nil)
	}
	var prevTime, prevID int64
	for i := 0; i < n && b.err == nil && version < 3; i++ {
		m, extra, ok := b.message(&prevTime, &prevID)
		if !ok {
			break
		}
		if extra != "" {
			if t.Extra == nil {
				t.Extra = map[int32]string{}
			}
			t.Extra[int32(len(t.Messages))] = extra
		}
		if len(t.Messages) == cap(t.Messages) {
			t.Messages = grownMessages(t.Messages, 1)
		}
		t.Messages = append(t.Messages, m)
	}
	if b.err != nil {
		t.Warnf("%v (kept the %d messages before message %d)", b.err, len(t.Messages), len(t.Messages))
	}
	check := t.CheckValid
	if valid {
		check = t.checkTablesAndClock
	}
	if err := check(); err != nil {
		return nil, false, fmt.Errorf("%s: %v", file, err)
	}
	if valid {
		t.markChecked()
	}
	return t, valid, nil
}

// makeMessages is room for n messages: outside the Go heap where freed
// mappings are kept for what follows (hugemem.Keeping: wap5 link, whose
// linker gives them back with hugemem.Release when it drops them, and
// takes its own arrays from their memory), else in the heap.
func makeMessages(n int) []Message {
	if hugemem.Keeping() && n > 0 {
		b, _ := hugemem.Map(n * int(unsafe.Sizeof(Message{})))
		return unsafe.Slice((*Message)(unsafe.Pointer(unsafe.SliceData(b))), n)[:0]
	}
	return hugemem.Make[Message](0, n)
}

// grownMessages is append's growth of msgs by room for more: where msgs
// was made outside the heap (makeMessages), that memory is given back once
// copied.
func grownMessages(msgs []Message, more int) []Message {
	g := slices.Grow(msgs, more)
	if unsafe.SliceData(g) != unsafe.SliceData(msgs) {
		hugemem.Release(msgs)
	}
	return g
}

// sizeFor is the capacity to make for n messages said to follow: at most
// 1<<24 (the slice grows beyond), and when the rest of the input is in
// b.buf no more than its bytes (each message takes at least its flags byte
// there), else when the compressed input's size is known no more than 4
// per byte of it, so that a damaged count does not make a large slice (a
// damaged file of known size is read by the stream).
func (b *binReader) sizeFor(n int) int {
	n = min(n, 1<<24)
	if b.eof {
		n = min(n, len(b.buf)-b.pos)
	} else if b.size > 0 {
		n = int(min(int64(n), 4*b.size))
	}
	return n
}

// maxFixedMessage bounds the encoded size of a message without its extra text.
const maxFixedMessage = 2 + 3*binary.MaxVarintLen64 + 4*5 + binary.MaxVarintLen64 + 2*5 + 2*3

// message decodes one message. When the buffer holds a whole message it
// decodes straight from the slice (the common case, and the hot loop of
// reading a trace); near the end of the data it goes through the checked
// reader.
func (b *binReader) message(prevTime, prevID *int64) (Message, string, bool) {
	m := Message{Send: Unknown, Recv: Unknown, ID: NoRef, Call: NoRef, Truth: NoRef}
	var fl uint64
	if b.ensure(maxFixedMessage) {
		buf, p, bad := b.buf[b.pos:], 0, false
		uv := func() uint64 {
			v, k := binary.Uvarint(buf[p:])
			if k <= 0 {
				bad = true
				return 0
			}
			p += k
			return v
		}
		sv := func() int64 {
			u := uv()
			return int64(u>>1) ^ -int64(u&1)
		}
		fl = uv()
		if fl&bfSendUnknown == 0 {
			m.Send = *prevTime + sv()
			*prevTime = m.Send
			if fl&bfRecvUnknown == 0 {
				m.Recv = m.Send + sv()
			}
		} else {
			m.Recv = *prevTime + sv()
			*prevTime = m.Recv
		}
		m.Src = NodeID(uv())
		m.Dst = NodeID(uv())
		m.SrcEP = EndpointID(uv())
		m.DstEP = EndpointID(uv())
		m.Bytes = int64(uv())
		if fl&bfID != 0 {
			m.ID = *prevID + sv()
			*prevID = m.ID
		}
		if fl&bfCall != 0 {
			m.Call = int32(sv())
		}
		if fl&bfTruth != 0 {
			m.Truth = int32(sv())
		}
		if fl&bfActors != 0 {
			m.SrcActor = ActorID(uv())
			m.DstActor = ActorID(uv())
		}
		if bad {
			b.fail("corrupt message varint near byte %d of the message section", b.pos)
			return m, "", false
		}
		b.pos += p
	} else {
		fl = b.uv()
		if fl&bfSendUnknown == 0 {
			m.Send = *prevTime + b.sv()
			*prevTime = m.Send
			if fl&bfRecvUnknown == 0 {
				m.Recv = m.Send + b.sv()
			}
		} else {
			m.Recv = *prevTime + b.sv()
			*prevTime = m.Recv
		}
		m.Src = NodeID(b.uv())
		m.Dst = NodeID(b.uv())
		m.SrcEP = EndpointID(b.uv())
		m.DstEP = EndpointID(b.uv())
		m.Bytes = int64(b.uv())
		if fl&bfID != 0 {
			m.ID = *prevID + b.sv()
			*prevID = m.ID
		}
		if fl&bfCall != 0 {
			m.Call = int32(b.sv())
		}
		if fl&bfTruth != 0 {
			m.Truth = int32(b.sv())
		}
		if fl&bfActors != 0 {
			m.SrcActor = ActorID(b.uv())
			m.DstActor = ActorID(b.uv())
		}
	}
	m.Kind = Kind(fl >> bfKindShift & 3)
	var extra string
	if fl&bfExtra != 0 {
		extra = b.str()
	}
	return m, extra, b.err == nil
}

// decompressWhole reads r to its end (about size bytes) and decompresses
// it in one call. It returns the decompressed bytes, or nil and a reader
// of the same input (what was read, then r) when that did not work, and
// the function that frees the memory of both (outside the Go heap: see
// hugemem.Map).
func decompressWhole(r io.Reader, size int) ([]byte, io.Reader, func()) {
	if f, ok := r.(*os.File); ok {
		if out, free, ok := decompressFile(f, size); ok {
			return out, nil, free
		}
	}
	in, freeIn := hugemem.Map(size + bytes.MinRead)
	in = in[:0]
	for {
		if len(in) == cap(in) {
			in = append(in, 0)[:len(in)] // larger than it said: on the Go heap
		}
		n, err := r.Read(in[len(in):cap(in)])
		in = in[:len(in)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, io.MultiReader(bytes.NewReader(in), errReader{err}), freeIn
		}
	}
	// The output's size: the frame's own word if it has one, else a
	// guess; beyond it the decoder grows the buffer, up to limit (a
	// damaged header must not make it allocate much: past limit, or
	// claiming more, the stream decides).
	limit := 16*len(in) + 1<<20
	est := min(4*len(in)+4096, limit)
	var h zstd.Header
	if h.Decode(in) == nil && h.HasFCS {
		if h.FrameContentSize >= uint64(limit) {
			return nil, bytes.NewReader(in), freeIn
		}
		est = int(h.FrameContentSize) + 64
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		return nil, bytes.NewReader(in), freeIn
	}
	defer dec.Close()
	out, freeOut := hugemem.Map(est)
	out, err = dec.DecodeAll(in, out[:0])
	if err != nil {
		return nil, bytes.NewReader(in), func() { freeIn(); freeOut() }
	}
	// The compressed input is read no more: given back before the
	// messages are decoded (a third of the CoDeeN-sized trace's peak
	// while it is read).
	freeIn()
	return out, nil, freeOut
}

// decompressFile is decompressWhole of the rest of f, a file of size
// bytes, through a mapping of the file (hugemem.MapFile): no copy of the
// input into fresh memory. ok is false, with f not read and nothing kept,
// where that cannot be done or does not decode (damage, a file that does
// not have size bytes, or shrinks while it is read: the fault is caught);
// decompressWhole then reads f.
func decompressFile(f *os.File, size int) (out []byte, free func(), ok bool) {
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || off > int64(size) {
		return nil, nil, false
	}
	whole, unmap, ok := hugemem.MapFile(f, size)
	if !ok {
		return nil, nil, false
	}
	defer unmap()
	if st, err := f.Stat(); err != nil || st.Size() != int64(size) {
		return nil, nil, false
	}
	in := whole[off:]
	// The limits and the output's size as decompressWhole sets them.
	limit := 16*len(in) + 1<<20
	est := min(4*len(in)+4096, limit)
	var h zstd.Header
	if h.Decode(in) == nil && h.HasFCS {
		if h.FrameContentSize >= uint64(limit) {
			return nil, nil, false
		}
		est = int(h.FrameContentSize) + 64
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		return nil, nil, false
	}
	defer dec.Close()
	buf, freeOut := hugemem.Map(est)
	defer func() {
		if recover() != nil { // the file shrank under the mapping
			freeOut()
			out, free, ok = nil, nil, false
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	out, err = dec.DecodeAll(in, buf[:0])
	if err != nil {
		freeOut()
		return nil, nil, false
	}
	return out, freeOut, true
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// tables reads everything before the messages (the version, the node,
// endpoint, label, clock, warning and actor tables) with their checks and
// errors: decode's and BinaryScanner's first steps.
func (b *binReader) tables() (*Trace, uint64, error) {
	file := b.file
	version := b.uv()
	if b.err == nil && (version < 1 || version > binaryVersion) {
		return nil, 0, fmt.Errorf("%s: binary trace version %d, want 1 to %d", file, version, binaryVersion)
	}
	t := &Trace{}
	const maxTable = 1 << 28
	for n := b.count("node", maxTable); n > 0 && b.err == nil; n-- {
		name := b.str()
		t.Nodes = append(t.Nodes, Node{Name: name, Untraced: b.uv() == 1})
	}
	if n := b.count("endpoint", maxTable); b.err == nil {
		if b.noNames {
			t.Endpoints = b.endpointKinds(n)
		} else {
			t.Endpoints = b.strs(n)
		}
	}
	if n := b.count("label", maxTable); b.err == nil {
		t.Labels = b.strs(n)
	}
	for n := b.count("clock", maxTable); n > 0 && b.err == nil; n-- {
		var c Correction
		c.Node = NodeID(b.uv())
		c.Offset = b.sv()
		c.DriftPPM = math.Float64frombits(b.uv())
		c.At = b.sv()
		c.Error = b.sv()
		c.Applied = b.uv() == 1
		t.Clock = append(t.Clock, c)
	}
	for n := b.count("warning", maxTable); n > 0 && b.err == nil; n-- {
		t.Warnings = append(t.Warnings, b.str())
	}
	if version >= 2 {
		nodes := b.count("actor table", uint64(len(t.Nodes)))
		if nodes > 0 && b.err == nil {
			t.Actors = make([][]string, nodes)
		}
		for i := 0; i < nodes && b.err == nil; i++ {
			for n := b.count("actor", MaxActors); n > 0 && b.err == nil; n-- {
				t.Actors[i] = append(t.Actors[i], b.str())
			}
		}
	}
	if b.err != nil {
		return nil, 0, b.err
	}
	if len(t.Endpoints) == 0 || t.Endpoints[0] != "-" {
		return nil, 0, fmt.Errorf("%s: binary trace: endpoint table does not start with -", file)
	}
	return t, version, nil
}
