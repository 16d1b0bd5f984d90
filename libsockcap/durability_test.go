package libsockcap

import (
	"encoding/binary"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestDurability SIGKILLs a multi-threaded sender at random moments: every
// send that returned before the kill must be in the log, and the reader must
// find no damage. 100 trials (WAP5_LONG=1: 500).
func TestDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	bin := snippet(t, "durable")
	lib := libPath(t)
	trials := 100
	if os.Getenv("WAP5_LONG") != "" {
		trials = 500
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	deadline := time.Now().Add(50 * time.Second)
	var total int64
	done := 0
	for trial := 0; trial < trials && time.Now().Before(deadline); trial++ {
		done++
		dir := t.TempDir()
		shared := filepath.Join(dir, "shared")
		logs := filepath.Join(dir, "logs")
		cmd := exec.Command(bin, shared)
		pre := lib
		if x := os.Getenv("SOCKCAP_PRELOAD_EXTRA"); x != "" {
			pre = x + " " + lib
		}
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+pre, "SOCKCAP_DIR="+logs)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// wait until all threads run, then kill at a random moment
		for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(200 * time.Microsecond) {
			raw, _ := os.ReadFile(shared)
			if len(raw) >= 48 && binary.LittleEndian.Uint32(raw[32:]) != 0 {
				break
			}
		}
		time.Sleep(time.Duration(rng.Intn(20000)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()
		raw, err := os.ReadFile(shared)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		want := map[int32]int64{}
		for i := 0; i+16 <= len(raw) && i < 3*16; i += 16 {
			tid := int32(binary.LittleEndian.Uint32(raw[i:]))
			if tid != 0 {
				want[tid] = int64(binary.LittleEndian.Uint64(raw[i+8:]))
			}
		}
		got := map[int32]int64{}
		for _, l := range readLogs(t, logs) {
			for _, e := range l.Events {
				if e.Op == OpSend && e.Ret > 0 {
					got[e.Tid]++
				}
			}
			if l.P.Dropped != 0 {
				t.Errorf("trial %d: %d dropped", trial, l.P.Dropped)
			}
		}
		for tid, n := range want {
			if got[tid] < n || got[tid] > n+1 { // at most one logged but not yet published
				t.Errorf("trial %d: thread %d returned %d sends, log has %d", trial, tid, n, got[tid])
			}
			total += n
		}
		if t.Failed() {
			t.Fatalf("stopping after trial %d", trial)
		}
	}
	if done < 100 && trials >= 100 {
		t.Errorf("only %d trials in the time budget", done)
	}
	t.Logf("%d trials, %d sends checked", done, total)
}
