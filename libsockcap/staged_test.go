package libsockcap_test

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"wap5/libsockcap"
	enc "wap5/libsockcap/internal/sockcapenc"
)

// stagedLogs builds what the library leaves behind when thread 1 keeps its
// chunk mapping and copies full chunks out (FORMAT.md, "Layout"): place 0
// is thread 1's staging place, its chunks are indexes 1 and 3, thread 2's
// are 2 and 4. ref has place 0 empty and every chunk at its index; the
// other logs hold the same events in the states a kill can leave:
//   - staged: chunk 3 still at place 0 only (not copied yet);
//   - copied: chunk 3 at place 0 and its whole copy at 3 (killed before the
//     place was reused);
//   - half: the copy's body at 3 but not its header (killed in between).
func stagedLogs(h enc.Header) (ref, staged, copied, half []byte) {
	l := enc.NewLog(h)
	hs, cs := enc.HdrSize, enc.ChunkSize
	if h.HdrSize != 0 {
		hs, cs = h.HdrSize, h.ChunkSize
	}
	tm, x := t0, uint32(7)
	fill := func(c *enc.Chunk, fd int) {
		c.Fd(tm, fd, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
		for i := 0; i < 300; i++ {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			c.Send(tm, x&1 == 1, fd, int64(x%5000), 0)
			tm += int64(500 + x%3000)
		}
	}
	l.Chunk(1, tm) // place 0: emptied below
	for k, tid := range []int32{1, 2, 1, 2} {
		fill(l.Chunk(tid, tm), 3+k%2)
	}
	ref = append([]byte(nil), l.Bytes()...)
	place := func(k int) []byte { return ref[hs+k*cs : hs+(k+1)*cs] }
	clear(place(0))

	staged = append([]byte(nil), ref...)
	copy(staged[hs:], place(3)) // its header keeps index 3
	clear(staged[hs+3*cs : hs+4*cs])

	copied = append([]byte(nil), ref...)
	copy(copied[hs:], place(3))

	half = append([]byte(nil), copied...)
	clear(half[hs+3*cs : hs+3*cs+enc.ChunkHdr])
	return ref, staged, copied, half
}

func TestStagedChunks(t *testing.T) {
	ref, staged, copied, half := stagedLogs(hdr)
	rowsOf := func(name string, b []byte, sealed bool) ([]row, []error) {
		t.Helper()
		var s *libsockcap.Scanner
		var err error
		if sealed {
			p, serr := libsockcap.Seal(writeFile(t, t.TempDir(), name+".sclog", b))
			if serr != nil {
				t.Fatal(serr)
			}
			s, err = libsockcap.Open(p)
			if err == nil && !s.ChunkByChunk() {
				t.Errorf("%s: sealed log not read chunk by chunk", name)
			}
		} else {
			s, err = libsockcap.NewScannerBytes(name, b)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return scanAll(t, s)
	}
	want, w := rowsOf("ref", ref, false)
	if len(w) != 0 || len(want) != 4*301-4 {
		t.Fatalf("reference log: %d events, warnings %v", len(want), w)
	}
	for _, sealed := range []bool{false, true} {
		for _, c := range []struct {
			name string
			b    []byte
		}{{"staged", staged}, {"copied", copied}, {"half", half}} {
			got, w := rowsOf(c.name, c.b, sealed)
			if len(w) != 0 {
				t.Errorf("%s (sealed %v): warnings %v", c.name, sealed, w)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (sealed %v): %d events differ from the reference's %d", c.name, sealed, len(got), len(want))
			}
		}
	}
	// a version 1 log has no staged chunks: a header naming another index is damage
	v1 := append([]byte(nil), staged...)
	binary.LittleEndian.PutUint32(v1[8:], 1)
	got, w := rowsOf("v1", v1, false)
	if len(w) != 1 || !strings.Contains(w[0].Error(), "impossible chunk header") || len(got) != len(want)-300 {
		t.Errorf("version 1 with a staged chunk: %d events (want %d), warnings %v", len(got), len(want)-300, w)
	}
}
