package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"wap5/internal/golden"
	"wap5/trace"
)

// reportTrace is a small trace: a client, a web server calling a database,
// and an untraced peer whose messages have one timestamp.
func reportTestTrace() *trace.Trace {
	t := trace.New()
	c, web, db := t.Node("client"), t.Node("web"), t.Node("db")
	peer := t.Node("10.0.0.9")
	t.Nodes[peer].Untraced = true
	ep := t.Endpoint("10.0.0.1:80")
	base := int64(1_700_000_000_000_000_000)
	for i := int64(0); i < 3; i++ {
		at := base + i*10_000_000
		t.Add(trace.Message{Send: at, Recv: at + 100_000, Src: c, Dst: web, DstEP: ep, Bytes: 100, ID: 4 * i, Call: trace.NoRef, Truth: trace.NoRef})
		t.Add(trace.Message{Send: at + 200_000, Recv: at + 250_000 + i*10_000, Src: web, Dst: db, Bytes: 40, ID: 4*i + 1, Call: trace.NoRef, Truth: trace.NoRef})
		t.Add(trace.Message{Send: at + 1_000_000, Recv: at + 1_050_000, Src: db, Dst: web, Bytes: 400, ID: 4*i + 2, Call: trace.NoRef, Truth: trace.NoRef})
		t.Add(trace.Message{Send: at + 1_200_000, Recv: at + 1_300_000, Src: web, Dst: c, Bytes: 900, ID: 4*i + 3, Call: trace.NoRef, Truth: trace.NoRef})
	}
	t.Add(trace.Message{Send: trace.Unknown, Recv: base + 5_000_000, Src: peer, Dst: web, Bytes: 7, ID: 99, Call: trace.NoRef, Truth: trace.NoRef})
	return t
}

func sampleStats(xs ...float64) trace.Stats {
	var a trace.Accumulator
	for _, x := range xs {
		a.Add(x, 1)
	}
	return a.Stats()
}

func reportTestPaths() *trace.Paths {
	root := &trace.Step{From: "client", To: "web", Count: 3, Net: sampleStats(1e-4, 1e-4, 1e-4), Latency: sampleStats(1.3e-3, 1.3e-3, 1.3e-3),
		Children: []*trace.Step{{From: "web", To: "db", Count: 3, Net: sampleStats(5e-5, 6e-5, 7e-5), Wait: sampleStats(1e-4, 1e-4, 1e-4),
			Children: []*trace.Step{{From: "db", To: "web", Count: 3, Net: sampleStats(5e-5), Wait: sampleStats(7.5e-4, 7.4e-4, 7.3e-4),
				Children: []*trace.Step{{From: "web", To: "client", Count: 3, Net: sampleStats(1e-4), Wait: sampleStats(1.5e-4)}}}}}}}
	lone := &trace.Step{From: "10.0.0.9", To: "web", Count: 1}
	return &trace.Paths{Algorithm: "linking", Patterns: []*trace.Pattern{
		{Rank: 1, Count: 3, Expected: 2.9, MaxProb: 1, Root: root},
		{Rank: 2, Count: 1, Expected: 1, MaxProb: 1, Root: lone},
	}}
}

func reportTestClock(applied bool) *ClockSummary {
	return &ClockSummary{Reference: "web", Applied: applied, Nodes: []ClockRow{
		{Node: "client", Status: "corrected", Offset: -1_234_567, DriftPPM: 1.5, Error: 80_000, FitError: 5_000, Samples: 6},
		{Node: "db", Status: "uncorrectable"},
		{Node: "web", Status: "reference", Samples: 12},
	}}
}

