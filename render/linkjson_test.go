package render

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"wap5/trace"
)

// encodeLink is what JSON wrote for a linking pattern before linkPattern:
// encoding/json with the pattern list's indentation, without the final
// newline.
func encodeLink(pat *trace.Pattern) ([]byte, error) {
	var one bytes.Buffer
	pe := json.NewEncoder(&one)
	pe.SetIndent("  ", " ")
	err := pe.Encode(jsonLinkPattern{Rank: pat.Rank, Count: pat.Count, Expected: pat.Expected,
		MaxProb: pat.MaxProb, Root: linkStep(pat.Root, true), Metrics: pat.Metrics})
	return bytes.TrimSuffix(one.Bytes(), []byte("\n")), err
}

// checkLink: linkPattern writes pat byte for byte as encoding/json does, and
// fails (bad) exactly where encoding/json fails.
func checkLink(t *testing.T, pat *trace.Pattern) {
	t.Helper()
	want, err := encodeLink(pat)
	var w patternJSON
	w.linkPattern(pat)
	if w.bad != (err != nil) {
		t.Fatalf("linkPattern bad %v, encoding/json: %v", w.bad, err)
	}
	if err == nil && !bytes.Equal(w.b, want) {
		t.Fatalf("linkPattern wrote\n%s\nencoding/json\n%s", w.b, want)
	}
}

// FuzzLinkJSON: linkPattern writes every linking pattern byte for byte as
// encoding/json does, and fails exactly where encoding/json fails.
func FuzzLinkJSON(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(bytes.Repeat([]byte{7, 1, 2, 200, 3, 9, 5, 0, 2, 1, 250}, 20))
	f.Add(bytes.Repeat([]byte{255, 0, 128, 64}, 40))
	f.Add(bytes.Repeat([]byte{1, 3, 4, 2, 1, 1, 0}, 30))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkLink(t, patternFrom(b))
	})
}

// awkwardRunes are the characters encoding/json writes in its own ways:
// controls, quotes, backslash, HTML's <, > and &, DEL, the line and
// paragraph separators, invalid UTF-8 (a lone byte, a surrogate, a
// truncated sequence, an overlong form), U+FFFD itself, and multibyte
// runes of every length.
var awkwardRunes = []string{"\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x1f", "\"", "\\", "/", "<", ">", "&",
	"\x7f", "\u2028", "\u2029", "\xff", "\xed\xa0\x80", "\xe2\x82", "\xc0\xaf", "\ufffd", "é", "€", "😀", "\u0080",
	"'", " ", "a", "Z", "0", ":", "*", "proxy33", "10.16.0.183"}

// randomName is a node name of 0–6 pieces of awkwardRunes.
func randomName(rng *rand.Rand) string {
	var sb strings.Builder
	for n := rng.Intn(7); n > 0; n-- {
		sb.WriteString(awkwardRunes[rng.Intn(len(awkwardRunes))])
	}
	return sb.String()
}

// randomFloat is a value of every class encoding/json formats: zeros of
// both signs, delays, whole numbers, both sides of the 'f'/'e' switch at
// 1e-6 and 1e21, denormals, huge values, and (when special) random bits,
// NaN and infinities.
func randomFloat(rng *rand.Rand, special bool) float64 {
	switch rng.Intn(14) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return rng.Float64() * 1e-3
	case 3:
		return float64(rng.Intn(1e6)) / 1e9
	case 4:
		return float64(rng.Intn(1000) - 500)
	case 5:
		return []float64{1e-6, 9.99999999e-7, 1e-7, 1e21, 9.99999999e20, 1e20, 5e-324, math.MaxFloat64, -1e-9, 2.5e-9}[rng.Intn(10)]
	case 6:
		if special {
			return math.Float64frombits(rng.Uint64())
		}
		return rng.Float64() * 1e10
	case 7:
		if special {
			return []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.Intn(3)]
		}
		return rng.NormFloat64()
	case 8:
		return math.Ldexp(rng.Float64(), rng.Intn(200)-100)
	default:
		return rng.ExpFloat64() / 1000
	}
}

