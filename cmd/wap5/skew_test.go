package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkewerThenSkew skews a generated trace with wap5 skewer and checks
// that wap5 skew --json recovers the clocks it applied.
func TestSkewerThenSkew(t *testing.T) {
	dir := t.TempDir()
	clean, skewed, fixed := filepath.Join(dir, "clean.txt"), filepath.Join(dir, "skewed.txt"), filepath.Join(dir, "fixed.bin")
	if code, _, stderr := runCLI(t, "", "gen", "--duration", "60s", "-o", clean, "../../testdata/gen/multitier.gen"); code != 0 {
		t.Fatalf("gen: %d %s", code, stderr)
	}
	code, _, stderr := runCLI(t, "", "skewer", "--offset", "WS2=30ms", "--offset", "DB=-3m", "--drift", "AP1=100",
		"--drift", "DB=-50", "-o", skewed, clean)
	if code != 0 {
		t.Fatalf("skewer: %d %s", code, stderr)
	}
	if !strings.Contains(stderr, "wap5: skewer: DB offset_s=-180.000000000 drift_ppm=-50") {
		t.Errorf("skewer stderr %q lacks the clock it applied to DB", stderr)
	}
	code, stdout, stderr := runCLI(t, "", "skew", "--json", "--reference", "WS1", "-o", fixed, "--binary", skewed)
	if code != 0 {
		t.Fatalf("skew: %d %s", code, stderr)
	}
	var out struct {
		Reference string `json:"reference"`
		Offsets   []struct {
			Node     string  `json:"node"`
			OffsetS  float64 `json:"offset_s"`
			DriftPPM float64 `json:"drift_ppm"`
			ErrorS   float64 `json:"error_s"`
			Samples  int     `json:"samples"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("skew --json: %v\n%s", err, stdout)
	}
	if out.Reference != "WS1" {
		t.Errorf("reference %q, want WS1", out.Reference)
	}
	// The offsets refer to the middle of the reference's activity (~30 s
	// in), where a drift of 100 ppm has added 3 ms.
	want := map[string][2]float64{"WS1": {0, 0}, "WS2": {0.030, 0}, "WS3": {0, 0}, "AUTH": {0, 0},
		"AP1": {0.003, 100}, "AP2": {0, 0}, "DB": {-180 - 0.0015, -50}}
	seen := 0
	for _, o := range out.Offsets {
		w, ok := want[o.Node]
		if !ok {
			continue
		}
		seen++
		if math.Abs(o.OffsetS-w[0]) > 0.001 || math.Abs(o.DriftPPM-w[1]) > 5 || o.Samples == 0 {
			t.Errorf("%s: offset %.6f s drift %.2f ppm (%d samples), want %.6f s %.0f ppm", o.Node, o.OffsetS, o.DriftPPM, o.Samples, w[0], w[1])
		}
		if o.ErrorS <= 0 && o.Node != "WS1" {
			t.Errorf("%s: error_s %g, want a positive bound", o.Node, o.ErrorS)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d servers in %s", seen, len(want), stdout)
	}
	// The corrected trace records its corrections and re-estimates to ~0.
	code, stdout, stderr = runCLI(t, "", "skew", "--reference", "WS1", fixed)
	if code != 0 {
		t.Fatalf("skew of the corrected trace: %d %s", code, stderr)
	}
	if !strings.Contains(stderr, "already corrected") {
		t.Errorf("stderr %q does not say the trace was already corrected", stderr)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) > 3 && (f[1] == "corrected") {
			if v := f[2]; !strings.HasPrefix(v, "0.000") && !strings.HasPrefix(v, "-0.000") {
				t.Errorf("residual offset after correction: %s", line)
			}
		}
	}
}

func TestSkewGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"pair.txt", []string{"skew", "--pairs", "testdata/skew/pair.trace"}},
		{"pair.json", []string{"skew", "--json", "--reference", "b", "testdata/skew/pair.trace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			goldenFile(t, "skew", tc.name, []byte(stdout))
		})
	}
}

func TestSkewErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"skew"}, 2, "skew wants one TRACE"},
		{[]string{"skew", "--binary", "testdata/skew/pair.trace"}, 2, "--binary needs -o"},
		{[]string{"skew", "--reference", "nobody", "testdata/skew/pair.trace"}, 1, `reference node "nobody" is not in the trace`},
		{[]string{"skew", "testdata/skew/oneway.trace"}, 1, "no pair of nodes exchanges messages in both directions"},
		{[]string{"skew", "testdata/skew/missing.trace"}, 1, "no such file"},
		{[]string{"skewer", "--offset", "x", "testdata/skew/pair.trace"}, 2, "want NODE=SECONDS"},
		{[]string{"skewer", "--offset", "zz=1s", "testdata/skew/pair.trace"}, 2, `node "zz" is not in the trace`},
		{[]string{"skewer", "--drift", "a=1e6", "testdata/skew/pair.trace"}, 2, "parts per million"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d stderr %q, want %d and %q", code, stderr, tc.code, tc.msg)
			}
		})
	}
}
