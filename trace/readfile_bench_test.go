package trace

import (
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// BenchmarkReadFile reads the trace named by WAP5_BENCH_TRACE (e.g. the
// CoDeeN-sized one from `wap5 gen --binary testdata/gen/codeen.gen`).
func BenchmarkReadFile(b *testing.B) {
	path := os.Getenv("WAP5_BENCH_TRACE")
	if path == "" {
		b.Skip("set WAP5_BENCH_TRACE to a trace file")
	}
	var n int
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		t, err := ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		n = len(t.Messages)
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/msg")
}

// BenchmarkWriteFile writes the trace named by WAP5_BENCH_TRACE in the
// binary form at two zstd levels.
func BenchmarkWriteFile(b *testing.B) {
	path := os.Getenv("WAP5_BENCH_TRACE")
	if path == "" {
		b.Skip("set WAP5_BENCH_TRACE to a trace file")
	}
	t, err := ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, lv := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		b.Run(lv.String(), func(b *testing.B) {
			defer func(old zstd.EncoderLevel) { binaryLevel = old }(binaryLevel)
			binaryLevel = lv
			var n int
			for i := 0; i < b.N; i++ {
				var w countWriter
				if err := WriteBinary(&w, t); err != nil {
					b.Fatal(err)
				}
				n = int(w)
			}
			b.ReportMetric(float64(n)/float64(len(t.Messages)), "B/msg-on-disk")
			b.ReportMetric(float64(b.N*len(t.Messages))/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
