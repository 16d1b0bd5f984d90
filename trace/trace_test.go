package trace

import (
	"bytes"
	"math"
	"sort"
	"strings"
	"testing"
	"unsafe"
)

func TestMessageSize(t *testing.T) {
	// ARCHITECTURE.md: ≤ 64 bytes per message in memory.
	if s := unsafe.Sizeof(Message{}); s > 64 {
		t.Fatalf("Message is %d bytes, target ≤ 64", s)
	}
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1700000000.000123456", 1700000000000123456, false},
		{"1.5", 1500000000, false},
		{"0.000000001", 1, false},
		{"12", 12e9, false},
		{".25", 250000000, false},
		{"-3.5", -3500000000, false},
		{"1.1234567891", 1123456789, false}, // beyond ns: truncated
		{"-", Unknown, false},
		{"", 0, true},
		{"1.2.3", 0, true},
		{"abc", 0, true},
		{"1e9", 0, true},
		{"99999999999999999999", 0, true},
	} {
		got, err := ParseTime(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("ParseTime(%q) error %v, want error %v", tc.in, err, tc.bad)
			continue
		}
		if !tc.bad && got != tc.want {
			t.Errorf("ParseTime(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	for _, ns := range []int64{0, 1, -1, 1700000000000123456, -3500000000, Unknown} {
		back, err := ParseTime(FormatTime(ns))
		if err != nil || back != ns {
			t.Errorf("FormatTime(%d) = %q parses back as %d, %v", ns, FormatTime(ns), back, err)
		}
	}
}

const sample = `# wap5 message trace v1
# wap5 clock web offset_s=0.002500000 drift_ppm=12.5 at=1700000000.000000000 error_s=0.000100000 applied=0
1700000000.000100000 client 10.0.0.1:40001 1700000000.000300000 web 10.0.0.2:80 512 id=1 kind=call call=7 truth=t1
1700000000.000400000 web 10.0.0.2:5000 - 10.0.0.9:5432 10.0.0.9:5432 80 id=2 truth=t1 span=abc
- 10.0.0.9:5432 10.0.0.9:5432 1700000000.004000000 web 10.0.0.2:5000 900 id=x-3 truth=t1
1700000000.005000000 web 10.0.0.2:80 1700000000.005200000 client 10.0.0.1:40001 2048 id=4 kind=return call=7 truth=t1
`

func TestTextRoundTrip(t *testing.T) {
	tr, err := ReadText(strings.NewReader(sample), "sample")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Warnings) != 0 {
		t.Fatalf("warnings: %v", tr.Warnings)
	}
	if err := tr.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 4 || len(tr.Nodes) != 3 {
		t.Fatalf("got %d messages, %d nodes", len(tr.Messages), len(tr.Nodes))
	}
	m := tr.Messages[0]
	if m.Kind != KindCall || tr.RefString(int64(m.Call)) != "7" || tr.RefString(int64(m.Truth)) != "t1" || m.Bytes != 512 {
		t.Errorf("message 0 = %+v", m)
	}
	if tr.Messages[1].Recv != Unknown || tr.Messages[2].Send != Unknown {
		t.Errorf("unknown timestamps lost: %+v %+v", tr.Messages[1], tr.Messages[2])
	}
	if tr.RefString(tr.Messages[2].ID) != "x-3" {
		t.Errorf("label id = %q", tr.RefString(tr.Messages[2].ID))
	}
	if c, ok := tr.Correction(tr.Node("web")); !ok || c.Offset != 2500000 || c.DriftPPM != 12.5 {
		t.Errorf("clock correction = %+v, %v", c, ok)
	}
	var out bytes.Buffer
	if err := WriteText(&out, tr); err != nil {
		t.Fatal(err)
	}
	if out.String() != sample {
		t.Errorf("round trip differs:\n got:\n%s\nwant:\n%s", out.String(), sample)
	}
}

func TestTextSyntaxErrors(t *testing.T) {
	in := "# wap5 message trace v1\n" +
		"1.0 a a:1 1.1 b b:2 10\n" +
		"1.0 a a:1 1.1 b\n" + // too few fields
		"x a a:1 1.1 b b:2 10\n" + // bad time
		"- a a:1 - b b:2 10\n" + // both unknown
		"1.0 a a:1 1.1 b b:2 -5\n" + // bad size
		"1.0 a a:1 1.1 b b:2 5 kind=maybe\n" +
		"1.0 a a:1 1.1 b b:2 5 novalue\n" +
		"2.0 b b:2 2.1 a a:1 7\n"
	tr, err := ReadText(strings.NewReader(in), "bad.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 2 {
		t.Errorf("kept %d messages, want the 2 good ones", len(tr.Messages))
	}
	if len(tr.Warnings) != 6 {
		t.Fatalf("got %d warnings, want 6: %v", len(tr.Warnings), tr.Warnings)
	}
	for i, line := range []int{3, 4, 5, 6, 7, 8} {
		if want := "bad.txt:" + itoa(line) + ":"; !strings.HasPrefix(tr.Warnings[i], want) {
			t.Errorf("warning %d = %q, want prefix %q", i, tr.Warnings[i], want)
		}
	}
}