func TestReportGolden(t *testing.T) {
	many := []string{"reconcile: nat: dnat tcp 10.0.0.9:80 -> 10.0.0.1:80 (1 flows)"}
	for i := 0; i < 7; i++ {
		many = append(many, fmt.Sprintf("link: warning %d", i))
	}
	many = append(many, "a warning without a stage")
	for _, tc := range []struct {
		name string
		data ReportData
		opts *ReportOptions
	}{
		{"full", ReportData{Inputs: []string{"logs/", "x.pcap"}, Trace: reportTestTrace(), Clock: reportTestClock(true),
			Paths: reportTestPaths(), Method: "joint", EndToEnd: map[int]trace.Stats{1: sampleStats(1.3e-3, 1.5e-3)}, Nesting: &trace.Paths{Algorithm: "nesting", Patterns: []*trace.Pattern{{Rank: 1, Count: 3}}},
			Warnings: many}, nil},
		{"top1-not-applied", ReportData{Inputs: []string{"logs/"}, Trace: reportTestTrace(),
			Clock: func() *ClockSummary { c := reportTestClock(false); c.Note = "one clock"; return c }(),
			Paths: reportTestPaths()}, &ReportOptions{Top: 1, Warnings: 2}},
		{"no-clock-no-paths", ReportData{Inputs: []string{"t"}, Trace: reportTestTrace()}, nil},
		{"empty", ReportData{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Report(&b, &tc.data, tc.opts); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "report", tc.name+".golden"), b.Bytes())
		})
	}
}

// The report's lines say what the data say: spot checks independent of the
// golden files.
func TestReportContent(t *testing.T) {
	var b bytes.Buffer
	d := ReportData{Trace: reportTestTrace(), Clock: reportTestClock(true), Paths: reportTestPaths()}
	if err := Report(&b, &d, nil); err != nil {
		t.Fatal(err)
	}
	// Compare with runs of spaces collapsed: columns may widen.
	squeeze := func(s string) string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		return strings.Join(lines, "\n")
	}
	out := squeeze(b.String())
	for _, want := range []string{
		"13 messages between 4 nodes (3 traced)",
		"10.0.0.9      no     1         0",                    // untraced peer
		"10.0.0.9 → web         1      7           -",         // one timestamp: no delay
		"web → db         3    120       0.060",               // mean of 50, 60, 70 µs
		"client  corrected     -1.235       0.080       1.50", // offset and bound in ms
		"db  uncorrectable          -",
		"#1  3 instances (75.0%), expected 2.90, max prob 1.000, end to end 1.300 ms",
		"      web → db        0.100 ±0.000",
		"        db → web      0.740 ±0.008",
		"No warnings.",
	} {
		if !strings.Contains(out, squeeze(want)) {
			t.Errorf("report lacks %q\n%s", want, out)
		}
	}
}

func TestSkewJSON(t *testing.T) {
	var b bytes.Buffer
	if err := SkewJSON(&b, reportTestClock(true)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Reference string `json:"reference"`
		Offsets   []struct {
			Node     string  `json:"node"`
			OffsetS  float64 `json:"offset_s"`
			DriftPPM float64 `json:"drift_ppm"`
			ErrorS   float64 `json:"error_s"`
			Samples  int     `json:"samples"`
		} `json:"offsets"`
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Reference != "web" || len(got.Offsets) != 2 {
		t.Fatalf("got %+v; want reference web and two offsets (uncorrectable left out)", got)
	}
	c := got.Offsets[0]
	if c.Node != "client" || c.OffsetS != -0.001234567 || c.DriftPPM != 1.5 || c.ErrorS != 0.00008 || c.Samples != 6 {
		t.Errorf("client: %+v", c)
	}
	// Nothing estimated: still the contract's shape, with an empty list.
	b.Reset()
	if err := SkewJSON(&b, &ClockSummary{}); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, `"offsets": []`) {
		t.Errorf("empty estimate: %s", s)
	}
}

func TestSignedMs(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want string
	}{{0, "0.000"}, {-400, "0.000"}, {400, "0.000"}, {-500_000, "-0.500"}, {1_234_567, "1.235"}} {
		if got := signedMs(c.ns); got != c.want {
			t.Errorf("signedMs(%d) = %q, want %q", c.ns, got, c.want)
		}
	}
}
