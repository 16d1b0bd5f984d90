package render

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"wap5/trace"
)

// patternJSON appends patterns to a buffer exactly as encoding/json
// encodes their jsonNestPattern (nestPattern) or jsonLinkPattern
// (linkPattern, linkjson.go) with SetIndent("  ", " ") (without the final
// newline), with no reflection and no tree of jsonNestSteps or
// jsonLinkSteps: a nesting document is mostly histogram bins, one number a
// line; a linking document of a large trace has hundreds of thousands of
// patterns.
type patternJSON struct {
	b     []byte
	names map[string][]byte // encoded strings (node names, metric keys)
	bad   bool              // a NaN or an infinity: encoding/json fails there
	keys  []string          // metrics' scratch
	// float's last value and its form (lastN bytes of last; none if 0)
	lastBits uint64
	last     [32]byte
	lastN    int
	// linkPattern's keys by depth, and node names as they were encoded
	lk    []linkKeys
	named [1 << namedBits]namedString
}

// namedBits sizes name's table: room for the few hundred node names of a
// large trace (115 proxies and their peers in the CoDeeN-sized one), which
// a table of 64 kept evicting.
const namedBits = 10

// namedString is a string and its encoded form (name).
type namedString struct {
	p   *byte
	n   int
	enc []byte
}

// nestPattern appends nesting pattern pat at depth 0 (the caller's prefix holds the pattern
// list's indentation).
func (w *patternJSON) nestPattern(pat *trace.Pattern) {
	w.b = append(w.b, '{')
	w.key(1, "rank")
	w.b = strconv.AppendInt(w.b, int64(pat.Rank), 10)
	w.b = append(w.b, ',')
	w.key(1, "count")
	w.b = strconv.AppendInt(w.b, int64(pat.Count), 10)
	w.b = append(w.b, ',')
	w.key(1, "root")
	w.nestStep(pat.Root, 1)
	if len(pat.Metrics) > 0 {
		w.b = append(w.b, ',')
		w.key(1, "metrics")
		w.metrics(pat.Metrics, 1)
	}
	w.newline(0)
	w.b = append(w.b, '}')
}

// newline starts a line at depth d: the encoder's prefix ("  ") and d
// indents (" ").
func (w *patternJSON) newline(d int) {
	if d+3 <= len(newlines) {
		w.b = append(w.b, newlines[:d+3]...)
		return
	}
	w.b = append(w.b, '\n', ' ', ' ')
	for ; d > 0; d-- {
		w.b = append(w.b, ' ')
	}
}

// newlines is a newline and the encoder's prefix (two spaces) with up to
// 30 indents.
const newlines = "\n                                "

// key starts a line at depth d with an object key (plain ASCII: no
// escaping needed) and its colon.
func (w *patternJSON) key(d int, k string) {
	w.newline(d)
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':', ' ')
}

// keyq is key with the key quoted and followed by its colon already
// (keyq(d, `"k": `) is key(d, "k")).
func (w *patternJSON) keyq(d int, q string) {
	w.newline(d)
	w.b = append(w.b, q...)
}

// str appends s as encoding/json does (HTML-escaped, invalid UTF-8 as
// U+FFFD, U+2028 and U+2029 escaped): as it is between quotes where it has
// only printable ASCII that needs no escaping (node names, mostly), else by
// json.Marshal, once per string.
func (w *patternJSON) str(s string) {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		w.b = append(w.b, '"')
		w.b = append(w.b, s...)
		w.b = append(w.b, '"')
		return
	}
	e, ok := w.names[s]
	if !ok {
		e, _ = json.Marshal(s) // a string always marshals
		if w.names == nil {
			w.names = make(map[string][]byte)
		}
		w.names[s] = e
	}
	w.b = append(w.b, e...)
}

// name is str for the node names of steps: a handful of strings, each in
// thousands of steps, whose encoded forms are kept by the strings' memory
// (a string's bytes never change), direct-mapped.
func (w *patternJSON) name(s string) {
	p := unsafe.StringData(s)
	if p == nil {
		w.str(s)
		return
	}
	c := &w.named[(uint64(uintptr(unsafe.Pointer(p)))^uint64(len(s)))*0x9e3779b97f4a7c15>>(64-namedBits)]
	if c.p == p && c.n == len(s) {
		w.b = append(w.b, c.enc...)
		return
	}
	at := len(w.b)
	w.str(s)
	c.p, c.n, c.enc = p, len(s), append(c.enc[:0], w.b[at:]...)
}

