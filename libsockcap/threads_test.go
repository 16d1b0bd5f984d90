package libsockcap_test

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"wap5/libsockcap"
	enc "wap5/libsockcap/internal/sockcapenc"
)

// threadsChunk is the chunk size of the many-threads logs: small, so that
// thousands of threads fit in a test, yet large against the per-thread
// bookkeeping the reader may keep.
const threadsChunk = 16384

// threadsFd is the fd every thread uses: high, so that a thread's fd table
// (a slice indexed by fd) costs what it costs in a busy server.
const threadsFd = 1500

// manyThreadsLog builds a log of n short-lived threads, one request each
// (one thread per request, as a thread-per-connection server does): thread
// j (in file order) starts at start(j), a permutation of the file order, so
// the merge cannot simply follow the file; pairs of threads share a start
// time and event times (ties go by file order). Each thread lives ~3 µs,
// about as long as 3 other threads; every 10th thread has a second chunk,
// written after the chunks of threads that started later. It returns the
// log and the events a merge of all threads at once yields, in order.
//
// With recycle, threads start in file order and thread j takes the thread id
// of thread j-n/2, as the kernel recycles ids: one id's chunks belong to two
// threads far apart in time (thread_seq starts at 0 again).
func manyThreadsLog(n int, recycle bool) ([]byte, []row) {
	h := hdr
	h.ChunkSize = threadsChunk
	l := enc.NewLog(h)
	type ev struct {
		r     row
		order int // the place of the thread id's first chunk in the file
		seq   int
	}
	var evs []ev
	add := func(j, seq int, r row) {
		if recycle {
			j %= n / 2 // ties go by the thread id's first chunk
		}
		evs = append(evs, ev{r, j, seq})
	}
	var second []func()
	var seqs []uint32 // each chunk's thread_seq
	for j := 0; j < n; j++ {
		tid := int32(100 + j)
		k := (j * 7919) % n // start order
		if recycle {
			tid, k = int32(100+j%(n/2)), j
		}
		base := t0 + int64(k/2)*1000
		c := l.Chunk(tid, base)
		seqs = append(seqs, 0)
		c.Fd(base, threadsFd, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
		c.Send(base+500, true, threadsFd, 300, 0)
		c.Send(base+1500, false, threadsFd, 1200, 0)
		tcp := func(tm int64, op libsockcap.Op, b, ret int64) row {
			return row{Time: tm, Tid: tid, Op: op, Fd: threadsFd, Fd2: -1, Proto: libsockcap.ProtoTCP,
				Local: cli.String(), Remote: srv.String(), Bytes: b, Ret: ret}
		}
		add(j, 0, tcp(base+500, libsockcap.OpRecv, 300, 300))
		add(j, 1, tcp(base+1500, libsockcap.OpSend, 1200, 1200))
		end := func(c *enc.Chunk, tm int64, seq int) {
			c.Event(tm, enc.Event{Op: uint8(libsockcap.OpClose), Fd: threadsFd, Mask: enc.FRet})
			add(j, seq, tcp(tm, libsockcap.OpClose, 0, 0))
		}
		if j%10 != 0 {
			end(c, base+3000, 2)
			continue
		}
		// the rest of this thread goes into a chunk of its own, later in the file
		second = append(second, func() {
			tm := base + 2000
			c := l.Chunk(tid, tm)
			seqs = append(seqs, 1)
			c.Fd(tm, threadsFd, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
			c.Send(tm, false, threadsFd, 7, 0)
			add(j, 2, tcp(tm, libsockcap.OpSend, 7, 7))
			end(c, base+3000, 3)
		})
		if len(second) == 4 {
			for _, f := range second {
				f()
			}
			second = second[:0]
		}
	}
	for _, f := range second {
		f()
	}
	b := l.Bytes()
	for i, q := range seqs {
		binary.LittleEndian.PutUint32(b[enc.HdrSize+i*threadsChunk+24:], q)
	}
	slices.SortFunc(evs, func(a, b ev) int {
		return cmp.Or(cmp.Compare(a.r.Time, b.r.Time), cmp.Compare(a.order, b.order), cmp.Compare(a.seq, b.seq))
	})
	rows := make([]row, len(evs))
	for i, e := range evs {
		rows[i] = e.r
	}
	return b, rows
}

// scanMeasured opens path and scans it, comparing each event with want and
// sampling the heap in use every 256 events. It returns the peak heap in use
// above the heap before Open, and the bytes allocated.
func scanMeasured(t *testing.T, path string, want []row) (peak, alloc uint64) {
	t.Helper()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, total := ms.HeapInuse, ms.TotalAlloc
	sample := func() {
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > base && ms.HeapInuse-base > peak {
			peak = ms.HeapInuse - base
		}
	}
	s, err := libsockcap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for s.Scan() {
		if n >= len(want) {
			t.Fatalf("event %d: %+v, want the end", n, rowOf(s.Event()))
		}
		if r := rowOf(s.Event()); r != want[n] {
			t.Fatalf("event %d: %+v, want %+v", n, r, want[n])
		}
		n++
		if n%256 == 0 {
			sample()
		}
	}
	sample()
	if n != len(want) {
		t.Fatalf("%d events, want %d", n, len(want))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("warnings: %v", w)
	}
	runtime.ReadMemStats(&ms)
	return peak, ms.TotalAlloc - total
}

// Thousands of short-lived threads: the events come out exactly as a merge
// of all threads at once would give them, and memory follows the threads
// alive at one time (~4 here), not the threads the log ever had: with 4 000
// threads the reader neither holds nor allocates a chunk (or an fd table)
// per thread. Reading every thread up front cost ≥ 16 KiB per thread
// allocated and in use (sealed: the decoded chunk) or ~150 KiB (the fd table
// of fd 1500).
func TestManyThreadsMemory(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		sealed  bool
		n       int
		recycle bool
	}{
		{"raw/1000", false, 1000, false},
		{"raw/4000", false, 4000, false},
		{"sealed/1000", true, 1000, false},
		{"sealed/4000", true, 4000, false},
		{"raw/4000/recycled-tids", false, 4000, true},
		{"sealed/4000/recycled-tids", true, 4000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, want := manyThreadsLog(tc.n, tc.recycle)
			path := writeFile(t, dir, fmt.Sprintf("%d-%d.sclog", tc.n, len(raw)), raw)
			if tc.sealed {
				var err error
				if path, err = libsockcap.Seal(path); err != nil {
					t.Fatal(err)
				}
			}
			raw = nil
			peak, alloc := scanMeasured(t, path, want)
			// the bounds: per thread, an eighth of a chunk (its place in the
			// merge, its chunk list: ~1.5 KiB measured) plus, per event, the
			// strings rowOf makes; 4 MiB for the rest (the compressed file,
			// the decoder, the file's fd table, a few live threads)
			limit := uint64(tc.n)*threadsChunk/8 + uint64(len(want))*64 + 4<<20
			t.Logf("%d threads, %d events: peak heap in use +%d KiB, allocated %d KiB (limit %d KiB)",
				tc.n, len(want), peak>>10, alloc>>10, limit>>10)
			if peak > limit {
				t.Errorf("peak heap in use grew by %d KiB, limit %d KiB", peak>>10, limit>>10)
			}
			if alloc > limit {
				t.Errorf("allocated %d KiB, limit %d KiB", alloc>>10, limit>>10)
			}
		})
	}
}

// BenchmarkScanManyThreads opens and scans a sealed log of 4 000 short-lived
// threads (one 16 KiB chunk each, ~4 alive at a time).
func BenchmarkScanManyThreads(b *testing.B) {
	raw, want := manyThreadsLog(4000, false)
	p := filepath.Join(b.TempDir(), "m.sclog")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	sealed, err := libsockcap.Seal(p)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := libsockcap.Open(sealed)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for s.Scan() {
			n++
		}
		s.Close()
		if n != len(want) {
			b.Fatalf("%d events, want %d", n, len(want))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(want)), "ns/event")
}
