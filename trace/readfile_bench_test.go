package trace

import (
	"os"
	"testing"
)

// BenchmarkReadFile reads the trace named by WAP5_BENCH_TRACE (e.g. the
// CoDeeN-sized one from `wap5 gen --binary testdata/gen/codeen.gen`).
func BenchmarkReadFile(b *testing.B) {
	path := os.Getenv("WAP5_BENCH_TRACE")
	if path == "" {
		b.Skip("set WAP5_BENCH_TRACE to a trace file")
	}
	var n int
	for i := 0; i < b.N; i++ {
		t, err := ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		n = len(t.Messages)
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msgs/s")
}
