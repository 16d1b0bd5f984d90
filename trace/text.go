package trace

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"wap5/internal/hugemem"
)

// TextHeader is the first line of the text format.
const TextHeader = "# wap5 message trace v1"

// SyntaxError is a non-fatal error in one line of a text trace.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ParseTime parses a timestamp in decimal seconds ("1700000000.000123456",
// "-3.5") exactly into nanoseconds; "-" is Unknown.
func ParseTime(s string) (int64, error) { return parseTime([]byte(s)) }

func parseTime(s []byte) (int64, error) {
	if len(s) == 1 && s[0] == '-' {
		return Unknown, nil
	}
	orig := s
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	var sec, ns int64
	i, digits := 0, 0
	for ; i < len(s) && s[i] != '.'; i++ {
		c := s[i]
		if c < '0' || c > '9' || digits >= 10 {
			return 0, fmt.Errorf("bad timestamp %q", orig)
		}
		sec = sec*10 + int64(c-'0')
		digits++
	}
	frac := 0
	if i < len(s) {
		for i++; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("bad timestamp %q", orig)
			}
			if frac < 9 {
				ns = ns*10 + int64(c-'0')
			}
			frac++
		}
	}
	if digits == 0 && frac == 0 || sec > 9_000_000_000 {
		return 0, fmt.Errorf("bad timestamp %q", orig)
	}
	for ; frac < 9; frac++ {
		ns *= 10
	}
	v := sec*1e9 + ns
	if neg {
		v = -v
	}
	return v, nil
}

// FormatTime formats nanoseconds as decimal seconds with nine places; Unknown
// as "-".
func FormatTime(ns int64) string {
	if ns == Unknown {
		return "-"
	}
	var b [32]byte
	return string(appendTime(b[:0], ns))
}

func appendTime(b []byte, ns int64) []byte {
	if ns == Unknown {
		return append(b, '-')
	}
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	b = append(b, '.')
	frac := ns % 1e9
	var d [9]byte
	for i := 8; i >= 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, d[:]...)
}

// TextScanner reads the contract's text format line by line into a trace,
// in the manner of bufio.Scanner. Bad lines become SyntaxErrors (kept in
// Errors and as trace warnings); only I/O errors stop the scan.
type TextScanner struct {
	t      *Trace
	file   string
	sc     *bufio.Scanner
	line   int
	msg    Message
	extra  []byte
	f      [][]byte
	names  *nameCache // ReadText's; nil for a streaming reader
	err    error
	Errors []*SyntaxError
}

// NewTextScanner reads from r; file names the input in errors. Messages are
// interned into t's tables (but not appended to it).
func NewTextScanner(r io.Reader, file string, t *Trace) *TextScanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	return &TextScanner{t: t, file: file, sc: sc}
}

func (s *TextScanner) syntax(format string, a ...any) {
	e := &SyntaxError{File: s.file, Line: s.line, Msg: fmt.Sprintf(format, a...)}
	s.Errors = append(s.Errors, e)
	s.t.Warnings = append(s.t.Warnings, e.Error())
}

// Scan advances to the next message.
func (s *TextScanner) Scan() bool {
	for s.sc.Scan() {
		s.line++
		line := bytes.TrimSpace(s.sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			if bytes.HasPrefix(line, []byte(clockDirective)) {
				s.parseClock(string(line))
			}
			continue
		}
		if s.parse(line) {
			return true
		}
	}
	if err := s.sc.Err(); err != nil {
		s.err = fmt.Errorf("%s:%d: %w", s.file, s.line+1, err)
	}
	return false
}

// Message returns the last message scanned.
func (s *TextScanner) Message() Message { return s.msg }

// Extra returns the unknown key=value text of the last message ("" if none).
func (s *TextScanner) Extra() string { return string(s.extra) }

// Line returns the line number of the last message scanned.
func (s *TextScanner) Line() int { return s.line }

// Err returns the I/O error that stopped the scan, if any.
func (s *TextScanner) Err() error { return s.err }

// fields splits line at runs of spaces and tabs into s.f, reusing it.
func (s *TextScanner) fields(line []byte) [][]byte {
	f := s.f[:0]
	// Eight bytes at a time: a bit per space or tab, fields between them.
	start := 0
	i := 0
	for ; i+8 <= len(line); i += 8 {
		w := binary.LittleEndian.Uint64(line[i:])
		m := sepMask(w)
		for m != 0 {
			j := i + bits.TrailingZeros64(m)>>3
			if j > start {
				f = append(f, line[start:j])
			}
			start = j + 1
			m &= m - 1
		}
	}
	for ; i < len(line); i++ {
		if c := line[i]; c == ' ' || c == '\t' {
			if i > start {
				f = append(f, line[start:i])
			}
			start = i + 1
		}
	}
	if start < len(line) {
		f = append(f, line[start:])
	}
	s.f = f
	return f
}

