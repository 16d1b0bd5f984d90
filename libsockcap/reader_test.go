package libsockcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"wap5/libsockcap"
	enc "wap5/libsockcap/internal/sockcapenc"
)

const t0 = int64(1_700_000_000_000_000_000)

var hdr = enc.Header{Pid: 42, Ppid: 1, StartWall: t0, StartMono: 5_000_000, Host: "h1", Node: "n1",
	Exe: "/usr/bin/prog", BootID: "boot-1", Clock: "CLOCK_REALTIME", Argv: []string{"prog", "-x"}, NetNS: 4026531840}

var (
	srv = netip.MustParseAddrPort("10.0.0.1:80")
	cli = netip.MustParseAddrPort("10.0.0.2:40000")
	v6  = netip.MustParseAddrPort("[fe80::1]:53")
)

// buildLog writes a log with two threads whose chunks interleave in time,
// every record kind, and a second chunk for thread 7.
func buildLog(t testing.TB) []byte { return buildLogSized(hdr) }

func buildLogSized(hdr enc.Header) []byte {
	l := enc.NewLog(hdr)
	a := l.Chunk(7, t0+100)
	b := l.Chunk(8, t0+150)
	a.Fd(t0+100, 3, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
	a.Event(t0+100, enc.Event{Op: uint8(libsockcap.OpConnect), Fd: 3, Mask: enc.FRet | enc.FRemote | enc.FDur, Remote: srv, Dur: 70})
	a.Send(t0+200, false, 3, 120, 0)
	b.Fd(t0+150, 5, 3, 1, &enc.Addr{Unix: true, Path: "/run/s", Inode: 99}, &enc.Addr{Unix: true, Inode: 98}, 1234)
	b.Send(t0+250, true, 5, 10, 0)
	b.Send(t0+260, true, 5, -1, 11)
	a.Send(t0+300, true, 3, 0, 0)
	b.Fd(t0+270, 6, 2, 2, &enc.Addr{IP: netip.MustParseAddrPort("[::]:5353")}, nil, 0)
	b.Event(t0+280, enc.Event{Op: uint8(libsockcap.OpSend), Fd: 6, Mask: enc.FRet | enc.FSum | enc.FRemote, Ret: 33, Sum: 0xdeadbeef, Remote: v6})
	b.Event(t0+290, enc.Event{Op: uint8(libsockcap.OpResolve), Fd: -1, Mask: enc.FName | enc.FRet | enc.FDur, Name: "example.org", Dur: 1500})
	a.Event(t0+310, enc.Event{Op: uint8(libsockcap.OpFork), Fd: -1, Mask: enc.FRet | enc.FChild, Ret: 43, Child: 43})
	c := l.Chunk(7, t0+400) // thread 7 moves on to a new chunk: endpoints repeated there
	c.Fd(t0+400, 3, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
	c.Event(t0+400, enc.Event{Op: uint8(libsockcap.OpShutdown), Fd: 3, Mask: enc.FRet | enc.FArg, Arg: 1})
	c.Event(t0+410, enc.Event{Op: uint8(libsockcap.OpClose), Fd: 3, Mask: enc.FRet})
	c.Event(t0+420, enc.Event{Op: uint8(libsockcap.OpGap), Fd: -1, Mask: enc.FBytes, Bytes: 17})
	c.Event(t0+430, enc.Event{Op: uint8(libsockcap.OpExit), Fd: -1, Mask: enc.FArg, Arg: 3})
	return l.Bytes()
}

type row struct {
	Time                  int64
	Tid                   int32
	Op                    libsockcap.Op
	Fd, Fd2               int32
	Proto                 libsockcap.Proto
	Local, Remote         string
	Bytes, Ret, Dur, Arg  int64
	Errno, PeerPid, Child int32
	Sum                   uint32
	Name                  string
}

func rowOf(e *libsockcap.Event) row {
	return row{e.Time, e.Tid, e.Op, e.Fd, e.Fd2, e.Proto, e.Local.String(), e.Remote.String(), e.Bytes, e.Ret, e.Dur, e.Arg,
		e.Errno, e.PeerPid, e.Child, e.Sum, e.Name}
}

var wantRows = []row{
	{Time: t0 + 100, Tid: 7, Op: libsockcap.OpConnect, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, Local: "10.0.0.2:40000", Remote: "10.0.0.1:80", Dur: 70},
	{Time: t0 + 200, Tid: 7, Op: libsockcap.OpSend, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, Local: "10.0.0.2:40000", Remote: "10.0.0.1:80", Bytes: 120, Ret: 120},
	{Time: t0 + 250, Tid: 8, Op: libsockcap.OpRecv, Fd: 5, Fd2: -1, Proto: libsockcap.ProtoUnix, Local: "unix:/run/s", Remote: "unix:@98", Bytes: 10, Ret: 10, PeerPid: 1234},
	{Time: t0 + 260, Tid: 8, Op: libsockcap.OpRecv, Fd: 5, Fd2: -1, Proto: libsockcap.ProtoUnix, Local: "unix:/run/s", Remote: "unix:@98", Ret: -1, Errno: 11, PeerPid: 1234},
	{Time: t0 + 280, Tid: 8, Op: libsockcap.OpSend, Fd: 6, Fd2: -1, Proto: libsockcap.ProtoUDP, Local: "[::]:5353", Remote: "[fe80::1]:53", Bytes: 33, Ret: 33, Sum: 0xdeadbeef},
	{Time: t0 + 290, Tid: 8, Op: libsockcap.OpResolve, Fd: -1, Fd2: -1, Name: "example.org", Dur: 1500},
	{Time: t0 + 300, Tid: 7, Op: libsockcap.OpRecv, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, Local: "10.0.0.2:40000", Remote: "10.0.0.1:80"},
	{Time: t0 + 310, Tid: 7, Op: libsockcap.OpFork, Fd: -1, Fd2: -1, Ret: 43, Child: 43},
	{Time: t0 + 400, Tid: 7, Op: libsockcap.OpShutdown, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, Local: "10.0.0.2:40000", Remote: "10.0.0.1:80", Arg: 1},
	{Time: t0 + 410, Tid: 7, Op: libsockcap.OpClose, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, Local: "10.0.0.2:40000", Remote: "10.0.0.1:80"},
	{Time: t0 + 420, Tid: 7, Op: libsockcap.OpGap, Fd: -1, Fd2: -1, Bytes: 17},
	{Time: t0 + 430, Tid: 7, Op: libsockcap.OpExit, Fd: -1, Fd2: -1, Arg: 3},
}

func scanAll(t testing.TB, s *libsockcap.Scanner) ([]row, []error) {
	t.Helper()
	var rows []row
	for s.Scan() {
		rows = append(rows, rowOf(s.Event()))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, s.Warnings()
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFormatConstantsMatchHeader(t *testing.T) {
	for k, v := range enc.Consts {
		if got, ok := libsockcap.FormatConsts[k]; !ok || got != v {
			t.Errorf("%s: reader has %d, format.h %d", k, got, v)
		}
	}
}

// The C library's datagram checksum (inline crc32 instruction, and the table
// path) agrees with libsockcap.Checksum for every prefix length, unaligned
// payloads, and datagrams longer than what was stored (MSG_TRUNC).
func TestChecksumMatchesC(t *testing.T) {
	msg := make([]byte, 200)
	for i := range msg {
		msg[i] = byte(i*131 + i>>3)
	}
	for _, table := range []bool{false, true} {
		for n := 0; n <= 130; n++ {
			for _, off := range []int{0, 1, 3} {
				p := msg[off : off+n]
				if a, b := libsockcap.Checksum(p, n), enc.Sum(p, n, table); a != b {
					t.Errorf("table %v: checksum of %d bytes at +%d: Go %x, C %x", table, n, off, a, b)
				}
			}
			if n > 10 { // a truncated receive: 10 bytes stored of n
				if a, b := libsockcap.Checksum(msg[:10], n), enc.Sum(msg[:10], n, table); a != b {
					t.Errorf("table %v: checksum of 10 of %d bytes: Go %x, C %x", table, n, a, b)
				}
			}
		}
	}
}

// Round trip through the C encoder, unsealed and sealed.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "42-1.sclog", buildLog(t))
	s, err := libsockcap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Process()
	wantProc := libsockcap.Process{Host: "h1", Node: "n1", Pid: 42, Ppid: 1, Exe: "/usr/bin/prog", Argv: []string{"prog", "-x"},
		StartWall: t0, StartMono: 5_000_000, ClockSource: "CLOCK_REALTIME", BootID: "boot-1", NetNS: 4026531840, File: path}
	if !reflect.DeepEqual(*p, wantProc) {
		t.Errorf("header\n got %+v\nwant %+v", *p, wantProc)
	}
	rows, warns := scanAll(t, s)
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if !reflect.DeepEqual(rows, wantRows) {
		for i := range rows {
			if i >= len(wantRows) || rows[i] != wantRows[i] {
				t.Errorf("event %d\n got %+v", i, rows[i])
				if i < len(wantRows) {
					t.Errorf("want %+v", wantRows[i])
				}
			}
		}
		t.Fatalf("%d events, want %d", len(rows), len(wantRows))
	}
	sealed, err := libsockcap.Seal(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("unsealed file still there: %v", err)
	}
	s2, err := libsockcap.Open(sealed)
	if err != nil {
		t.Fatal(err)
	}
	rows2, warns2 := scanAll(t, s2)
	if !reflect.DeepEqual(rows, rows2) || len(warns2) != 0 || !s2.Process().Sealed {
		t.Errorf("sealed log reads differently: %d vs %d events, warnings %v", len(rows2), len(rows), warns2)
	}
	if fi, _ := os.Stat(sealed); fi.Size() > 4096 {
		t.Errorf("sealed log is %d bytes", fi.Size())
	}
}

// Damage at various offsets: a DamageError naming the offset, and the scan
// resumes at the thread's next chunk.
func TestDamage(t *testing.T) {
	good := buildLog(t)
	chunk1 := enc.HdrSize + enc.ChunkSize // thread 8's chunk
	tests := []struct {
		name      string
		mutate    func(b []byte) []byte
		offset    int64 // -1: no warning expected
		wantRows  int
		openError bool
	}{
		{"clean", func(b []byte) []byte { return b }, -1, len(wantRows), false},
		{"unknown-kind", func(b []byte) []byte { b[chunk1+enc.ChunkHdr] = 0x7f; return b }, int64(chunk1 + enc.ChunkHdr), len(wantRows) - 4, false},
		{"bad-chunk-magic", func(b []byte) []byte { b[chunk1] ^= 0xff; return b }, int64(chunk1), len(wantRows) - 4, false},
		{"uncommitted-tail", func(b []byte) []byte {
			// zero the kind byte of thread 8's third record: the rest of that chunk is not read
			return truncateChunkAt(b, chunk1, 2)
		}, -1, len(wantRows) - 3, false},
		{"header-uncommitted", func(b []byte) []byte { copy(b, make([]byte, 8)); return b }, 0, 0, false},
		{"not-a-log", func(b []byte) []byte { copy(b, "GARBAGE!"); return b }, 0, 0, true},
		{"truncated-file", func(b []byte) []byte { return b[:chunk1+enc.ChunkHdr+5] }, int64(chunk1 + enc.ChunkHdr), len(wantRows) - 8, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(append([]byte(nil), good...))
			s, err := libsockcap.NewScannerBytes("x.sclog", b)
			if tc.openError {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rows, warns := scanAll(t, s)
			if len(rows) != tc.wantRows {
				t.Errorf("%d events, want %d", len(rows), tc.wantRows)
			}
			if tc.offset < 0 {
				if len(warns) != 0 {
					t.Errorf("warnings %v", warns)
				}
				return
			}
			var de *libsockcap.DamageError
			if len(warns) == 0 || !errors.As(warns[0], &de) || de.Offset != tc.offset || de.File != "x.sclog" {
				t.Errorf("warnings %v, want one at offset %d", warns, tc.offset)
			}
		})
	}
	t.Run("record-crosses-chunk-end", func(t *testing.T) {
		l := enc.NewLog(hdr)
		c := l.Chunk(1, t0)
		n := 0
		for tm := t0; c.Send(tm, false, 3, 1000, 0); tm += 100 {
			n++
		}
		l.Chunk(1, t0+1e9).Send(t0+1e9, false, 3, 5, 0) // the thread's next chunk
		b := l.Bytes()
		pos, last := enc.HdrSize+enc.ChunkHdr, 0
		for b[pos] != 0 && pos < enc.HdrSize+enc.ChunkSize {
			last = pos
			pos = nextRecord(b, pos)
		}
		// make the last record's final varint continue past the chunk
		for i := pos - 1; i < enc.HdrSize+enc.ChunkSize; i++ {
			b[i] = 0x80
		}
		s, err := libsockcap.NewScannerBytes("x.sclog", b)
		if err != nil {
			t.Fatal(err)
		}
		rows, warns := scanAll(t, s)
		var de *libsockcap.DamageError
		if len(warns) != 1 || !errors.As(warns[0], &de) || de.Offset != int64(last) {
			t.Errorf("warnings %v, want one at %d", warns, last)
		}
		if len(rows) != n { // n-1 from the damaged chunk, 1 from the next
			t.Errorf("%d events, want %d", len(rows), n)
		}
	})
}

// multiChunkLog is a log of three threads and 12 chunks with varied records.
func multiChunkLog() []byte { return multiChunkLogN(12) }

func multiChunkLogN(chunks int) []byte {
	l := enc.NewLog(hdr)
	tm, x := t0, uint32(1)
	for ch := 0; ch < chunks; ch++ {
		c := l.Chunk(int32(1+ch%3), tm)
		c.Fd(tm, 3, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
		for i := 0; i < 2000; i++ {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			if !c.Send(tm, x&1 == 1, 3, int64(x%5000), 0) {
				break
			}
			tm += int64(500 + x%3000)
		}
	}
	return l.Bytes()
}

// zeroChunks clears the chunks from..to-1 (they are then skipped).
func zeroChunks(b []byte, from, to int) []byte {
	b = append([]byte(nil), b...)
	for k := from; k < to; k++ {
		clear(b[enc.HdrSize+k*enc.ChunkSize : enc.HdrSize+(k+1)*enc.ChunkSize])
	}
	return b
}

// A damaged sealed log: every chunk before the damage is read (and, for
// damage inside, every chunk after it), with a warning at the offset where the
// damage starts.
func TestDamagedSealed(t *testing.T) {
	raw := multiChunkLog()
	nChunks := (len(raw) - enc.HdrSize) / enc.ChunkSize
	dir := t.TempDir()
	sealed, err := libsockcap.Seal(writeFile(t, dir, "a.sclog", raw))
	if err != nil {
		t.Fatal(err)
	}
	z, _ := os.ReadFile(sealed)
	// frames[k] is where the frame of chunk k starts (frame 0 is the header,
	// the last the index)
	var frames []int
	for pos := 0; pos < len(z); {
		n, err := libsockcap.FrameEnd(z[pos:])
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, pos)
		pos += n
	}
	if len(frames) != nChunks+2 {
		t.Fatalf("%d frames, want one per chunk, the header and the index (%d)", len(frames), nChunks+2)
	}
	index := frames[len(frames)-1]
	frames = frames[1 : len(frames)-1]
	rowsOf := func(b []byte) []row {
		s, err := libsockcap.NewScannerBytes("x", b)
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := scanAll(t, s)
		return rows
	}
	chunkOff := func(k int) int64 { return int64(enc.HdrSize + k*enc.ChunkSize) }
	tests := []struct {
		name    string
		z       []byte
		want    []row
		offset  int64
		byChunk bool // read chunk by chunk (index intact), else decoded whole
	}{
		{"intact", z, rowsOf(raw), -1, true},
		{"cut-in-index", z[:len(z)-1], rowsOf(raw), chunkOff(nChunks), false},
		{"no-index", z[:index], rowsOf(raw), -1, false},
		{"index-count-wrong", func() []byte {
			b := append([]byte(nil), z...)
			b[index+16]++
			return b
		}(), rowsOf(raw), -1, false},
		{"cut-in-last-chunk", z[:index-1], rowsOf(zeroChunks(raw, nChunks-1, nChunks)), chunkOff(nChunks - 1), false},
		{"cut-in-chunk-8", z[:frames[8]+100], rowsOf(zeroChunks(raw, 8, nChunks)), chunkOff(8), false},
		{"cut-after-chunk-5", z[:frames[6]], rowsOf(zeroChunks(raw, 6, nChunks)), -1, false},
		{"cut-in-chunk-0", z[:frames[0]+7], rowsOf(zeroChunks(raw, 0, nChunks)), chunkOff(0), false},
		{"flip-in-chunk-4", func() []byte {
			b := append([]byte(nil), z...)
			b[(frames[4]+frames[5])/2] ^= 0x5a
			return b
		}(), rowsOf(zeroChunks(raw, 4, 5)), chunkOff(4), true},
		{"garbage-over-chunk-2-magic", func() []byte {
			b := append([]byte(nil), z...)
			copy(b[frames[2]:], "GARBAGE!")
			return b
		}(), rowsOf(zeroChunks(raw, 2, 3)), chunkOff(2), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := libsockcap.Open(writeFile(t, dir, "b.sclog.zst", tc.z))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.ChunkByChunk() != tc.byChunk {
				t.Errorf("read chunk by chunk: %v, want %v", s.ChunkByChunk(), tc.byChunk)
			}
			rows, warns := scanAll(t, s)
			if len(rows) != len(tc.want) || !reflect.DeepEqual(rows, tc.want) {
				t.Errorf("%d events, want %d", len(rows), len(tc.want))
			}
			if tc.offset < 0 {
				if len(warns) != 0 {
					t.Errorf("warnings %v", warns)
				}
				return
			}
			var de *libsockcap.DamageError
			if len(warns) == 0 || !errors.As(warns[0], &de) || de.Offset != tc.offset || !strings.HasSuffix(de.File, "b.sclog.zst") {
				t.Errorf("warnings %v, want one at offset %d", warns, tc.offset)
			}
		})
	}
	// A log sealed as one zstd stream (before per-chunk frames): read up to
	// the damaged block.
	t.Run("single-frame", func(t *testing.T) {
		var buf bytes.Buffer
		w, _ := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		w.Write(raw)
		w.Close()
		s, err := libsockcap.Open(writeFile(t, dir, "c.sclog.zst", buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if rows, warns := scanAll(t, s); !reflect.DeepEqual(rows, rowsOf(raw)) || len(warns) != 0 {
			t.Errorf("%d events, warnings %v", len(rows), warns)
		}
		s, err = libsockcap.Open(writeFile(t, dir, "c.sclog.zst", buf.Bytes()[:buf.Len()-10]))
		if err != nil {
			t.Fatal(err)
		}
		rows, warns := scanAll(t, s)
		if len(warns) != 1 || len(rows) == 0 {
			t.Errorf("%d events, warnings %v", len(rows), warns)
		}
	})
}

// truncateChunkAt zeroes the kind byte of the n-th record of the chunk at off.
func truncateChunkAt(b []byte, off, n int) []byte {
	pos := off + enc.ChunkHdr
	for i := 0; i < n; i++ {
		pos = nextRecord(b, pos)
	}
	b[pos] = 0
	return b
}

// nextRecord skips one record at pos (a minimal decoder for the test's records).
func nextRecord(b []byte, pos int) int {
	uv := func() uint64 {
		var v uint64
		for s := 0; ; s += 7 {
			c := b[pos]
			pos++
			v |= uint64(c&0x7f) << s
			if c < 0x80 {
				return v
			}
		}
	}
	addr := func() {
		fam := b[pos]
		pos++
		switch fam {
		case 4:
			pos += 6
		case 6:
			pos += 18
			uv()
		case 1:
			n := int(uv())
			pos += n
			uv()
		}
	}
	kind := b[pos]
	pos++
	uv() // dt
	switch kind {
	case 1, 2:
		uv()
		ret := uv()
		if ret&1 == 1 {
			uv()
		}
	case 3:
		pos++ // op
		uv()  // fd
		mask := uv()
		for bit := 0; bit < 12; bit++ {
			if mask&(1<<bit) == 0 {
				continue
			}
			switch bit {
			case 6:
				n := int(uv())
				pos += n
			case 8, 9:
				addr()
			default:
				uv()
			}
		}
	case 4:
		uv()
		pos++
		uv()
		mask := uv()
		if mask&1 != 0 {
			addr()
		}
		if mask&2 != 0 {
			addr()
		}
		if mask&4 != 0 {
			uv()
		}
	}
	return pos
}

func TestFindLogsAndSummarize(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "n1", "deep"), 0o700)
	a := writeFile(t, filepath.Join(dir, "n1"), "1-1.sclog", buildLog(t))
	writeFile(t, filepath.Join(dir, "n1", "deep"), "2-2.sclog", buildLog(t))
	writeFile(t, dir, "notes.txt", []byte("not a log"))
	// a sealed twin wins over the unsealed file
	sealedA, err := libsockcap.Seal(a)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "n1"), "1-1.sclog", buildLog(t))
	logs, err := libsockcap.FindLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "n1", "1-1.sclog.zst"), filepath.Join(dir, "n1", "deep", "2-2.sclog")}
	if !reflect.DeepEqual(logs, want) || logs[0] != sealedA {
		t.Errorf("FindLogs = %v, want %v", logs, want)
	}
	sum, err := libsockcap.Summarize(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Processes != 2 || sum.Events != 2*int64(len(wantRows)-1) || sum.Dropped != 2*17 || sum.LogBytes == 0 || len(sum.Warnings) != 0 {
		t.Errorf("Summarize = %+v", sum)
	}
	if _, err := libsockcap.FindLogs(filepath.Join(dir, "missing")); err == nil {
		t.Error("FindLogs of a missing path: no error")
	}
}