// randomStats: unknown, or known with random moments.
func randomStats(rng *rand.Rand, special bool) trace.Stats {
	if rng.Intn(3) == 0 {
		return trace.Stats{}
	}
	return trace.Stats{W: 1 + rng.Float64(), Mean: randomFloat(rng, special), Std: randomFloat(rng, special)}
}

// randomLinkPattern is a linking pattern with awkward names, delays of
// every class, nil roots and children, and nil, empty or full metrics.
func randomLinkPattern(rng *rand.Rand, special bool) *trace.Pattern {
	var step func(depth int) *trace.Step
	step = func(depth int) *trace.Step {
		if depth > 0 && rng.Intn(25) == 0 {
			return nil
		}
		s := &trace.Step{From: randomName(rng), To: randomName(rng), Count: rng.Intn(1000) - 2,
			Net: randomStats(rng, special), Wait: randomStats(rng, special), Latency: randomStats(rng, special)}
		for n := rng.Intn(4); n > 0 && depth < 5; n-- {
			s.Children = append(s.Children, step(depth+1))
		}
		if len(s.Children) == 0 && rng.Intn(2) == 0 {
			s.Children = []*trace.Step{}
		}
		return s
	}
	p := &trace.Pattern{Rank: rng.Intn(1 << 20), Count: rng.Intn(1<<20) - 5,
		Expected: randomFloat(rng, special), MaxProb: randomFloat(rng, special)}
	if rng.Intn(30) != 0 {
		p.Root = step(0)
	}
	switch rng.Intn(4) {
	case 0:
	case 1:
		p.Metrics = map[string]float64{}
	case 2:
		p.Metrics = map[string]float64{"mean_prob": rng.Float64(), "expected_sqrt_count": rng.Float64() * 20,
			"depth": float64(rng.Intn(9)), "messages": float64(rng.Intn(40))}
	default:
		p.Metrics = map[string]float64{}
		for n := rng.Intn(6); n >= 0; n-- {
			p.Metrics[randomName(rng)] = randomFloat(rng, special)
		}
	}
	return p
}

// TestLinkJSONRandom compares linkPattern with encoding/json on many random
// patterns, with and without NaN and infinities.
func TestLinkJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	bad := 0
	for i := 0; i < n; i++ {
		pat := randomLinkPattern(rng, i%4 == 0)
		checkLink(t, pat)
		if _, err := encodeLink(pat); err != nil {
			bad++
		}
	}
	if bad == 0 || bad > n/2 {
		t.Errorf("%d of %d patterns with NaN or an infinity: the test does not cover both cases", bad, n)
	}
}

// TestLinkJSONStrings: every single awkward rune and every pair of them,
// as node names and metric keys, comes out as encoding/json writes it.
func TestLinkJSONStrings(t *testing.T) {
	names := append([]string(nil), awkwardRunes...)
	for _, a := range awkwardRunes {
		for _, b := range awkwardRunes {
			names = append(names, a+b)
		}
	}
	for r := rune(0); r < 0x3000; r++ {
		names = append(names, string(r))
	}
	names = append(names, string(rune(utf8.MaxRune)), "\xf4\x90\x80\x80", "\xef\xbf\xbe")
	for i := 0; i < len(names); i += 2 {
		b := names[(i+1)%len(names)]
		root := &trace.Step{From: names[i], To: b, Count: 1,
			Children: []*trace.Step{{From: b, To: names[i]}, nil}}
		checkLink(t, &trace.Pattern{Rank: i, Root: root, Metrics: map[string]float64{names[i]: 1, b: 2, "z": 3}})
	}
}

