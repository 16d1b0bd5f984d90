package hugemem

import (
	"os"
	"os/exec"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// minorFaults is the process's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		t.Fatal(err)
	}
	return r.Minflt
}

// touch writes one byte per 4 KB page.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}

// TestReserve: after Reserve, a fresh 16 MB slice (4,096 small pages) is
// carved from the reserve and costs a few huge-page faults to write,
// where the kernel gives huge pages on advice at all (Map's memory shows
// whether it does).
func TestReserve(t *testing.T) {
	if off {
		t.Skip("WAP5_NOHUGEPAGES=1")
	}
	f0 := minorFaults(t)
	b, release := Map(16 << 20)
	touch(b)
	release()
	if n := minorFaults(t) - f0; n > 1024 {
		t.Skipf("no transparent huge pages on advice here (%d faults for 16 MB)", n)
	}
	Reserve(64 << 20)
	f0 = minorFaults(t)
	s := make([]byte, 16<<20)
	touch(s)
	if n := minorFaults(t) - f0; n > 1024 {
		t.Errorf("16 MB after Reserve: %d page faults, want a few huge-page ones (4,096 small pages)", n)
	}
	Reserve(1 << 20) // small: nothing
}

func TestMemAvailable(t *testing.T) {
	if n := memAvailable(); n <= 0 {
		t.Errorf("MemAvailable: %d bytes", n)
	}
}

// TestReserveScavenged: in a fresh process (as `wap5 link` calls it), the
// reserve's memory, free after Reserve, is released to the system by the
// runtime's background scavenger without waiting for another collection.
// The scavenger passes over chunks that count as dense in the current or
// the last generation: with the reserve's chunks there, the memory stays
// with the process, and what is touched and freed in it too, until the
// next collection. The check runs in a child process (this test binary
// again): the other tests' garbage would count in the free heap.
func TestReserveScavenged(t *testing.T) {
	if off {
		t.Skip("WAP5_NOHUGEPAGES=1")
	}
	const n = 256 << 20
	if os.Getenv("WAP5_RESERVE_CHILD") == "1" {
		unreleased := func() uint64 { // free heap memory not given back
			s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
			metrics.Read(s)
			return s[0].Value.Uint64()
		}
		Reserve(n)
		var got uint64
		for range 40 { // up to 2 s
			if got = unreleased(); got < n/4 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("2 s after Reserve(%d MB): %d MB of free heap not released, want < %d MB", n>>20, got>>20, n>>22)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReserveScavenged$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WAP5_RESERVE_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("child: %v\n%s", err, out)
	}
}
