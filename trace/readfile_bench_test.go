package trace

import (
	"bytes"
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

// BenchmarkDecode decodes the binary trace named by WAP5_BENCH_TRACE from
// memory (decompressed once, outside the loop) into messages and into
// envelopes: the column decoders alone.
func BenchmarkDecode(b *testing.B) {
	path := os.Getenv("WAP5_BENCH_TRACE")
	if path == "" {
		b.Skip("set WAP5_BENCH_TRACE to a binary trace file")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	whole, _, release := decompressWhole(bytes.NewReader(data[len(BinaryMagic):]), len(data))
	defer release()
	if whole == nil {
		b.Fatal("not a whole binary trace")
	}
	for _, into := range []string{"messages", "envelopes"} {
		b.Run(into, func(b *testing.B) {
			var n int
			cpu0 := cpuTime()
			for b.Loop() {
				var env envelopes
				envp := &env
				if into == "messages" {
					envp = nil
				}
				t, _, err := (&binReader{buf: whole, eof: true, file: path}).decode(envp)
				if err != nil {
					b.Fatal(err)
				}
				n = max(len(t.Messages), len(env.list))
				env.release()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/msg")
		})
	}
}
