package reconcile

import (
	"io"
	"os"
	"runtime"
	"testing"

	"wap5/trace"
)

// BenchmarkReconcileLogs reconciles real libsockcap logs: the directory in
// $WAP5_BENCH_LOGS (bench/reconcile.sh makes one: ~1M messages between two
// processes over 16 loopback connections), else the small fixture.
func BenchmarkReconcileLogs(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		dir = "testdata/logs/loopback"
	}
	var n int
	for i := 0; i < b.N; i++ {
		t, err := Reconcile(Inputs{Logs: []string{dir}}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		n = len(t.Messages)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkReconcileWrite is BenchmarkReconcileLogs plus writing the binary
// trace, with the peak heap per message.
func BenchmarkReconcileWrite(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		dir = "testdata/logs/loopback"
	}
	var n int
	for i := 0; i < b.N; i++ {
		t, err := Reconcile(Inputs{Logs: []string{dir}}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := trace.WriteBinary(io.Discard, t); err != nil {
			b.Fatal(err)
		}
		n = len(t.Messages)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
