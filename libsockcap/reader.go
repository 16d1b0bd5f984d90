package libsockcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
)

// DamageError is a non-fatal problem in a log: the reader skips to the next
// chunk and goes on. Offset is in the uncompressed log.
type DamageError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Msg)
}

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// fdInfo is what an SC_K_FD record says about an fd.
type fdInfo struct {
	proto   Proto
	sotype  int32
	local   Endpoint
	remote  Endpoint
	peerPid int32
}

// fdTable maps fds to what their FD records said: a slice for small fds
// (no allocation per record, no hashing), a map for the rest. reset forgets
// everything in O(1) by moving to a new generation.
type fdTable struct {
	gen   uint32
	small []fdSlot
	big   map[int32]*fdInfo
}

type fdSlot struct {
	gen uint32
	fi  fdInfo
}

const fdTableSmall = 4096

func (t *fdTable) reset() {
	t.gen++
	if t.big != nil {
		clear(t.big)
	}
}

func (t *fdTable) get(fd int32) *fdInfo {
	if uint32(fd) < uint32(len(t.small)) {
		if sl := &t.small[fd]; sl.gen == t.gen+1 {
			return &sl.fi
		}
		return nil
	}
	if fd >= fdTableSmall {
		return t.big[fd]
	}
	return nil
}

// slot is fd's entry to fill in place (its fields all to be set), nil for
// a negative fd.
func (t *fdTable) slot(fd int32) *fdInfo {
	switch {
	case fd < 0:
		return nil
	case fd < fdTableSmall:
		if int(fd) >= len(t.small) {
			t.small = append(t.small, make([]fdSlot, int(fd)+1-len(t.small))...)
		}
		sl := &t.small[fd]
		sl.gen = t.gen + 1
		return &sl.fi
	default:
		if t.big == nil {
			t.big = map[int32]*fdInfo{}
		}
		c := &fdInfo{}
		t.big[fd] = c
		return c
	}
}

func (t *fdTable) put(fd int32, fi *fdInfo) {
	switch {
	case fd < 0:
	case fd < fdTableSmall:
		if int(fd) >= len(t.small) {
			t.small = append(t.small, make([]fdSlot, int(fd)+1-len(t.small))...)
		}
		t.small[fd] = fdSlot{gen: t.gen + 1, fi: *fi}
	default:
		if t.big == nil {
			t.big = map[int32]*fdInfo{}
		}
		c := *fi
		t.big[fd] = &c
	}
}

// stream is one thread's chunks, decoded in order.
type stream struct {
	order  int    // position in the file, for stable ties
	start  int64  // base_time of its next chunk (record clock): when the merge needs this stream
	parked bool   // advance stopped at the end of a chunk: the rest waits in pending
	chunks []int  // chunk offsets
	data   []byte // what pos and end index: the whole log, or (sealed) the current chunk
	base   int    // offset of data[0] in the log
	buf    []byte // a sealed log's current chunk, decoded
	ci     int
	pos    int // next record
	end    int // end of current chunk
	t      int64
	tid    int32
	fds    fdTable            // this chunk's fd records
	peers  map[int32]Endpoint // this chunk's last datagram peer per fd
	ev     Event
	// hot: ev is a SEND/RECV event on fd hotFd whose names came from this
	// chunk's FD record, none since (the fast decoder's shortcut)
	hot   bool
	hotFd int32
}

// streamHeap is a min-heap of streams by their current event's time (ties:
// file order). Typed, not container/heap: no interface calls per event.
type streamHeap []*stream

func streamLess(a, b *stream) bool {
	if a.ev.Time != b.ev.Time {
		return a.ev.Time < b.ev.Time
	}
	return a.order < b.order
}