func FuzzScanner(f *testing.F) {
	small := hdr
	small.HdrSize, small.ChunkSize = 256, 4096 // small seeds: the fuzzer mutates them faster
	good := buildLogSized(small)
	f.Add(good)
	f.Add(good[:256+enc.ChunkHdr+40])
	damaged := append([]byte(nil), good...)
	damaged[256+enc.ChunkHdr+3] = 0xff
	f.Add(damaged)
	_, staged, copied, _ := stagedLogs(small) // staged chunks (version 2)
	f.Add(staged)
	f.Add(copied)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := libsockcap.NewScannerBytes("fuzz.sclog", b)
		if err != nil {
			return
		}
		// the scanner's fast path must agree with the full decoder
		*libsockcap.FastPath = false
		ref, _ := libsockcap.NewScannerBytes("fuzz.sclog", b)
		var want []libsockcap.Event
		for ref.Scan() {
			want = append(want, *ref.Event())
		}
		*libsockcap.FastPath = true
		defer func() {
			var got []libsockcap.Event
			s, _ := libsockcap.NewScannerBytes("fuzz.sclog", b)
			for s.Scan() {
				got = append(got, *s.Event())
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(s.Warnings(), ref.Warnings()) || s.RecordBytes() != ref.RecordBytes() {
				t.Fatalf("fast path differs: %d events, full decoder %d", len(got), len(want))
			}
		}()
		n := 0
		last := map[int32]int64{}
		for s.Scan() {
			e := s.Event()
			if e.Op == libsockcap.OpNone || e.Proc == nil {
				t.Fatalf("bad event %+v", e)
			}
			last[e.Tid] = e.Time
			n++
		}
		for _, w := range s.Warnings() {
			var de *libsockcap.DamageError
			if !errors.As(w, &de) || de.Offset < 0 || de.Offset > int64(len(b)) {
				t.Fatalf("warning %v", w)
			}
		}
	})
}

