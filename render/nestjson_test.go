package render

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand"
	"testing"

	"wap5/trace"
)

// encodeNest is what JSON wrote for a nesting pattern before patternJSON:
// encoding/json with the pattern list's indentation, without the final
// newline.
func encodeNest(pat *trace.Pattern) ([]byte, error) {
	var one bytes.Buffer
	pe := json.NewEncoder(&one)
	pe.SetIndent("  ", " ")
	err := pe.Encode(jsonNestPattern{Rank: pat.Rank, Count: pat.Count, Root: nestStep(pat.Root), Metrics: pat.Metrics})
	return bytes.TrimSuffix(one.Bytes(), []byte("\n")), err
}

// patternFrom builds a pattern from arbitrary bytes (for nesting and
// linking): a tree of steps with awkward names, unknown and known delays of
// every magnitude (NaN, infinities and −0 included), histograms with and
// without bins, metrics.
func patternFrom(b []byte) *trace.Pattern {
	names := []string{"client", "WS1", "a<b>&c", "tab\there", "quote\"\\", "\u2028\u2029", "bad\xffutf8", "ünï", "ctl\x01\x1f", ""}
	next := func() byte {
		if len(b) == 0 {
			return 0
		}
		x := b[0]
		b = b[1:]
		return x
	}
	float := func() float64 {
		switch k := next(); k % 8 {
		case 0:
			return 0
		case 1:
			return float64(next()) / 7
		case 2:
			return math.Copysign(0, -1)
		case 3:
			return float64(next()) * 1e-9
		case 4:
			return float64(next()) * 1e19
		default:
			var w [8]byte
			for i := range w {
				w[i] = next()
			}
			return math.Float64frombits(binary.LittleEndian.Uint64(w[:]))
		}
	}
	stats := func() trace.Stats {
		if next()%3 == 0 {
			return trace.Stats{}
		}
		s := trace.Stats{W: 1 + float64(next()), Mean: float(), Std: float(), Min: float(), Max: float()}
		switch next() % 4 {
		case 1:
			s.Hist = &trace.Histogram{Lo: float(), Ratio: float()}
		case 2, 3:
			s.Hist = &trace.Histogram{Lo: 0.001, Ratio: 1.05, Counts: make([]float64, next()%9)}
			for i := range s.Hist.Counts {
				if next()%2 == 0 {
					s.Hist.Counts[i] = float()
				}
			}
		}
		return s
	}
	var step func(depth int) *trace.Step
	step = func(depth int) *trace.Step {
		s := &trace.Step{From: names[next()%byte(len(names))], To: names[next()%byte(len(names))], Count: int(next()) - 3,
			Wait: stats(), Latency: stats(), Net: stats()}
		for n := next() % 3; n > 0 && depth < 4 && len(b) > 0; n-- {
			s.Children = append(s.Children, step(depth+1))
		}
		return s
	}
	p := &trace.Pattern{Rank: int(next()), Count: int(next()) * 1000, Root: step(0)}
	p.Expected, p.MaxProb = float(), float()
	if next()%2 == 0 {
		p.Metrics = map[string]float64{}
		for n := next() % 4; n > 0; n-- {
			p.Metrics[names[next()%byte(len(names))]] = float()
		}
	}
	return p
}

// FuzzNestJSON: patternJSON writes every nesting pattern byte for byte as
// encoding/json does, and fails (bad) exactly where encoding/json fails.
func FuzzNestJSON(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(bytes.Repeat([]byte{7, 1, 2, 200, 3, 9, 5, 0, 2, 1, 250}, 20))
	f.Add(bytes.Repeat([]byte{255, 0, 128, 64}, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		pat := patternFrom(b)
		want, err := encodeNest(pat)
		var w patternJSON
		w.nestPattern(pat)
		if w.bad != (err != nil) {
			t.Fatalf("patternJSON bad %v, encoding/json: %v", w.bad, err)
		}
		if err == nil && !bytes.Equal(w.b, want) {
			t.Fatalf("patternJSON wrote\n%s\nencoding/json\n%s", w.b, want)
		}
	})
}

// TestNestJSONSpecials: the values encoding/json writes in its own ways
// (exponents, −0, null histogram bins, HTML characters, bad UTF-8, empty
// and missing lists) come out the same.
func TestNestJSONSpecials(t *testing.T) {
	h := &trace.Histogram{Lo: 1e-7, Ratio: 1e21, Counts: []float64{0, math.Copysign(0, -1), 1e-7, 2.5e21, 5e-324, 0, 0}}
	root := &trace.Step{From: "<a&b>", To: "x\xff\u2028", Count: 3,
		Wait:     trace.Stats{W: 1, Mean: 1e-7, Std: 0, Min: math.Copysign(0, -1), Max: 1e22, Hist: h},
		Latency:  trace.Stats{W: 2, Mean: 0.1234567891, Std: 1, Min: 0.5, Max: 3, Hist: &trace.Histogram{Lo: 1, Ratio: 2}},
		Children: []*trace.Step{{From: "c", To: "d", Latency: trace.Stats{W: 1, Hist: &trace.Histogram{Counts: []float64{0, 0}}}}, nil}}
	for _, pat := range []*trace.Pattern{
		{Rank: 1, Count: 2, Root: root, Metrics: map[string]float64{"z": 1, "a": 1e-9, "<m>": -2}},
		{Rank: 2, Count: 0},
		{Rank: 3, Root: &trace.Step{}, Metrics: map[string]float64{}},
	} {
		want, err := encodeNest(pat)
		if err != nil {
			t.Fatal(err)
		}
		var w patternJSON
		if w.nestPattern(pat); w.bad || !bytes.Equal(w.b, want) {
			t.Errorf("patternJSON wrote\n%s\nencoding/json\n%s", w.b, want)
		}
	}
	var w patternJSON
	w.nestPattern(&trace.Pattern{Root: &trace.Step{Latency: trace.Stats{W: 1, Mean: math.NaN()}}})
	if !w.bad {
		t.Error("NaN written")
	}
}

// TestNestJSONWholeNumbers: whole numbers, written as integers, come out
// as encoding/json writes them (its shortest form), up to 2^53 and beyond.
func TestNestJSONWholeNumbers(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	vals := []float64{1, -1, 2, 10, 100, 1200, 1e15, 1e16, 1<<53 - 1, 1 << 53, 1<<53 + 2, -(1<<53 - 1), 1e20, 1e21, 0.5, 1.5, -2.5}
	for i := 0; i < 20000; i++ {
		e := rng.Intn(60)
		vals = append(vals, math.Trunc(rng.Float64()*math.Pow(2, float64(e))), -math.Trunc(rng.Float64()*math.Pow(10, float64(e%22))))
	}
	for _, f := range vals {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var w patternJSON
		if w.float(f); !bytes.Equal(w.b, want) {
			t.Fatalf("%v: wrote %s, encoding/json %s", f, w.b, want)
		}
	}
}