func itoa(i int) string { return FormatTime(int64(i) * 1e9)[:len(FormatTime(int64(i)*1e9))-10] }

func TestBinaryRoundTrip(t *testing.T) {
	tr, err := ReadText(strings.NewReader(sample), "sample")
	if err != nil {
		t.Fatal(err)
	}
	tr.Nodes[tr.Node("10.0.0.9:5432")].Untraced = true
	tr.Warnf("a warning survives")
	var bin bytes.Buffer
	if err := WriteBinary(&bin, tr); err != nil {
		t.Fatal(err)
	}
	back, err := Read(bytes.NewReader(bin.Bytes()), "bin")
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	WriteText(&a, tr)
	WriteText(&b, back)
	if a.String() != b.String() {
		t.Errorf("binary round trip differs:\n%s\nvs\n%s", a.String(), b.String())
	}
	if !back.Nodes[back.Node("10.0.0.9:5432")].Untraced || len(back.Warnings) != 1 {
		t.Errorf("node flags or warnings lost: %+v %v", back.Nodes, back.Warnings)
	}
	// A truncated file keeps what precedes the damage and says so.
	cut := bin.Bytes()[:bin.Len()-3]
	part, err := Read(bytes.NewReader(cut), "cut.bin")
	if err != nil {
		t.Logf("truncated: error %v (acceptable when the tables are cut)", err)
	} else if len(part.Warnings) < 2 {
		t.Errorf("truncated binary trace read without a warning: %v", part.Warnings)
	}
}

func TestProject5Import(t *testing.T) {
	in := "1.000 CALL_SENT client web 17\n1.010 CALL_SENT web db 18\n1.020 RET_SENT db web 18\n1.030 RET_SENT web client 17\n1.04 BOGUS a b 1\n"
	tr, err := Read(strings.NewReader(in), "p5.trace")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 4 || len(tr.Warnings) != 1 || !strings.HasPrefix(tr.Warnings[0], "p5.trace:5:") {
		t.Fatalf("messages %d, warnings %v", len(tr.Messages), tr.Warnings)
	}
	m := tr.Messages[2]
	if m.Kind != KindReturn || tr.NodeName(m.Src) != "db" || tr.NodeName(m.Dst) != "web" || m.Send != 1020000000 || m.Recv != m.Send || tr.RefString(int64(m.Call)) != "18" {
		t.Errorf("message 2 = %+v", m)
	}
}

func TestReadRejectsForeignBinary(t *testing.T) {
	_, err := Read(bytes.NewReader([]byte{0x7f, 'E', 'L', 'F', 0, 1, 2}), "/bin/ls")
	if err == nil || !strings.Contains(err.Error(), "/bin/ls") {
		t.Fatalf("err = %v, want one naming the file", err)
	}
}

func TestSortKeepsExtra(t *testing.T) {
	in := "2.0 a a:1 2.1 b b:2 1 k=two\n1.0 a a:1 1.1 b b:2 1 k=one\n"
	tr, _ := ReadText(strings.NewReader(in), "x")
	tr.Sort()
	if tr.Messages[0].Send != 1e9 || tr.Extra[0] != "k=one" || tr.Extra[1] != "k=two" {
		t.Errorf("after sort: %+v %v", tr.Messages, tr.Extra)
	}
}

func TestCheckValid(t *testing.T) {
	for name, mutate := range map[string]func(*Trace){
		"bad src":      func(t *Trace) { t.Messages[0].Src = 99 },
		"bad endpoint": func(t *Trace) { t.Messages[0].DstEP = -1 },
		"no time":      func(t *Trace) { t.Messages[0].Send, t.Messages[0].Recv = Unknown, Unknown },
		"bad label":    func(t *Trace) { t.Messages[0].Truth = -50 },
		"dup node":     func(t *Trace) { t.Nodes = append(t.Nodes, t.Nodes[0]) },
	} {
		tr, _ := ReadText(strings.NewReader(sample), "s")
		mutate(tr)
		if err := tr.CheckValid(); err == nil {
			t.Errorf("%s: CheckValid accepted it", name)
		}
	}
}