// TestLinkJSONSpecials: values encoding/json writes in its own ways
// (exponents, −0, the e-09 → e-9 clean-up), unknown delays (null, and no
// deviation), a nil root, a nil child, and NaN and infinities (encoding/
// json's error).
func TestLinkJSONSpecials(t *testing.T) {
	known := func(mean, std float64) trace.Stats { return trace.Stats{W: 1, Mean: mean, Std: std} }
	root := &trace.Step{From: "<a&b>", To: "x\xff\u2028", Count: 3, Net: known(1e-7, 0), Wait: known(5, 5),
		Children: []*trace.Step{
			{From: "b", To: "c", Net: known(math.Copysign(0, -1), 1e-9), Wait: known(1e21, 2.5e-9)},
			nil,
			{From: "c", To: "d", Wait: known(0.1234567891, 1e-6), Children: []*trace.Step{}},
		}}
	for _, pat := range []*trace.Pattern{
		{Rank: 1, Count: 2, Expected: 1e-7, MaxProb: math.Copysign(0, -1), Root: root,
			Metrics: map[string]float64{"z": 1, "a": 1e-9, "<m>": -2}},
		{Rank: 2, Count: 0},
		{Rank: 3, Root: &trace.Step{}, Metrics: map[string]float64{}},
		{Rank: 4, Expected: 1e21, MaxProb: 999999999999999999999, Root: &trace.Step{Net: known(1e290, 1e-300)}},
	} {
		checkLink(t, pat)
		var w patternJSON
		if w.linkPattern(pat); w.bad {
			t.Errorf("pattern %d: bad", pat.Rank)
		}
	}
	for _, pat := range []*trace.Pattern{
		{Expected: math.NaN(), Root: &trace.Step{}},
		{MaxProb: math.Inf(1)},
		{Root: &trace.Step{Net: known(math.Inf(-1), 0)}},
		{Root: &trace.Step{Net: known(1, math.NaN())}},
		{Root: &trace.Step{Children: []*trace.Step{{Wait: known(math.NaN(), 0)}}}},
		{Root: &trace.Step{}, Metrics: map[string]float64{"x": math.Inf(1)}},
		// round(x) of a huge finite x is an infinity: encoding/json fails.
		{Root: &trace.Step{Net: known(math.MaxFloat64, 0)}},
	} {
		checkLink(t, pat)
		var w patternJSON
		if w.linkPattern(pat); !w.bad {
			t.Errorf("%+v: not bad", pat)
		}
	}
	// The root's wait is never written, known or not.
	var w patternJSON
	w.linkPattern(&trace.Pattern{Root: &trace.Step{Wait: known(math.NaN(), math.NaN())}})
	if w.bad || bytes.Contains(w.b, []byte("wait_std_s")) {
		t.Errorf("root wait written: %s", w.b)
	}
}

// BenchmarkLinkJSON: a typical pattern of a large trace (a request, its
// calls and the replies) written by linkPattern.
func BenchmarkLinkJSON(b *testing.B) {
	st := func(m float64) trace.Stats { return trace.Stats{W: 3, Mean: m, Std: m / 3} }
	root := &trace.Step{From: "10.16.0.183", To: "proxy33", Count: 172, Net: st(0.0003)}
	call := &trace.Step{From: "proxy33", To: "server7", Count: 172, Net: st(0.000412), Wait: st(0.0001234)}
	call.Children = []*trace.Step{{From: "server7", To: "proxy33", Count: 172, Net: st(0.00041), Wait: st(0.0123456)}}
	root.Children = []*trace.Step{call, {From: "proxy33", To: "10.16.0.183", Count: 172, Wait: st(0.000911797)}}
	pat := &trace.Pattern{Rank: 12345, Count: 172, Expected: 159.19526035907506, MaxProb: 0.9795403480529785, Root: root,
		Metrics: map[string]float64{"mean_prob": 0.925553839296948, "expected_sqrt_count": 12.138524804242861, "depth": 3, "messages": 4}}
	var w patternJSON
	for b.Loop() {
		w.b = w.b[:0]
		w.linkPattern(pat)
	}
	b.SetBytes(int64(len(w.b)))
}