// float appends f as encoding/json's float64 encoder does.
func (w *patternJSON) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		w.bad = true
		return
	}
	abs := math.Abs(f)
	if abs >= 1 && abs < 1<<53 && f == math.Trunc(f) {
		// A whole number (histogram counts): its shortest form is its
		// digits, what AppendFloat would find the long way.
		w.b = strconv.AppendInt(w.b, int64(f), 10)
		return
	}
	// The last value's form again (a pattern of one instance has the same
	// expected count, highest and mean probability and expected/√count).
	if bits := math.Float64bits(f); bits == w.lastBits && w.lastN > 0 {
		w.b = append(w.b, w.last[:w.lastN]...)
		return
	}
	at := len(w.b)
	if abs == 0 || abs >= 1e-6 && abs < 1e21 {
		w.b = strconv.AppendFloat(w.b, f, 'f', -1, 64)
	} else {
		w.b = strconv.AppendFloat(w.b, f, 'e', -1, 64)
		// e-09 → e-9
		if n := len(w.b); n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
			w.b[n-2] = w.b[n-1]
			w.b = w.b[:n-1]
		}
	}
	w.lastBits, w.lastN = math.Float64bits(f), copy(w.last[:], w.b[at:])
	if w.lastN < len(w.b)-at {
		w.lastN = 0 // (never: 24 bytes at most)
	}
}

// rounded appends round(x) as float does: where round(x) is k/1e9 with a
// whole k below 1e15 in size, its shortest form (encoding/json's, by
// strconv) is k's digits with nine decimals, trailing zeros dropped ('f'),
// or k's digits times 1e-9 to 1e-7 below 1e-6 ('e', one-digit exponent):
// any other decimal of as few digits is another multiple of 1e-9, more
// than half the spacing of floats below 1e6 away.
func (w *patternJSON) rounded(x float64) {
	k := math.Round(x * 1e9)
	if !(math.Abs(k) < 1e15) { // NaN and infinities too
		w.float(k / 1e9)
		return
	}
	if k == 0 {
		if math.Signbit(k) {
			w.b = append(w.b, '-')
		}
		w.b = append(w.b, '0')
		return
	}
	if k < 0 {
		w.b = append(w.b, '-')
		k = -k
	}
	u := uint64(k)
	if u < 1000 {
		// d.ddde-N: u's digits without trailing zeros, N = 10 − digits.
		nd := 1
		if u >= 100 {
			nd = 3
		} else if u >= 10 {
			nd = 2
		}
		exp := 10 - nd
		for u%10 == 0 {
			u /= 10
		}
		var d [3]byte
		n := 0
		for ; u > 0; u /= 10 {
			d[2-n] = byte('0' + u%10)
			n++
		}
		w.b = append(w.b, d[3-n])
		if n > 1 {
			w.b = append(w.b, '.')
			w.b = append(w.b, d[4-n:]...)
		}
		w.b = append(w.b, 'e', '-', byte('0'+exp))
		return
	}
	if u < 1e9 {
		w.b = append(w.b, '0')
	} else {
		w.b = strconv.AppendUint(w.b, u/1e9, 10)
	}
	frac := uint32(u % 1e9)
	if frac == 0 {
		return
	}
	// The point and the nine decimals, by pairs, written in place at the
	// buffer's end (not through an array and an append: a copy call per
	// number), trailing zeros then dropped.
	if cap(w.b)-len(w.b) < 10 {
		w.b = slices.Grow(w.b, 10)
	}
	at := len(w.b)
	d := w.b[at : at+10]
	d[0], d[1] = '.', byte('0'+frac/1e8)
	frac %= 1e8
	hi, lo := frac/1e4, frac%1e4
	// (Each pair's place in digitPairs.)
	p0, p1, p2, p3 := hi/100*2, hi%100*2, lo/100*2, lo%100*2
	d[2], d[3] = digitPairs[p0], digitPairs[p0+1]
	d[4], d[5] = digitPairs[p1], digitPairs[p1+1]
	d[6], d[7] = digitPairs[p2], digitPairs[p2+1]
	d[8], d[9] = digitPairs[p3], digitPairs[p3+1]
	n := 10
	for d[n-1] == '0' {
		n--
	}
	w.b = w.b[:at+n]
}