func TestAccumulator(t *testing.T) {
	var a Accumulator
	h := NewLogHistogram(0.001, 1.05, 340)
	a.WithHistogram(h)
	for _, x := range []float64{0.1, 0.2, 0.3} {
		a.Add(x, 1)
	}
	a.Add(0.4, 0) // no weight, ignored
	s := a.Stats()
	if s.W != 3 || abs(s.Mean-0.2) > 1e-12 || abs(s.Std-0.0816496580927726) > 1e-12 || s.Min != 0.1 || s.Max != 0.3 {
		t.Errorf("stats = %+v", s)
	}
	var sum float64
	for _, c := range h.Counts {
		sum += c
	}
	if sum != 3 || h.Bin(0.0005) != -1 || h.Bin(7200) != 323 || h.Bin(20000) != 340 {
		t.Errorf("histogram: sum %v, bins %d %d", sum, h.Bin(0.0005), h.Bin(7200))
	}
	if e := h.Edge(h.Bin(0.2)); e > 0.2 || e*1.05 <= 0.2 {
		t.Errorf("bin edge %v does not contain 0.2", e)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestNewEndpointIndexedLater: names appended without the index are found
// by later lookups (by string and by bytes), not appended twice.
func TestNewEndpointIndexedLater(t *testing.T) {
	tr := New()
	a := tr.Endpoint("10.0.0.1:80")
	b := tr.NewEndpoint("10.0.0.2:80")
	c := tr.NewEndpoint("10.0.0.3:80")
	if a != 1 || b != 2 || c != 3 {
		t.Fatalf("ids %d %d %d, want 1 2 3", a, b, c)
	}
	if id := tr.Endpoint("10.0.0.3:80"); id != c {
		t.Fatalf("Endpoint of a NewEndpoint name = %d, want %d", id, c)
	}
	if id := tr.endpointBytes([]byte("10.0.0.2:80")); id != b {
		t.Fatalf("endpointBytes = %d, want %d", id, b)
	}
	if d := tr.Endpoint("10.0.0.4:80"); d != 4 || len(tr.Endpoints) != 5 {
		t.Fatalf("new name got %d with %d endpoints, want 4 and 5", d, len(tr.Endpoints))
	}
	if id := tr.NewEndpoint("10.0.0.5:80"); id != 5 || tr.Endpoint("10.0.0.5:80") != 5 || tr.Endpoint("-") != 0 {
		t.Fatalf("after a lookup: NewEndpoint/Endpoint disagree: %v", tr.Endpoints)
	}
	empty := &Trace{}
	if id := empty.NewEndpoint("x:1"); id != 1 || empty.Endpoints[0] != "-" {
		t.Fatalf("NewEndpoint on an empty trace: id %d, table %v", id, empty.Endpoints)
	}
}

// TestAccumulatorExtremes checks Add's inlined minimum and maximum against
// math.Min and math.Max, zeros of both signs and infinities included.
func TestAccumulatorExtremes(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, -3e-9, math.Inf(1), math.Inf(-1), 1e300, -1e-300}
	for i := range vals {
		for j := range vals {
			for k := range vals {
				xs := []float64{vals[i], vals[j], vals[k]}
				var a Accumulator
				lo, hi := xs[0], xs[0]
				for _, x := range xs {
					a.Add(x, 1)
					lo, hi = math.Min(lo, x), math.Max(hi, x)
				}
				st := a.Stats()
				if math.Float64bits(st.Min) != math.Float64bits(lo) || math.Float64bits(st.Max) != math.Float64bits(hi) {
					t.Fatalf("%v: min %v max %v, want %v %v", xs, st.Min, st.Max, lo, hi)
				}
			}
		}
	}
}

// TestSortedAgrees: Trace.sorted is sort.SliceIsSorted by Time().
func TestSortedAgrees(t *testing.T) {
	at := func(times ...int64) []Message {
		var ms []Message
		for i, x := range times {
			m := Message{Send: x, Recv: Unknown}
			if i%2 == 1 {
				m = Message{Send: Unknown, Recv: x} // Time() is the receive time
			}
			ms = append(ms, m)
		}
		return ms
	}
	cases := []struct {
		name string
		msgs []Message
		want bool
	}{
		{"empty", nil, true},
		{"one", at(5), true},
		{"in order", at(1, 2, 3, 4), true},
		{"ties", at(1, 1, 2, 2), true},
		{"first out of order", at(2, 1, 3, 4), false},
		{"last out of order", at(1, 2, 4, 3), false},
		{"middle", at(1, 3, 2, 4), false},
	}
	for _, c := range cases {
		tr := &Trace{Messages: c.msgs}
		ref := sort.SliceIsSorted(c.msgs, func(i, j int) bool { return c.msgs[i].Time() < c.msgs[j].Time() })
		if got := tr.sorted(); got != c.want || got != ref {
			t.Errorf("%s: sorted %v, want %v (sort.SliceIsSorted %v)", c.name, got, c.want, ref)
		}
	}
}