// sepMask has the high bit of every byte of w that is a space or a tab
// (exact: no false positives from borrows, unlike the classic haszero).
func sepMask(w uint64) uint64 {
	const lo7 = 0x7F7F7F7F7F7F7F7F
	zero := func(x uint64) uint64 { // high bit set where the byte of x is 0
		return ^(((x & lo7) + lo7) | x | lo7)
	}
	return zero(w^0x2020202020202020) | zero(w^0x0909090909090909)
}

func (s *TextScanner) parse(line []byte) bool {
	f := s.fields(line)
	if len(f) < 7 {
		s.syntax("want at least 7 fields (send_ts src_node src_ep recv_ts dst_node dst_ep bytes), got %d", len(f))
		return false
	}
	var m Message
	var err error
	if m.Send, err = parseTime(f[0]); err != nil {
		s.syntax("send_ts: %v", err)
		return false
	}
	if m.Recv, err = parseTime(f[3]); err != nil {
		s.syntax("recv_ts: %v", err)
		return false
	}
	if m.Send == Unknown && m.Recv == Unknown {
		s.syntax("both timestamps are -")
		return false
	}
	if isDash(f[1]) || isDash(f[4]) {
		s.syntax("node names must not be -")
		return false
	}
	n, ok := parseCount(f[6])
	if !ok {
		s.syntax("bytes: bad size %q", f[6])
		return false
	}
	m.Bytes = n
	m.Src, m.Dst = s.node(f[1]), s.node(f[4])
	m.SrcEP, m.DstEP = s.endpoint(f[2]), s.endpoint(f[5])
	m.ID, m.Call, m.Truth = LineRef(s.line), NoRef, NoRef
	s.extra = s.extra[:0]
	for _, kv := range f[7:] {
		eq := bytes.IndexByte(kv, '=')
		if eq < 0 {
			s.syntax("%q is not key=value", kv)
			return false
		}
		k, v := kv[:eq], kv[eq+1:]
		switch string(k) {
		case "id":
			m.ID = s.t.refBytes(v)
		case "call":
			m.Call = s.t.ref32Bytes(v)
		case "truth":
			m.Truth = s.t.ref32Bytes(v)
		case "sa":
			m.SrcActor = s.actor(m.Src, v)
		case "da":
			m.DstActor = s.actor(m.Dst, v)
		case "kind":
			switch string(v) {
			case "call":
				m.Kind = KindCall
			case "return":
				m.Kind = KindReturn
			default:
				s.syntax("kind=%s: want call or return", v)
				return false
			}
		default:
			if len(s.extra) > 0 {
				s.extra = append(s.extra, ' ')
			}
			s.extra = append(s.extra, kv...)
		}
	}
	s.msg = m
	return true
}

func isDash(b []byte) bool { return len(b) == 1 && b[0] == '-' }

// parseCount parses a non-negative decimal integer.
func parseCount(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

const clockDirective = "# wap5 clock "

// parseClock reads "# wap5 clock NODE offset_s=F drift_ppm=F at=T error_s=F applied=0|1".
func (s *TextScanner) parseClock(line string) {
	f := strings.Fields(strings.TrimPrefix(line, clockDirective))
	if len(f) < 1 {
		s.syntax("clock directive without a node")
		return
	}
	c := Correction{Node: s.t.Node(f[0])}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "offset_s":
			c.Offset, err = ParseTime(v)
		case "at":
			c.At, err = ParseTime(v)
		case "error_s":
			c.Error, err = ParseTime(v)
		case "drift_ppm":
			c.DriftPPM, err = strconv.ParseFloat(v, 64)
		case "applied":
			c.Applied = v == "1"
		}
		if err != nil {
			s.syntax("clock directive: %s: %v", k, err)
			return
		}
	}
	s.t.Clock = append(s.t.Clock, c)
}

// ReadText reads a whole text trace. Syntax errors become warnings; the
// returned error is an I/O error.
func ReadText(r io.Reader, file string) (*Trace, error) { return readText(r, file, 0) }

// textMessages estimates the number of messages of a text trace of size
// bytes from its first bytes (0 when unknown).
func textMessages(head []byte, size int64) int {
	lines := bytes.Count(head, []byte{'\n'})
	if size <= 0 || lines < 4 || size > 1<<40 {
		return 0
	}
	return int(size*int64(lines)/int64(len(head))*21/20) + 64 // 5 % to spare
}