func (h streamHeap) down(i int) {
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && streamLess(h[r], h[c]) {
			c = r
		}
		if !streamLess(h[c], x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// push adds a stream and sifts it up.
func (h *streamHeap) push(st *stream) {
	*h = append(*h, st)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !streamLess(st, a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = st
}

// pendingHeap is a min-heap of the streams waiting for the merge, by the
// base time of their next chunk (ties: file order). A sorted slice is one.
type pendingHeap []*stream

func pendingLess(a, b *stream) bool {
	if a.start != b.start {
		return a.start < b.start
	}
	return a.order < b.order
}

func (h *pendingHeap) pop() *stream {
	a := *h
	n := len(a) - 1
	top := a[0]
	x := a[n]
	a[n] = nil
	a = a[:n]
	*h = a
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && pendingLess(a[r], a[c]) {
			c = r
		}
		if !pendingLess(a[c], x) {
			break
		}
		a[i] = a[c]
		i = c
	}
	a[i] = x
	return top
}

func (h *pendingHeap) push(st *stream) {
	*h = append(*h, st)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !pendingLess(st, a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = st
}

// Scanner reads the events of one log, committed records only, merged across
// threads into time order. It is shaped like bufio.Scanner.
type Scanner struct {
	// Where the next record of the current thread is, its descriptor's
	// entry and its event (addresses: hints for Prefetch, noted by the
	// fast decoder; pfRec 0 when it did not read the last event).
	pfRec, pfSlot, pfEv uintptr
	peek                bool // EnablePrefetch
	file                string
	data                []byte
	proc                Process
	chunkSize           int
	clock               uint32
	startWall           int64
	startClk            int64
	procFds             fdTable // latest fd records of any thread
	heap                streamHeap
	// pending holds the threads the merge has not reached yet, by the base
	// time of their next chunk (ties: file order): a chunk is decoded only
	// when the merge gets to that time, and a thread's state is released at
	// the end of each chunk, so memory follows the threads alive at one
	// time, not all the threads the log ever had (a thread id the kernel
	// recycled waits here again between its threads).
	pending  pendingHeap
	free     []streamBufs // exhausted streams' buffers and fd tables, for the next threads
	cur      *stream      // the stream whose ev is the current event; advanced by the next Scan
	ev       Event        // the event before the first Scan and after the last
	warnings []error
	err      error
	nchunks  int64
	version  uint32
	recBytes int64
	mapped   []byte     // the mmap of an unsealed log, until Close
	lazy     *sealedLog // a sealed log with an index: chunks decoded as the scan reaches them
}

// Open reads a log, sealed (zstd) or not. It fails only when the file cannot
// be read or is not a libsockcap log; damage inside is reported by Warnings.
func Open(path string) (*Scanner, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	s := &Scanner{file: path}
	var data []byte
	switch {
	case n == 4 && bytes.Equal(magic[:], zstdMagic):
		s.proc.Sealed = true
		// Sealed logs are mapped too when they can be: the compressed
		// bytes then stay out of the Go heap (whose collector would let it
		// grow to twice them), and the pages of chunks already decoded
		// are dropped as the scan goes (sealedLog.drop), so memory does
		// not grow with the log.
		var z []byte
		mapped := false
		if fi.Mode().IsRegular() && fi.Size() > 0 {
			if m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED); err == nil {
				z, mapped = m, true
			}
		}
		if !mapped {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if z, err = io.ReadAll(f); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		var walk io.ReaderAt
		if mapped {
			walk = f
		}
		if data, err = s.loadSealed(z, mapped, walk); err != nil {
			if mapped {
				syscall.Munmap(z)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if mapped {
			if s.lazy != nil {
				s.mapped = z // read chunk by chunk until Close
				runtime.SetFinalizer(s, (*Scanner).Close)
			} else {
				syscall.Munmap(z) // decoded whole (damage): not needed any more
			}
		}
	case fi.Size() > 0 && fi.Mode().IsRegular():
		// unsealed logs are mapped, not copied: they can be large, and a
		// live process may still be appending (committed records only are read)
		m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		s.mapped = m
		runtime.SetFinalizer(s, (*Scanner).Close)
		data = m
	default:
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if data, err = io.ReadAll(f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	s.data = data
	if err := s.parseHeader(); err != nil {
		if s.proc.Sealed && len(s.warnings) > 0 {
			// a sealed file whose damage left no readable header: no events, the damage reported
			s.proc.File = path
			s.data = nil
			return s, nil
		}
		s.Close()
		return nil, err
	}
	s.index()
	return s, nil
}

// loadSealed prepares a sealed log: read chunk by chunk by its index when
// the index and every frame are intact, else decoded whole (decodeSealed,
// which reports the damage). It returns the bytes to parse the header from.
func (s *Scanner) loadSealed(z []byte, mapped bool, walk io.ReaderAt) ([]byte, error) {
	s.proc.Sealed = true
	var data []byte
	if s.lazy, data = openSealed(z, mapped, walk); s.lazy != nil {
		return data, nil
	}
	return decodeSealed(z, func(off int64, msg string) { s.warn(off, "%s", msg) })
}

// newSealedScanner reads a sealed log from memory (tests and fuzzing).
func newSealedScanner(name string, z []byte) (*Scanner, error) {
	s := &Scanner{file: name}
	data, err := s.loadSealed(z, false, nil)
	if err != nil {
		return nil, err
	}
	s.data = data
	if err := s.parseHeader(); err != nil {
		if len(s.warnings) > 0 {
			s.data = nil
			return s, nil
		}
		return nil, err
	}
	s.index()
	return s, nil
}

// newScanner reads a log from memory (tests and fuzzing).
func newScanner(name string, data []byte) (*Scanner, error) {
	s := &Scanner{file: name, data: data}
	if err := s.parseHeader(); err != nil {
		return nil, err
	}
	s.index()
	return s, nil
}

func (s *Scanner) warn(off int64, format string, a ...any) {
	s.warnings = append(s.warnings, &DamageError{File: s.file, Offset: off, Msg: fmt.Sprintf(format, a...)})
}

func (s *Scanner) parseHeader() error {
	d := s.data
	if len(d) < hdrStringsOff || string(d[:8]) != fileMagic {
		if len(d) >= 8 && bytes.Equal(d[:8], make([]byte, 8)) {
			// Created but killed before the header was committed.
			s.proc.File = s.file
			s.warn(0, "header never committed (process died while creating its log)")
			s.data = nil
			return nil
		}
		return fmt.Errorf("%s: not a libsockcap log (bad magic)", s.file)
	}
	le := binary.LittleEndian
	ver := le.Uint32(d[8:])
	hdrSize := int(le.Uint32(d[12:]))
	chunk := int(le.Uint32(d[16:]))
	if ver != formatVersion && ver != 1 {
		return fmt.Errorf("%s: log format version %d, this reader knows %d", s.file, ver, formatVersion)
	}
	if hdrSize < hdrStringsOff || hdrSize > 1<<20 || chunk < minChunkSize || chunk > maxChunkSize || chunk&(chunk-1) != 0 {
		return fmt.Errorf("%s: offset 12: impossible header sizes (header %d, chunk %d)", s.file, hdrSize, chunk)
	}
	if len(d) < hdrSize {
		s.warn(int64(len(d)), "file ends inside the header")
		hdrSize = len(d)
	}
	s.chunkSize = chunk
	s.clock = le.Uint32(d[20:])
	s.nchunks = int64(le.Uint64(d[24:]))
	s.version = ver
	p := &s.proc
	p.File = s.file
	p.Clock = s.clock
	p.Dropped = int64(le.Uint64(d[32:]))
	p.StartWall = int64(le.Uint64(d[40:]))
	s.startWall = p.StartWall
	s.startClk = int64(le.Uint64(d[48:]))
	p.StartMono = int64(le.Uint64(d[56:]))
	p.Pid = int32(le.Uint32(d[64:]))
	p.Ppid = int32(le.Uint32(d[68:]))
	slen := int(le.Uint32(d[72:]))
	if s.clock != clockRealtime && s.clock != clockMonotonic {
		s.warn(20, "unknown clock id %d; timestamps taken as wall clock", s.clock)
		s.clock = clockRealtime
	}
	if hdrStringsOff+slen > hdrSize {
		s.warn(72, "header strings length %d exceeds the header", slen)
		slen = hdrSize - hdrStringsOff
	}
	str := d[hdrStringsOff : hdrStringsOff+slen]
	for off := 0; off < len(str); {
		if len(str)-off < 3 {
			s.warn(int64(hdrStringsOff+off), "truncated header string")
			break
		}
		tag, n := str[off], int(le.Uint16(str[off+1:]))
		off += 3
		if n > len(str)-off {
			s.warn(int64(hdrStringsOff+off-3), "header string %d overruns the header", tag)
			break
		}
		v := string(str[off : off+n])
		off += n
		switch tag {
		case strHost:
			p.Host = v
		case strNode:
			p.Node = v
		case strExe:
			p.Exe = v
		case strArgv:
			p.Argv = strings.Split(strings.TrimRight(v, "\x00"), "\x00")
		case strBootID:
			p.BootID = v
		case strClockName:
			p.ClockSource = v
		case strNetNS:
			if n != 8 {
				s.warn(int64(hdrStringsOff+off-n-3), "network namespace field of %d bytes, want 8", n)
				break
			}
			p.NetNS = le.Uint64(str[off-n:])
		}
	}
	s.data = d
	return nil
}

// index groups committed chunks by thread, in the order of their indexes:
// the file's order, except that a staged chunk (version 2: a chunk whose
// header names another index than its place) counts at the index it names,
// and is left out when that index holds its copy already.
func (s *Scanner) index() {
	if s.data == nil || s.chunkSize == 0 {
		return
	}
	le := binary.LittleEndian
	hdrSize := int(le.Uint32(s.data[12:]))
	byTid := map[int32]*stream{}
	var order []*stream
	end := len(s.data)
	if s.lazy != nil {
		if s.lazy.chunkSize != s.chunkSize || hdrSize != len(s.data) {
			s.lazy = nil // the index does not fit the header: nothing to read by it
			s.warn(0, "sealed log's chunk index does not match its header")
			return
		}
		end = hdrSize + len(s.lazy.heads)*s.chunkSize
	}
	// head is the header of the chunk at index k, nil past the end
	head := func(k uint64) []byte {
		if k >= uint64(end-hdrSize)/uint64(s.chunkSize) {
			return nil
		}
		if s.lazy != nil {
			return s.lazy.heads[k][:]
		}
		off := hdrSize + int(k)*s.chunkSize
		if off+chunkHdrSize > end {
			return nil
		}
		return s.data[off : off+chunkHdrSize]
	}
	type placed struct {
		idx uint64
		off int
	}
	var chunks []placed
	staged := false
	for off := hdrSize; off+chunkHdrSize <= end; off += s.chunkSize {
		var c []byte
		if s.lazy != nil {
			c = s.lazy.heads[(off-hdrSize)/s.chunkSize][:]
		} else {
			c = s.data[off:]
		}
		magic := le.Uint32(c)
		if magic == 0 {
			continue // never used, or allocated but not yet committed
		}
		if magic != chunkMagic {
			s.warn(int64(off), "bad chunk magic %#x", magic)
			continue
		}
		tid := int32(le.Uint32(c[4:]))
		idx := le.Uint64(c[16:])
		place := uint64((off - hdrSize) / s.chunkSize)
		if tid <= 0 || idx != place && (s.version < 2 || idx > 1<<40) {
			s.warn(int64(off), "impossible chunk header (tid %d, index %d)", tid, idx)
			continue
		}
		if idx != place {
			// staged: its copy at idx is whole when it has the same header
			// (the library writes the copy's header last)
			if h := head(idx); h != nil && bytes.Equal(h[:16], c[:16]) && bytes.Equal(h[24:32], c[24:32]) {
				continue
			}
			staged = true
		}
		chunks = append(chunks, placed{idx, off})
	}
	if staged {
		sort.SliceStable(chunks, func(i, j int) bool { return chunks[i].idx < chunks[j].idx })
	}
	for _, pc := range chunks {
		off := pc.off
		var c []byte
		if s.lazy != nil {
			c = s.lazy.heads[(off-hdrSize)/s.chunkSize][:]
		} else {
			c = s.data[off:]
		}
		tid := int32(le.Uint32(c[4:]))
		st := byTid[tid]
		if st == nil {
			st = &stream{order: len(order), tid: tid, start: int64(le.Uint64(c[8:])), ci: -1}
			byTid[tid] = st
			order = append(order, st)
		}
		st.chunks = append(st.chunks, off)
	}
	// nothing is decoded yet: Scan starts each thread when the merge reaches
	// its first chunk's base time (sorted: a heap already)
	sort.SliceStable(order, func(i, j int) bool { return order[i].start < order[j].start })
	s.pending = order
}

// startDue starts the pending threads whose next chunk begins at or before
// the earliest event in the merge (all of them up to the first that yields
// an event, when the merge is empty). A chunk's first record is at or after
// its base time (dt ≥ 0 from the library; a thread's next chunk begins after
// its last record), so a thread waiting in pending cannot hold the next
// event: the merge's order is the order of a heap of all threads.
func (s *Scanner) startDue() {
	for len(s.pending) > 0 {
		st := s.pending[0]
		if len(s.heap) > 0 && s.wall(st.start) > s.heap[0].ev.Time {
			return
		}
		s.pending.pop()
		s.take(st)
		if s.nextChunk(st) && s.advance(st) {
			s.heap.push(st)
		} else {
			s.stop(st)
		}
	}
}

// stop takes a stream that advance left without an event: parked at the
// end of a chunk it waits in pending for its next chunk, else it is done.
// Either way its buffers go to the next thread to start.
func (s *Scanner) stop(st *stream) {
	if !st.parked {
		s.release(st)
		return
	}
	st.parked = false
	if len(s.free) < 64 && (st.buf != nil || st.peers != nil) {
		s.free = append(s.free, streamBufs{buf: st.buf, fds: st.fds, peers: st.peers})
	}
	st.buf, st.fds, st.peers, st.data = nil, fdTable{}, nil, nil
	st.ev, st.hot = Event{}, false
	s.pending.push(st)
}

// chunkHead is the header of the stream's chunk i.
func (s *Scanner) chunkHead(st *stream, i int) []byte {
	off := st.chunks[i]
	if s.lazy != nil {
		k := (off - int(binary.LittleEndian.Uint32(s.data[12:]))) / s.chunkSize
		return s.lazy.heads[k][:]
	}
	return s.data[off : off+chunkHdrSize]
}

// streamBufs is what a stream allocates as it reads: kept when it runs out,
// for the next thread to start.
type streamBufs struct {
	buf   []byte
	fds   fdTable
	peers map[int32]Endpoint
}

// take gives a starting stream the buffers of one that has run out.
func (s *Scanner) take(st *stream) {
	if n := len(s.free); n > 0 {
		f := s.free[n-1]
		s.free[n-1] = streamBufs{}
		s.free = s.free[:n-1]
		st.buf, st.fds, st.peers = f.buf[:0], f.fds, f.peers
		st.fds.reset()
		clear(st.peers)
	}
}

// release drops an exhausted stream's state, keeping its buffers for the
// next thread to start (at most a few: memory follows the live threads).
func (s *Scanner) release(st *stream) {
	if len(s.free) < 64 && (st.buf != nil || st.peers != nil) {
		s.free = append(s.free, streamBufs{buf: st.buf, fds: st.fds, peers: st.peers})
	}
	*st = stream{order: st.order, tid: st.tid, ci: len(st.chunks)}
}

func (s *Scanner) nextChunk(st *stream) bool {
	st.ci++
	if st.ci >= len(st.chunks) {
		return false
	}
	off := st.chunks[st.ci]
	if s.lazy != nil {
		// a sealed log: decode this chunk's frame into the stream's buffer
		k := (off - int(binary.LittleEndian.Uint32(s.data[12:]))) / s.chunkSize
		var err error
		st.buf, err = s.lazy.chunk(k, st.buf[:0])
		st.data, st.base = st.buf, off
		if err != nil {
			s.warn(int64(off+len(st.buf)), "sealed chunk %d: %v", k, err)
		}
		if len(st.buf) < chunkHdrSize || !bytes.Equal(st.buf[:chunkHdrSize], s.lazy.heads[k][:]) {
			if err == nil {
				s.warn(int64(off), "sealed chunk %d: header differs from the index", k)
			}
			st.pos, st.end = 0, 0 // nothing to read in it
			return true
		}
		st.pos = chunkHdrSize
		st.end = len(st.buf)
	} else {
		st.data, st.base = s.data, 0
		st.pos = off + chunkHdrSize
		st.end = off + s.chunkSize
		if st.end > len(s.data) {
			st.end = len(s.data)
		}
	}
	st.t = int64(binary.LittleEndian.Uint64(st.data[st.pos-chunkHdrSize+8:]))
	if st.peers == nil {
		st.peers = map[int32]Endpoint{}
	} else {
		clear(st.peers)
	}
	st.fds.reset()
	st.hot = false
	return true
}

// Process returns the log's header.
func (s *Scanner) Process() *Process { return &s.proc }

// Scan advances to the next event in time order; false at the end.
func (s *Scanner) Scan() bool {
	if st := s.cur; st != nil {
		// One thread, nothing waiting to start, the next record one the
		// fast decoder reads: what advance would do, without the calls
		// (a false leaves nothing changed but FD records consumed, and
		// advance goes on from there).
		if len(s.heap) == 1 && len(s.pending) == 0 && fastPath && st.pos < st.end && s.fastRecords(st) {
			return true
		}
		// the previous event is consumed: move its stream on
		s.cur, s.pfRec = nil, 0
		if s.advance(st) {
			if len(s.heap) > 1 {
				s.heap.down(0)
			}
		} else {
			n := len(s.heap) - 1
			s.heap[0] = s.heap[n]
			s.heap[n] = nil
			s.heap = s.heap[:n]
			if n > 1 {
				s.heap.down(0)
			}
			s.stop(st)
		}
	}
	if len(s.pending) > 0 {
		s.startDue()
	}
	if len(s.heap) == 0 {
		return false
	}
	s.cur = s.heap[0]
	return true
}

// Event returns the current event, valid until the next Scan. It is the
// scanner's own: read it, copy it, do not modify it (the next events of the
// same thread are decoded on top of it).
func (s *Scanner) Event() *Event {
	if s.cur != nil {
		return &s.cur.ev
	}
	return &s.ev
}

// Err returns the first fatal error (none: logs are read whole by Open).
func (s *Scanner) Err() error { return s.err }

// Warnings returns the damage found so far (*DamageError values).
func (s *Scanner) Warnings() []error { return s.warnings }

// RecordBytes is the size of the records decoded so far (kind byte and
// body, FD records included; headers and unused chunk space excluded).
func (s *Scanner) RecordBytes() int64 { return s.recBytes }

// Close releases the log.
func (s *Scanner) Close() error {
	s.data, s.heap, s.cur, s.lazy, s.pending, s.free = nil, nil, nil, nil, nil, nil
	if s.mapped != nil {
		m := s.mapped
		s.mapped = nil
		runtime.SetFinalizer(s, nil)
		return syscall.Munmap(m)
	}
	return nil
}

// advance decodes the stream's next event into st.ev. At an uncommitted
// record it stops the chunk silently; at damage it warns and resyncs at the
// next chunk.
func (s *Scanner) advance(st *stream) bool {
	for {
		if fastPath && st.pos < st.end && s.fastRecords(st) {
			return true
		}
		if st.pos >= st.end || st.data[st.pos] == 0 {
			if st.ci+1 >= len(st.chunks) {
				st.ci = len(st.chunks)
				return false
			}
			if h := s.chunkHead(st, st.ci+1); binary.LittleEndian.Uint32(h[24:]) == 0 {
				// the next chunk is a new thread's (thread_seq 0: the
				// kernel recycled the thread id): like any new thread, it
				// waits for the merge to reach its base time (startDue).
				// A thread's own next chunk is read at once, as before.
				st.start = int64(binary.LittleEndian.Uint64(h[8:]))
				st.parked = true
				return false
			}
			if !s.nextChunk(st) {
				return false
			}
			continue
		}
		start := st.pos
		ok, isEvent, err := s.decode(st)
		if err != nil {
			s.warn(int64(st.base+start), "%v", err)
			st.pos = st.end // resync at the next chunk
			continue
		}
		s.recBytes += int64(st.pos - start)
		if ok && isEvent {
			return true
		}
	}
}

type dec struct {
	b   []byte
	pos int
	err error
}

var (
	errVarint  = errors.New("bad varint")
	errOverrun = errors.New("record crosses the end of its chunk")
)

func (d *dec) uv() uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if d.pos >= len(d.b) {
			d.err = errOverrun
			return 0
		}
		c := d.b[d.pos]
		d.pos++
		if shift == 63 && c > 1 {
			d.err = errVarint
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
		if shift >= 63 {
			d.err = errVarint
			return 0
		}
	}
}

func (d *dec) zz() int64 {
	u := d.uv()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *dec) u8() byte {
	if d.err != nil {
		return 0
	}
	if d.pos >= len(d.b) {
		d.err = errOverrun
		return 0
	}
	d.pos++
	return d.b[d.pos-1]
}

func (d *dec) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.pos {
		d.err = errOverrun
		return nil
	}
	d.pos += n
	return d.b[d.pos-n : d.pos]
}

func (d *dec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, a...)
	}
}

func (d *dec) fd() int32 {
	v := d.zz()
	if v < -1 || v > 1<<31-1 {
		d.fail("impossible fd %d", v)
		return -1
	}
	return int32(v)
}

func (d *dec) addr() Endpoint {
	switch fam := d.u8(); fam {
	case afNone:
		return Endpoint{}
	case afInet:
		a := d.bytes(4)
		p := d.bytes(2)
		if d.err != nil {
			return Endpoint{}
		}
		return Endpoint{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte(a)), binary.BigEndian.Uint16(p))}
	case afInet6:
		a := d.bytes(16)
		p := d.bytes(2)
		scope := d.uv()
		if d.err != nil {
			return Endpoint{}
		}
		ip := netip.AddrFrom16([16]byte(a))
		if scope != 0 && ip.Is6() {
			ip = ip.WithZone(fmt.Sprint(scope))
		}
		return Endpoint{Addr: netip.AddrPortFrom(ip, binary.BigEndian.Uint16(p))}
	case afUnix:
		n := d.uv()
		if n > unixPathMax {
			d.fail("unix path length %d", n)
			return Endpoint{}
		}
		path := d.bytes(int(n))
		ino := d.uv()
		return Endpoint{Unix: true, Path: string(path), Inode: ino}
	default:
		d.fail("unknown address family %d", fam)
		return Endpoint{}
	}
}

// decode reads one record at st.pos. isEvent is false for records that only
// update state (SC_K_FD).
func (s *Scanner) decode(st *stream) (ok, isEvent bool, err error) {
	st.hot = false
	d := dec{b: st.data[:st.end], pos: st.pos}
	kind := d.u8()
	dt := d.zz()
	if d.err == nil && (dt > 1<<52 || dt < -(1<<52)) {
		d.fail("impossible time step %d ns", dt)
	}
	t := st.t + dt
	e := &st.ev
	switch kind {
	case kSend, kRecv:
		fd := d.fd()
		ret := d.zz()
		var errno int64
		if ret < 0 {
			errno = int64(d.uv())
		}
		if d.err != nil {
			return false, false, d.err
		}
		*e = Event{Op: OpSend, Fd: fd, Fd2: -1, Ret: ret, Errno: int32(errno)}
		if kind == kRecv {
			e.Op = OpRecv
		}
		if ret > 0 {
			e.Bytes = ret
		}
	case kDSend, kDRecv:
		fd := d.fd()
		ret := d.zz()
		*e = Event{Op: OpSend, Fd: fd, Fd2: -1, Ret: ret}
		if kind == kDRecv {
			e.Op = OpRecv
		}
		if ret < 0 {
			v := d.uv()
			if v > 1<<16 {
				d.fail("impossible errno %d", v)
			}
			e.Errno = int32(v)
		} else {
			e.Bytes = ret
			if b := d.bytes(4); b != nil {
				e.Sum = binary.LittleEndian.Uint32(b)
			}
		}
		if d.err == nil && d.pos < len(d.b) && d.b[d.pos] == afSame {
			d.pos++
			e.Remote = st.peers[fd] // zero when the previous record is in another chunk
		} else {
			e.Remote = d.addr()
			if !e.Remote.IsZero() {
				st.peers[fd] = e.Remote
			}
		}
		if d.err != nil {
			return false, false, d.err
		}
	case kEvent:
		op := Op(d.u8())
		fd := d.fd()
		mask := d.uv()
		if d.err == nil && (op == OpNone || op >= opCount) {
			d.fail("unknown op %d", op)
		}
		if d.err == nil && mask&^fAll != 0 {
			d.fail("unknown field mask %#x", mask)
		}
		*e = Event{Op: op, Fd: fd, Fd2: -1}
		if mask&fRet != 0 {
			e.Ret = d.zz()
		}
		if mask&fErrno != 0 {
			v := d.uv()
			if v > 1<<16 {
				d.fail("impossible errno %d", v)
			}
			e.Errno = int32(v)
		}
		if mask&fBytes != 0 {
			v := d.uv()
			if v > 1<<62 {
				d.fail("impossible byte count %d", v)
			}
			e.Bytes = int64(v)
		} else if (op == OpSend || op == OpRecv) && e.Ret > 0 {
			e.Bytes = e.Ret
		}
		if mask&fFd2 != 0 {
			e.Fd2 = d.fd()
		}
		if mask&fChild != 0 {
			e.Child = int32(d.uv())
		}
		if mask&fDur != 0 {
			e.Dur = int64(d.uv())
		}
		if mask&fName != 0 {
			n := d.uv()
			if n > nameMax {
				d.fail("name length %d", n)
			}
			e.Name = string(d.bytes(int(n)))
		}
		if mask&fSum != 0 {
			v := d.uv()
			if v > 1<<32-1 {
				d.fail("checksum %#x exceeds 32 bits", v)
			}
			e.Sum = uint32(v)
		}
		if mask&fRemote != 0 {
			e.Remote = d.addr()
		}
		if mask&fLocal != 0 {
			e.Local = d.addr()
		}
		if mask&fArg != 0 {
			e.Arg = d.zz()
		}
		if mask&fPeerPid != 0 {
			e.PeerPid = int32(d.uv())
		}
		if d.err != nil {
			return false, false, d.err
		}
	case kFd:
		fd := d.fd()
		proto := d.u8()
		sotype := d.uv()
		mask := d.uv()
		if d.err == nil && (proto > byte(ProtoUnix) || sotype > 255 || mask&^fdAll != 0) {
			d.fail("impossible fd record (proto %d, type %d, mask %#x)", proto, sotype, mask)
		}
		fi := fdInfo{proto: Proto(proto), sotype: int32(sotype)}
		if mask&fdLocal != 0 {
			fi.local = d.addr()
		}
		if mask&fdRemote != 0 {
			fi.remote = d.addr()
		}
		if mask&fdPeerPid != 0 {
			fi.peerPid = int32(d.uv())
		}
		if d.err != nil {
			return false, false, d.err
		}
		st.fds.put(fd, &fi)
		s.procFds.put(fd, &fi)
		st.pos = d.pos
		st.t = t
		return true, false, nil
	default:
		return false, false, fmt.Errorf("unknown record kind %d", kind)
	}
	st.pos = d.pos
	st.t = t
	e.Proc = &s.proc
	e.Tid = st.tid
	e.Time = s.wall(t)
	if e.Fd >= 0 && e.Op != OpFork && e.Op != OpExec && e.Op != OpExit && e.Op != OpResolve && e.Op != OpGap {
		fi := st.fds.get(e.Fd)
		if fi == nil {
			fi = s.procFds.get(e.Fd)
		}
		if fi != nil {
			e.Proto = fi.proto
			e.SoType = fi.sotype
			if e.Local.IsZero() {
				e.Local = fi.local
			}
			if e.Remote.IsZero() {
				e.Remote = fi.remote
			}
			if e.PeerPid == 0 {
				e.PeerPid = fi.peerPid
			}
		}
	}
	return true, true, nil
}

// wall converts a record timestamp to wall-clock ns as the process saw it.
func (s *Scanner) wall(t int64) int64 {
	if s.clock == clockMonotonic {
		return s.startWall + (t - s.startClk)
	}
	return t
}
