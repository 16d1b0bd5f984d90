package hugemem

import (
	"syscall"
	"testing"
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