// readText is ReadText with room for about n messages made at once.
func readText(r io.Reader, file string, n int) (*Trace, error) {
	t := New()
	t.Messages = makeMessages(n)
	s := NewTextScanner(r, file, t)
	s.names = new(nameCache)
	for s.Scan() {
		if x := s.Extra(); x != "" {
			if t.Extra == nil {
				t.Extra = map[int32]string{}
			}
			t.Extra[int32(len(t.Messages))] = x
		}
		if len(t.Messages) == cap(t.Messages) {
			// Doubling: append grows large slices by 1.25, copying
			// them four times over in all.
			old := t.Messages
			t.Messages = slices.Grow(t.Messages, max(len(t.Messages), 1024))
			hugemem.Advise(t.Messages[len(t.Messages):cap(t.Messages)])
			hugemem.Release(old) // (where makeMessages made it outside the heap)
		}
		t.Messages = append(t.Messages, s.msg)
	}
	// The endpoints were indexed by the reader's own table (epTable), not
	// the trace's map: a lookup by name builds that again from
	// t.Endpoints (ensureEndpointIndex), as for a binary trace. A large
	// trace's map (a string key per ephemeral port: millions) would
	// otherwise stay in the heap for every collection to scan.
	t.epIdx, t.epIndexed = nil, 0
	s.names.eps.free()
	return t, s.Err()
}

// WriteText writes the trace in the contract's text format.
func WriteText(w io.Writer, t *Trace) error {
	bw := bufio.NewWriterSize(w, 256*1024)
	writeTextHeader(bw, t)
	var b []byte
	for i := range t.Messages {
		b = AppendTextLine(b[:0], t, i)
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteTextHeader writes what precedes the messages in the text format:
// the header line and t's clock corrections (for a writer that streams the
// messages after it with AppendMessageText).
func WriteTextHeader(w io.Writer, t *Trace) error {
	bw := bufio.NewWriter(w)
	writeTextHeader(bw, t)
	return bw.Flush()
}

func writeTextHeader(bw *bufio.Writer, t *Trace) {
	bw.WriteString(TextHeader + "\n")
	for _, c := range t.Clock {
		fmt.Fprintf(bw, "%s%s offset_s=%s drift_ppm=%g at=%s error_s=%s applied=%d\n", clockDirective,
			t.NodeName(c.Node), FormatTime(c.Offset), c.DriftPPM, FormatTime(c.At), FormatTime(c.Error), b2i(c.Applied))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// AppendTextLine appends message i of t in text form, without a newline.
func AppendTextLine(b []byte, t *Trace, i int) []byte {
	b = AppendMessageText(b, t, &t.Messages[i])
	if x, ok := t.Extra[int32(i)]; ok && x != "" {
		b = append(b, ' ')
		b = append(b, x...)
	}
	return b
}

// AppendMessageText appends m in text form, named by t's tables, without
// its extra text and without a newline (a message not held in t, e.g.
// one streamed to a writer).
func AppendMessageText(b []byte, t *Trace, m *Message) []byte {
	b = appendTime(b, m.Send)
	b = append(b, ' ')
	b = append(b, t.NodeName(m.Src)...)
	b = append(b, ' ')
	b = append(b, t.EndpointName(m.SrcEP)...)
	b = append(b, ' ')
	b = appendTime(b, m.Recv)
	b = append(b, ' ')
	b = append(b, t.NodeName(m.Dst)...)
	b = append(b, ' ')
	b = append(b, t.EndpointName(m.DstEP)...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, m.Bytes, 10)
	if m.ID != NoRef && !IsLineRef(m.ID) {
		b = append(b, " id="...)
		b = append(b, t.RefString(m.ID)...)
	}
	if m.Kind != KindNone {
		b = append(b, " kind="...)
		b = append(b, m.Kind.String()...)
	}
	if m.Call != NoRef {
		b = append(b, " call="...)
		b = append(b, t.RefString(int64(m.Call))...)
	}
	if m.Truth != NoRef {
		b = append(b, " truth="...)
		b = append(b, t.RefString(int64(m.Truth))...)
	}
	if m.SrcActor != NoActor {
		b = append(b, " sa="...)
		b = append(b, t.ActorName(m.Src, m.SrcActor)...)
	}
	if m.DstActor != NoActor {
		b = append(b, " da="...)
		b = append(b, t.ActorName(m.Dst, m.DstActor)...)
	}
	return b
}
