package libsockcap_test

import (
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"wap5/libsockcap"
)

// Sealed logs share their zstd decoders (chunkDecoders, a free list): logs of different
// contents read in turns, and read at once from several goroutines, give
// the events each gives read alone.
func TestSealedSharedDecoders(t *testing.T) {
	dir := t.TempDir()
	var zs [][]byte
	for i, raw := range [][]byte{multiChunkLogN(12), buildLog(t), multiChunkLogN(5), multiChunkLogN(24)} {
		p := writeFile(t, dir, fmt.Sprintf("l%d.sclog", i), raw)
		sp, err := libsockcap.Seal(p)
		if err != nil {
			t.Fatal(err)
		}
		z, err := os.ReadFile(sp)
		if err != nil {
			t.Fatal(err)
		}
		zs = append(zs, z)
	}
	open := func(i int) *libsockcap.Scanner {
		s, err := libsockcap.NewSealedBytes(fmt.Sprintf("l%d", i), zs[i])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	alone := make([][]row, len(zs))
	for i := range zs {
		alone[i], _ = scanAll(t, open(i))
		if len(alone[i]) == 0 {
			t.Fatalf("log %d: no events", i)
		}
	}
	// In turns: one event of each log at a time.
	ss := make([]*libsockcap.Scanner, len(zs))
	got := make([][]row, len(zs))
	for i := range zs {
		ss[i] = open(i)
	}
	for more := true; more; {
		more = false
		for i, s := range ss {
			if s != nil && s.Scan() {
				got[i] = append(got[i], rowOf(s.Event()))
				more = true
			} else {
				ss[i] = nil
			}
		}
	}
	if !reflect.DeepEqual(got, alone) {
		t.Errorf("read in turns:\n%v\nalone:\n%v", got, alone)
	}
	// At once, from goroutines (with -race: no decoder used by two).
	var wg sync.WaitGroup
	res := make([][]row, 4*len(zs))
	for g := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := libsockcap.NewSealedBytes("g", zs[g%len(zs)])
			if err != nil {
				t.Error(err)
				return
			}
			for s.Scan() {
				res[g] = append(res[g], rowOf(s.Event()))
			}
		}()
	}
	wg.Wait()
	for g := range res {
		if !reflect.DeepEqual(res[g], alone[g%len(zs)]) {
			t.Errorf("goroutine %d: %d events, want %d", g, len(res[g]), len(alone[g%len(zs)]))
		}
	}
}
