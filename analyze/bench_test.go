package analyze

import (
	"io"
	"os"
	"testing"

	"wap5/reconcile"
	"wap5/render"
)

// BenchmarkRun runs the whole pipeline on the testbed logs, or on the logs
// in $WAP5_ANALYZE_LOGS (e.g. bench/analyze.sh's capture of the demo).
func BenchmarkRun(b *testing.B) {
	logs := testbed
	if d := os.Getenv("WAP5_ANALYZE_LOGS"); d != "" {
		logs = d
	}
	for _, mode := range []struct {
		name string
		skew SkewMode
	}{{"auto", SkewAuto}, {"always", SkewAlways}} {
		b.Run(mode.name, func(b *testing.B) {
			var msgs int
			for b.Loop() {
				r, err := Run(reconcile.Inputs{Logs: []string{logs}}, Options{Skew: mode.skew})
				if err != nil {
					b.Fatal(err)
				}
				msgs = len(r.Trace.Messages)
			}
			b.ReportMetric(float64(msgs), "messages")
		})
	}
}

// BenchmarkReport measures the text report alone.
func BenchmarkReport(b *testing.B) {
	r, err := Run(reconcile.Inputs{Logs: []string{testbed}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	d := r.Data()
	for b.Loop() {
		if err := render.Report(io.Discard, d, nil); err != nil {
			b.Fatal(err)
		}
	}
}