// Scanning allocates per log and per thread, not per chunk or event: twice
// the chunks cost at most the growth of the chunk lists.
func TestScanAllocs(t *testing.T) {
	allocs := func(b []byte) float64 {
		return testing.AllocsPerRun(3, func() {
			s, err := libsockcap.NewScannerBytes("x", b)
			if err != nil {
				t.Fatal(err)
			}
			for s.Scan() {
			}
		})
	}
	a1, a2 := allocs(multiChunkLogN(12)), allocs(multiChunkLogN(24)) // 3 threads
	// a chunk list per thread grows once more, so may the index map
	if a2 > a1+3+2 {
		t.Errorf("%v allocations for 24 chunks, %v for 12", a2, a1)
	}
}

// FuzzDecodeSealed: damaged sealed logs never panic, and damage offsets lie
// within the output.
func FuzzDecodeSealed(f *testing.F) {
	small := hdr
	small.HdrSize, small.ChunkSize = 256, 4096
	raw := buildLogSized(small)
	dir := f.TempDir()
	p := filepath.Join(dir, "s.sclog")
	os.WriteFile(p, raw, 0o600)
	sealed, err := libsockcap.Seal(p)
	if err != nil {
		f.Fatal(err)
	}
	z, _ := os.ReadFile(sealed)
	f.Add(z)
	f.Add(z[:len(z)/2])
	f.Fuzz(func(t *testing.T, z []byte) {
		var offs []int64
		out, err := libsockcap.DecodeSealed(z, func(off int64, msg string) { offs = append(offs, off) })
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offs {
			if o < 0 || o > int64(len(out)) {
				t.Fatalf("damage offset %d outside %d bytes", o, len(out))
			}
		}
		// the scanner: chunk by chunk when the index is intact, else whole
		s, err := libsockcap.NewSealedBytes("fuzz.sclog.zst", z)
		if err != nil {
			return
		}
		var events []string
		for s.Scan() {
			if e := s.Event(); e.Op == libsockcap.OpNone || e.Proc == nil {
				t.Fatalf("bad event %+v", e)
			}
			events = append(events, fmt.Sprintf("%d %v %d %d", s.Event().Time, s.Event().Op, s.Event().Fd, s.Event().Bytes))
		}
		damaged := len(s.Warnings()) > 0
		s.Close()
		// Open maps the file (pages dropped as chunks are decoded): the
		// same events as from memory. Intact logs only: a damaged one is
		// decoded whole from the mapping by the code above, and a third
		// decode of a frame claiming a huge window (hundreds of MB each,
		// testdata/fuzz) starves the fuzzer.
		if len(offs) > 0 || damaged || len(z) < 4 || string(z[:4]) != "\x28\xb5\x2f\xfd" {
			return
		}
		p := filepath.Join(t.TempDir(), "m.sclog.zst")
		if err := os.WriteFile(p, z, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := libsockcap.Open(p)
		if err != nil {
			return
		}
		i := 0
		for m.Scan() {
			e := fmt.Sprintf("%d %v %d %d", m.Event().Time, m.Event().Op, m.Event().Fd, m.Event().Bytes)
			if i >= len(events) || e != events[i] {
				t.Fatalf("mapped event %d: %s, from memory %d events", i, e, len(events))
			}
			i++
		}
		if i != len(events) {
			t.Fatalf("mapped: %d events, from memory %d", i, len(events))
		}
		m.Close()
	})
}

// BenchmarkScanSealed opens and scans a sealed log of 3 threads, 12 chunks.
func BenchmarkScanSealed(b *testing.B) {
	dir := b.TempDir()
	p, err := libsockcap.Seal(writeFile(b, dir, "a.sclog", multiChunkLog()))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := libsockcap.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for s.Scan() {
			n++
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

func BenchmarkScan(b *testing.B) {
	l := enc.NewLog(hdr)
	c := l.Chunk(1, t0)
	c.Fd(t0, 3, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
	n := 0
	for tm := t0; c.Send(tm, n%2 == 1, 3, int64(100+n%50), 0); tm += 1500 {
		n++
	}
	data := l.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := libsockcap.NewScannerBytes("bench", data)
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for s.Scan() {
			k++
		}
		if k != n {
			b.Fatalf("%d events, want %d", k, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// BenchmarkScanThreads: four threads' chunks merged in time order.
func BenchmarkScanThreads(b *testing.B) {
	l := enc.NewLog(hdr)
	n := 0
	for ch := 0; ch < 8; ch++ {
		tm := t0 + int64(ch%4)*100
		c := l.Chunk(int32(1+ch%4), tm)
		c.Fd(tm, 3, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
		for ; c.Send(tm, n%2 == 1, 3, int64(100+n%50), 0); tm += 1500 {
			n++
		}
	}
	data := l.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := libsockcap.NewScannerBytes("bench", data)
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for s.Scan() {
			k++
		}
		if k != n {
			b.Fatalf("%d events, want %d", k, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	l := enc.NewLog(enc.Header{Pid: 7, Host: "web1", Node: "web1", StartWall: t0})
	c := l.Chunk(7, t0)
	c.Fd(t0, 4, 1, 1, &enc.Addr{IP: srv}, &enc.Addr{IP: cli}, 0)
	c.Send(t0+1000, true, 4, 312, 0)
	c.Send(t0+250_000, false, 4, 1400, 0)
	path := filepath.Join(dir, "7-1.sclog")
	os.WriteFile(path, l.Bytes(), 0o600)

	s, err := libsockcap.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println("pid", s.Process().Pid, "on", s.Process().Node)
	for s.Scan() {
		e := s.Event()
		fmt.Println(e.Time-t0, e.Op, e.Proto, e.Local, e.Remote, e.Bytes)
	}
	// Output:
	// pid 7 on web1
	// 1000 recv tcp 10.0.0.1:80 10.0.0.2:40000 312
	// 250000 send tcp 10.0.0.1:80 10.0.0.2:40000 1400
}

func ExampleSummarize() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	for pid := int32(1); pid <= 2; pid++ {
		l := enc.NewLog(enc.Header{Pid: pid, Node: "n1", StartWall: t0})
		c := l.Chunk(pid, t0)
		c.Fd(t0, 4, 1, 1, &enc.Addr{IP: cli}, &enc.Addr{IP: srv}, 0)
		c.Send(t0+10, false, 4, 100, 0)
		c.Send(t0+20, true, 4, 200, 0)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-1.sclog", pid)), l.Bytes(), 0o600)
	}
	sum, err := libsockcap.Summarize(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d processes, %d events, %d dropped\n", sum.Processes, sum.Events, sum.Dropped)
	// Output:
	// 2 processes, 4 events, 0 dropped
}

var _ = bytes.Equal

// The network namespace header field: absent in older logs (0), 8 bytes
// little-endian, or damaged (a warning naming the offset, 0).
func TestHeaderNetNS(t *testing.T) {
	for _, tc := range []struct {
		name  string
		netns uint64
		// patch rewrites the field's length in the built header (0: keep).
		patch uint16
		want  uint64
		warn  string
	}{
		{name: "absent", want: 0},
		{name: "present", netns: 4026531840, want: 4026531840},
		{name: "large", netns: 1<<63 | 5, want: 1<<63 | 5},
		{name: "short", netns: 4026531840, patch: 4, want: 0, warn: "network namespace field of 4 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hdr
			h.NetNS = tc.netns
			l := enc.NewLog(h)
			b := l.Bytes()
			if tc.patch != 0 {
				// The field is the last string: tag 7, len u16, 8 bytes.
				le := binary.LittleEndian
				slen := int(le.Uint32(b[72:]))
				at := 80 + slen - 11
				if b[at] != 7 {
					t.Fatalf("tag %d at %d, want 7", b[at], at)
				}
				le.PutUint16(b[at+1:], tc.patch)
				le.PutUint32(b[72:], uint32(slen-int(8-tc.patch)))
			}
			path := writeFile(t, t.TempDir(), "42-1.sclog", b)
			s, err := libsockcap.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Process().NetNS; got != tc.want {
				t.Errorf("NetNS %d, want %d", got, tc.want)
			}
			var ws []string
			for _, w := range s.Warnings() {
				ws = append(ws, w.Error())
			}
			if tc.warn == "" && len(ws) != 0 || tc.warn != "" && (len(ws) != 1 || !strings.Contains(ws[0], tc.warn) || !strings.Contains(ws[0], path)) {
				t.Errorf("warnings %q, want one containing %q", ws, tc.warn)
			}
		})
	}
}