// TestRounded: rounded(x) writes what float(round(x)) writes (encoding/
// json's form of the rounded value, by strconv), for every nanosecond
// count up to ±300 µs, both sides of the 'e' switch and of the fast path's
// limit, random magnitudes, −0, NaN and infinities.
func TestRounded(t *testing.T) {
	check := func(x float64) {
		var got, want patternJSON
		got.rounded(x)
		want.float(round(x))
		if got.bad != want.bad || !bytes.Equal(got.b, want.b) {
			t.Fatalf("%v (%b): rounded %q (bad %v), float(round) %q (bad %v)", x, math.Float64bits(x), got.b, got.bad, want.b, want.bad)
		}
	}
	for k := -300000; k <= 300000; k++ {
		check(float64(k) / 1e9)
		check(float64(k)/1e9 + 0.4e-9)
		check(float64(k)/1e9 - 0.5e-9)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), -1e-12, 1e-12, 0.5e-9, -0.5e-9, 1.5e-9, 999e-9, 999.5e-9, 1e-6, -1e-6,
		1e6 - 1e-9, 1e6, 1e6 + 0.3e-9, 999999.999999999, -999999.999999999, 1e15, 9.2e18, 1e21, 1e300, math.MaxFloat64,
		5e-324, math.NaN(), math.Inf(1), math.Inf(-1)} {
		check(x)
	}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 2000000; i++ {
		var x float64
		switch i % 5 {
		case 0:
			x = float64(rng.Int63n(1e15)) / 1e9
		case 1:
			x = -float64(rng.Int63n(2e15)) / 1e9
		case 2:
			x = rng.ExpFloat64() * math.Pow(10, float64(rng.Intn(20)-12))
		case 3:
			x = rng.NormFloat64() * 1e-3
		default:
			x = math.Float64frombits(rng.Uint64())
		}
		check(x)
	}
}

// FuzzRounded: rounded(x) writes what float(round(x)) writes.
func FuzzRounded(f *testing.F) {
	for _, x := range []float64{0, 1e-9, 999e-9, 1e-6, 0.000911797, 1e6, 1e15, math.Inf(1)} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		var got, want patternJSON
		got.rounded(x)
		want.float(round(x))
		if got.bad != want.bad || !bytes.Equal(got.b, want.b) {
			t.Fatalf("%v: rounded %q (bad %v), float(round) %q (bad %v)", x, got.b, got.bad, want.b, want.bad)
		}
	})
}

// TestLinkJSONManyNames: one writer, pattern after pattern, with more node
// names than name's table holds: names that share their bytes with another
// (a prefix of it: the same address, another length), names to escape, and
// names that come back after others have taken their slots. Every pattern
// is encoding/json's.
func TestLinkJSONManyNames(t *testing.T) {
	long := strings.Repeat("10.16.0.255-proxy<&>\u2028", 60) // longer than the table
	var pool []string
	for i := 0; i < 3000; i++ {
		pool = append(pool, "10.16."+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("9", i/26))
	}
	for n := 1; n <= len(long); n++ {
		pool = append(pool, long[:n]) // prefixes: same address, other lengths
	}
	// Prefixes of long that take the same slot of name's table (its index
	// as name computes it), one after the other.
	slot := func(s string) uint64 {
		return (uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) ^ uint64(len(s))) * 0x9e3779b97f4a7c15 >> (64 - namedBits)
	}
	var same []string
	first := map[uint64]string{}
	for n := 1; n <= len(long); n++ {
		if o, ok := first[slot(long[:n])]; ok {
			same = append(same, o, long[:n], o)
		} else {
			first[slot(long[:n])] = long[:n]
		}
	}
	if len(same) == 0 {
		t.Fatal("no two prefixes share a slot")
	}
	cases := []struct {
		name   string
		names  []string
		stride int // between one pattern's names and the next's
	}{
		{"sequential", pool, 1},
		{"scattered", pool, 977},
		{"prefixes first", pool, len(pool) - len(long)},
		{"prefixes in one slot", same, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w patternJSON
			at := 0
			for k := 0; k < 2*len(c.names); k++ {
				from, to := c.names[at%len(c.names)], c.names[(at+1)%len(c.names)]
				at += c.stride
				st := trace.Stats{W: 1, Mean: 0.000123 * float64(k%5), Std: 0.00001}
				kid := &trace.Step{From: to, To: from, Count: 2, Net: st, Wait: st}
				pat := &trace.Pattern{Rank: k + 1, Count: 2, Expected: 1.5, MaxProb: 0.75,
					Root: &trace.Step{From: from, To: to, Count: 2, Net: st, Children: []*trace.Step{kid}}}
				want, err := encodeLink(pat)
				if err != nil {
					t.Fatal(err)
				}
				w.b = w.b[:0]
				w.linkPattern(pat)
				if !bytes.Equal(w.b, want) {
					t.Fatalf("pattern %d (%q → %q): linkPattern wrote\n%s\nencoding/json\n%s", k, from, to, w.b, want)
				}
			}
		})
	}
}
