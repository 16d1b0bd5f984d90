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
	trials := 100
	if os.Getenv("WAP5_LONG") != "" {
		trials = 500
	}
	done, total, _ := durabilityTrials(t, trials, 50*time.Second, 0, 20*time.Millisecond)
	if done < 100 && trials >= 100 {
		t.Errorf("only %d trials in the time budget", done)
	}
	t.Logf("%d trials, %d sends checked", done, total)
}

// TestDurabilityStaged kills the sender later, after its threads have filled
// several chunks each: the kills land while chunks are copied out of and
// restarted in their staging places (FORMAT.md, "Layout") as well. 20
// trials (WAP5_LONG=1: 100).
func TestDurabilityStaged(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	trials := 20
	if os.Getenv("WAP5_LONG") != "" {
		trials = 100
	}
	done, total, multi := durabilityTrials(t, trials, 40*time.Second, 100*time.Millisecond, 300*time.Millisecond)
	if multi < done/2 {
		t.Errorf("only %d of %d trials wrote more than two chunks per thread", multi, done)
	}
	t.Logf("%d trials (%d with more than two chunks per thread), %d sends checked", done, multi, total)
}

// durabilityTrials runs trials of the durable snippet, each killed after
// from + a random part of spread, until budget runs out. It returns the
// trials done, the sends checked and the trials whose log holds more
// chunks than 2 per thread.
func durabilityTrials(t *testing.T, trials int, budget, from, spread time.Duration) (int, int64, int) {
	bin := snippet(t, "durable")
	lib := libPath(t)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	deadline := time.Now().Add(budget)
	multi := 0
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
		if from > 0 {
			// At least from, and until the log holds more than two chunks
			// per thread (at most 10 s more): on a loaded machine the
			// threads get less done in from, and the kills should still
			// land while chunks are staged.
			time.Sleep(from)
			for start := time.Now(); time.Since(start) < 10*time.Second && !staged(logs, shared); time.Sleep(time.Millisecond) {
			}
		}
		time.Sleep(time.Duration(rng.Int63n(int64(spread))))
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
		if staged(logs, shared) {
			multi++
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
	return done, total, multi
}

// staged reports whether the durable snippet's one log holds more than two
// 64 KiB chunks per thread named in its shared file.
func staged(logs, shared string) bool {
	raw, _ := os.ReadFile(shared)
	threads := 0
	for i := 0; i+16 <= len(raw) && i < 3*16; i += 16 {
		if binary.LittleEndian.Uint32(raw[i:]) != 0 {
			threads++
		}
	}
	files, _ := FindLogs(logs)
	if len(files) != 1 {
		return false
	}
	fi, err := os.Stat(files[0])
	return err == nil && fi.Size() > int64(4096+2*threads*65536)
}
