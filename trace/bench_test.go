package trace

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// synthetic builds n messages among 115 nodes, as a reconciled trace would hold.
func synthetic(n int) *Trace {
	t := New()
	for i := 0; i < 115; i++ {
		t.Node(fmt.Sprintf("host%03d", i))
		t.Endpoint(fmt.Sprintf("10.0.%d.%d:80", i/256, i%256))
	}
	ts := int64(1700000000e9)
	for i := 0; i < n; i++ {
		ts += 766e3
		src, dst := NodeID(i%115), NodeID((i*7+3)%115)
		t.Add(Message{Send: ts, Recv: ts + 20e6, ID: int64(i), Bytes: int64(200 + i%1500), Src: src, Dst: dst,
			SrcEP: EndpointID(src + 1), DstEP: EndpointID(dst + 1), Call: NoRef, Truth: int32(i / 6)})
	}
	return t
}

func BenchmarkWriteText(b *testing.B) {
	t := synthetic(100000)
	var buf bytes.Buffer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		WriteText(&buf, t)
	}
	b.ReportMetric(float64(b.N*len(t.Messages))/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkReadText(b *testing.B) {
	var buf bytes.Buffer
	WriteText(&buf, synthetic(100000))
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ReadText(bytes.NewReader(buf.Bytes()), "bench")
	}
	b.ReportMetric(float64(b.N*100000)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkBinary(b *testing.B) {
	t := synthetic(100000)
	var buf bytes.Buffer
	WriteBinary(&buf, t)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		ReadBinary(bytes.NewReader(buf.Bytes()), "bench")
	}
	b.ReportMetric(float64(buf.Len())/100000, "B/msg-on-disk")
	b.ReportMetric(float64(b.N*100000)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*100000), "cpu-ns/msg")
}

func BenchmarkWriteBinary(b *testing.B) {
	t := synthetic(100000)
	var buf bytes.Buffer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		WriteBinary(&buf, t)
	}
	b.ReportMetric(float64(b.N*len(t.Messages))/b.Elapsed().Seconds(), "msgs/s")
}

// cpuTime is the process's user+system CPU time so far: on the shared
// machine it measures the work better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheckValid: CheckValid of a binary trace of 1M messages
// (synthetic) as read (its decoder's mark: no pass over the messages) and
// after MessagesEdited (every message checked, as before the mark).
func BenchmarkCheckValid(b *testing.B) {
	var buf bytes.Buffer
	if err := WriteBinary(&buf, synthetic(1<<20)); err != nil {
		b.Fatal(err)
	}
	t, err := ReadBinary(bytes.NewReader(buf.Bytes()), "bench")
	if err != nil || !t.MessagesChecked() {
		b.Fatalf("read: %v, checked %v", err, t.MessagesChecked())
	}
	for _, edited := range []bool{false, true} {
		b.Run(fmt.Sprint("edited=", edited), func(b *testing.B) {
			if edited {
				t.MessagesEdited()
			}
			for range b.N {
				if err := t.CheckValid(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