// digitPairs are the two digits of 0 to 99.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// mean appends what mean(s) gives: null, or the rounded mean.
func (w *patternJSON) mean(s *trace.Stats) {
	// (By pointer: a Stats by value is six words copied at every step.)
	if s.W <= 0 { // !s.Known()
		w.b = append(w.b, "null"...)
		return
	}
	w.rounded(s.Mean)
}

// nestStep appends nestStep(s) at depth d.
func (w *patternJSON) nestStep(s *trace.Step, d int) {
	if s == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '{')
	w.key(d+1, "from")
	w.str(s.From)
	w.b = append(w.b, ',')
	w.key(d+1, "to")
	w.str(s.To)
	w.b = append(w.b, ',')
	w.key(d+1, "call_delay_s")
	w.mean(&s.Wait)
	w.b = append(w.b, ',')
	w.key(d+1, "latency_s")
	w.mean(&s.Latency)
	w.b = append(w.b, ',')
	w.key(d+1, "count")
	w.b = strconv.AppendInt(w.b, int64(s.Count), 10)
	w.b = append(w.b, ',')
	if s.Wait.Known() {
		w.key(d+1, "call_delay")
		w.dist(s.Wait, d+1)
		w.b = append(w.b, ',')
	}
	if s.Latency.Known() {
		w.key(d+1, "latency")
		w.dist(s.Latency, d+1)
		w.b = append(w.b, ',')
	}
	w.key(d+1, "children")
	w.children(s.Children, d, func(c *trace.Step) { w.nestStep(c, d+2) })
}

// children appends a step's children array (its key written) and closes
// the step's object at depth d; step writes one child at depth d+2.
func (w *patternJSON) children(cs []*trace.Step, d int, step func(*trace.Step)) {
	if len(cs) == 0 {
		w.b = append(w.b, '[', ']')
	} else {
		w.b = append(w.b, '[')
		for i, c := range cs {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.newline(d + 2)
			step(c)
		}
		w.newline(d + 1)
		w.b = append(w.b, ']')
	}
	w.newline(d)
	w.b = append(w.b, '}')
}

// dist appends dist(s) (s known) at depth d.
func (w *patternJSON) dist(s trace.Stats, d int) {
	w.b = append(w.b, '{')
	w.key(d+1, "std_s")
	w.rounded(s.Std)
	w.b = append(w.b, ',')
	w.key(d+1, "min_s")
	w.rounded(s.Min)
	w.b = append(w.b, ',')
	w.key(d+1, "max_s")
	w.rounded(s.Max)
	if h := s.Hist; h != nil {
		w.b = append(w.b, ',')
		w.key(d+1, "hist")
		w.hist(h, d+1)
	}
	w.newline(d)
	w.b = append(w.b, '}')
}

// hist appends dist's jsonHist of h at depth d.
func (w *patternJSON) hist(h *trace.Histogram, d int) {
	n := len(h.Counts)
	for n > 0 && h.Counts[n-1] == 0 {
		n--
	}
	counts := h.Counts[:n]
	w.b = append(w.b, '{')
	w.key(d+1, "lo_s")
	w.float(h.Lo)
	w.b = append(w.b, ',')
	w.key(d+1, "ratio")
	w.float(h.Ratio)
	w.b = append(w.b, ',')
	w.key(d+1, "counts")
	switch {
	case counts == nil:
		w.b = append(w.b, "null"...)
	case len(counts) == 0:
		w.b = append(w.b, '[', ']')
	default:
		w.b = append(w.b, '[')
		for i, c := range counts {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.newline(d + 2)
			if math.Float64bits(c) == 0 { // most bins (not −0: "-0")
				w.b = append(w.b, '0')
			} else {
				w.float(c)
			}
		}
		w.newline(d + 1)
		w.b = append(w.b, ']')
	}
	w.newline(d)
	w.b = append(w.b, '}')
}

// metrics appends a non-empty metrics map at depth d, keys sorted.
func (w *patternJSON) metrics(m map[string]float64, d int) {
	keys := w.keys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.keys = keys
	w.b = append(w.b, '{')
	for i, k := range keys {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.newline(d + 1)
		w.str(k)
		w.b = append(w.b, ':', ' ')
		w.float(m[k])
	}
	w.newline(d)
	w.b = append(w.b, '}')
}
