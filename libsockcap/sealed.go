package libsockcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/klauspost/compress/zstd"
)

// Sealed logs (FORMAT.md, "Sealed logs") are a sequence of zstd frames: Seal
// writes one for the file header and one per chunk; logs sealed before that
// are one frame. decodeSealed decodes them frame by frame, each as a stream,
// so that damage costs only what cannot be decoded:
//
//  1. Walk the frame at the current position (header, block headers,
//     checksum) to find where it ends, without decoding it.
//  2. Stream-decode the frame, appending every block that decodes; a frame
//     that fails keeps the blocks decoded before the failure.
//  3. On damage, report a DamageError at the uncompressed offset where the
//     output stops, pad a damaged chunk frame with zeros up to its stated
//     size (a zero chunk is skipped by the scanner, and later chunks keep
//     their offsets), and resync at the next frame: where the walk of step 1
//     says it starts, else at the next zstd magic number.
//
// The compressed bytes are held in memory (~2 bytes per event; Open maps
// the file instead and drops the pages of chunks once decoded, so a long
// log costs no more memory than a short one); the output is the raw log.
const (
	zstdFrameMagic    = 0xfd2fb528
	zstdSkippableMask = 0xfffffff0
	zstdSkippableBase = 0x184d2a50
)

// The index frame Seal appends: a zstd skippable frame (magic
// sealIndexMagic, u32 size) holding "SCIX", u32 chunk size, u32 count and
// the count chunk headers (32 bytes each), one per chunk frame in order.
const (
	sealIndexMagic = zstdSkippableBase + 0xc
	sealIndexTag   = "SCIX"
)

// sealedLog is a sealed log read chunk by chunk: the compressed bytes, where
// each chunk's frame is, and the chunk headers from the index.
type sealedLog struct {
	z         []byte
	frames    [][2]int // chunk k's frame: z[frames[k][0]:frames[k][1]]
	heads     [][chunkHdrSize]byte
	chunkSize int
	mapped    bool // z is a file mapping: drop pages once decoded
	dropped   int  // z[:dropped] has been dropped (up to the last batch)
}

// faultAround bounds how far before a faulting page the kernel maps pages.
const faultAround = 64 << 10

// dropEvery: a mapped log's walk drops the pages behind it this often.
const dropEvery = 1 << 20

// drop tells the kernel that z[from:to] is not needed for now (a shared
// file mapping: the pages leave this process's resident set and come back
// from the page cache if touched again, e.g. a page shared with the next
// frame). Nothing happens for bytes on the heap.
func dropPages(z []byte, mapped bool, from, to int) {
	if !mapped {
		return
	}
	pg := syscall.Getpagesize()
	// The kernel maps the neighbours of a faulting page too ("fault
	// around", up to 64 KiB aligned): pages before the range that were
	// dropped already may be back.
	from = max(from-faultAround, 0) / pg * pg
	to = min((to+pg-1)/pg*pg, len(z))
	if to > from {
		syscall.Madvise(z[from:to], syscall.MADV_DONTNEED)
	}
}

// openSealed checks that z is a sealed log with an intact index (every frame
// walks, the index counts them) and returns it with its decoded header
// frame. Anything else returns nil: the caller decodes the file whole with
// decodeSealed, which reports the damage. f, when not nil, is the file z
// maps: the walk reads the frame headers from it rather than from z.
func openSealed(z []byte, mapped bool, f io.ReaderAt) (*sealedLog, []byte) {
	var frames [][2]int
	dropped := 0
	var buf [64]byte
	for pos := 0; pos < len(z); {
		var n int
		var err error
		if f != nil {
			n, err = frameEndAt(f, int64(pos), int64(len(z)), &buf)
		} else {
			n, err = frameEnd(z[pos:])
		}
		if err != nil {
			return nil, nil
		}
		frames = append(frames, [2]int{pos, pos + n})
		pos += n
		if f == nil && pos-dropped >= dropEvery {
			dropPages(z, mapped, dropped, pos)
			dropped = pos
		}
	}
	if len(frames) < 2 {
		return nil, nil
	}
	le := binary.LittleEndian
	ix := z[frames[len(frames)-1][0]:frames[len(frames)-1][1]]
	if le.Uint32(ix) != sealIndexMagic || len(ix) < 20 || string(ix[8:12]) != sealIndexTag {
		return nil, nil
	}
	chunk, count := int(le.Uint32(ix[12:])), int(le.Uint32(ix[16:]))
	body := ix[20:]
	if count != len(frames)-2 || len(body) != count*chunkHdrSize || chunk < minChunkSize || chunk > maxChunkSize {
		return nil, nil
	}
	dec := getChunkDecoder()
	if dec == nil {
		return nil, nil
	}
	defer putChunkDecoder(dec)
	if f == nil {
		dropPages(z, mapped, dropped, len(z)) // the rest of the walk
	}
	l := &sealedLog{z: z, frames: frames[1 : len(frames)-1], heads: make([][chunkHdrSize]byte, count), chunkSize: chunk, mapped: mapped}
	for k := range l.heads {
		copy(l.heads[k][:], body[k*chunkHdrSize:])
	}
	hf := z[frames[0][0]:frames[0][1]]
	if fcs := frameContentSize(hf); fcs < hdrStringsOff || fcs > 1<<20 {
		return nil, nil
	}
	hdr, err := dec.DecodeAll(hf, nil)
	if err != nil {
		return nil, nil
	}
	return l, hdr
}

// chunkDecoders are the zstd decoders of sealed logs, shared by every log
// open: a decoder keeps its block buffers (over 100 KB once used), and a
// reader of many logs (wap5 reconcile: 115 on a CoDeeN-sized set, read in
// turns) needs one per goroutine decoding at a time, not one per log. A
// free list, not a sync.Pool: a pool drops its decoders at every
// collection, and making one again costs its buffers again. Decoders of one
// concurrency never start goroutines.
var chunkDecoders struct {
	sync.Mutex
	free []*zstd.Decoder
}

// getChunkDecoder takes a decoder (nil if none can be made); putChunkDecoder
// gives it back.
func getChunkDecoder() *zstd.Decoder {
	chunkDecoders.Lock()
	if n := len(chunkDecoders.free); n > 0 {
		dec := chunkDecoders.free[n-1]
		chunkDecoders.free = chunkDecoders.free[:n-1]
		chunkDecoders.Unlock()
		return dec
	}
	chunkDecoders.Unlock()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(sealedMaxMemory), zstd.WithDecoderMaxWindow(sealedMaxWindow))
	if err != nil {
		return nil
	}
	return dec
}

func putChunkDecoder(dec *zstd.Decoder) {
	chunkDecoders.Lock()
	chunkDecoders.free = append(chunkDecoders.free, dec)
	chunkDecoders.Unlock()
}

// chunk decodes chunk k into dst. On damage it returns what decoded before
// it (whole blocks) and the error.
func (l *sealedLog) chunk(k int, dst []byte) ([]byte, error) {
	f := l.z[l.frames[k][0]:l.frames[k][1]]
	if fcs := frameContentSize(f); fcs < 0 || fcs > int64(l.chunkSize) {
		return dst, fmt.Errorf("frame states %d bytes, chunks have %d", fcs, l.chunkSize)
	}
	dec := getChunkDecoder()
	if dec == nil {
		return dst, errors.New("no zstd decoder")
	}
	defer putChunkDecoder(dec)
	out, err := dec.DecodeAll(f, dst)
	if err == nil {
		// Drop what lies behind in batches (each madvise costs a TLB
		// shootdown): a page of a frame not decoded yet (another thread's
		// chunk) comes back from the page cache when it is.
		if end := l.frames[k][1]; end-l.dropped >= dropEvery {
			dropPages(l.z, l.mapped, l.dropped, end)
			l.dropped = end
		}
		return out, nil
	}
	// salvage the blocks before the damage with the streaming decoder
	var r bytes.Reader
	r.Reset(f)
	if rerr := dec.Reset(&r); rerr != nil {
		return dst, err
	}
	out, _ = readAllInto(dec, dst[:0])
	dec.Reset(nil)
	return out, err
}

// frameEnd walks one zstd frame at z[0:] and returns its length, or an error
// when its headers do not fit in z. It does not decode anything.
func frameEnd(z []byte) (int, error) {
	return walkFrame(len(z), func(off, n int) []byte { return z[off : off+n] })
}

// frameEndAt is frameEnd for the frame at off of a file of size bytes,
// read with pread (a mapped file's pages stay untouched: on this guest a
// page fault costs tens of µs, and the walk touched a page per frame that
// the decoding then faulted in again once dropped).
func frameEndAt(r io.ReaderAt, off, size int64, buf *[64]byte) (int, error) {
	bufOff, bufLen := int64(-1), 0
	bad := false
	n, err := walkFrame(int(min(size-off, 1<<40)), func(o, n int) []byte {
		at := off + int64(o)
		if at < bufOff || at+int64(n) > bufOff+int64(bufLen) {
			// one read covers a frame's header and its first block's
			m, rerr := r.ReadAt(buf[:], at)
			if m < n && rerr != nil {
				bad = true
				return make([]byte, n)
			}
			bufOff, bufLen = at, m
		}
		return buf[at-bufOff : at-bufOff+int64(n)]
	})
	if bad {
		return 0, errors.New("read error")
	}
	return n, err
}

// walkFrame walks one zstd frame of at most limit bytes; at(off, n) gives
// the n bytes at off (off+n ≤ limit).
func walkFrame(limit int, at func(off, n int) []byte) (int, error) {
	if limit < 8 {
		return 0, errors.New("truncated frame header")
	}
	h := at(0, 8)
	magic := binary.LittleEndian.Uint32(h)
	if magic&zstdSkippableMask == zstdSkippableBase {
		n := 8 + int(binary.LittleEndian.Uint32(h[4:]))
		if n > limit || n < 8 {
			return 0, errors.New("truncated skippable frame")
		}
		return n, nil
	}
	if magic != zstdFrameMagic {
		return 0, fmt.Errorf("no zstd frame (magic %#x)", magic)
	}
	fhd := h[4]
	fcsFlag := fhd >> 6
	single := fhd>>5&1 == 1
	checksum := fhd>>2&1 == 1
	didFlag := fhd & 3
	pos := 5
	if !single {
		pos++ // window descriptor
	}
	pos += [4]int{0, 1, 2, 4}[didFlag]
	switch {
	case fcsFlag == 0 && single:
		pos++
	case fcsFlag == 1:
		pos += 2
	case fcsFlag == 2:
		pos += 4
	case fcsFlag == 3:
		pos += 8
	}
	for {
		if pos+3 > limit {
			return 0, errors.New("truncated block header")
		}
		b := at(pos, 3)
		bh := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		pos += 3
		last := bh&1 == 1
		size := int(bh >> 3)
		switch bh >> 1 & 3 {
		case 1: // RLE: one byte
			size = 1
		case 3:
			return 0, errors.New("reserved block type")
		}
		if size > 1<<17 || pos+size > limit {
			return 0, errors.New("truncated block")
		}
		pos += size
		if last {
			break
		}
	}
	if checksum {
		pos += 4
		if pos > limit {
			return 0, errors.New("truncated checksum")
		}
	}
	return pos, nil
}

// Sealed frames are written by seal, one per chunk, so none needs a window
// or an output larger than a chunk (the index frame is bounded the same way).
// A damaged header claiming a larger window is refused at once rather than
// allocated.
const (
	sealedMaxWindow = 2 * maxChunkSize
	sealedMaxMemory = 4 * maxChunkSize
)

// frameContentSize is the decompressed size a frame header states, or -1.
func frameContentSize(z []byte) int64 {
	var h zstd.Header
	if h.Decode(z) != nil || !h.HasFCS {
		return -1
	}
	return int64(h.FrameContentSize)
}

// decodeSealed returns the raw log of a sealed file and the damage found.
// damage is called with the uncompressed offset and a description.
func decodeSealed(z []byte, damage func(off int64, msg string)) ([]byte, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(sealedMaxMemory), zstd.WithDecoderMaxWindow(sealedMaxWindow))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	var out []byte
	var r bytes.Reader
	lost := false // frames were skipped: place the next chunk by its index
	for pos := 0; pos < len(z); {
		// step 1: the frame's extent
		n, werr := frameEnd(z[pos:])
		atFrame := len(z)-pos >= 4 && binary.LittleEndian.Uint32(z[pos:]) == zstdFrameMagic
		if werr != nil && !atFrame {
			// not at a frame: skip to the next magic
			next := nextFrameMagic(z, pos+1)
			damage(int64(len(out)), fmt.Sprintf("sealed file damaged at compressed offset %d (%v); %d bytes skipped", pos, werr, next-pos))
			pos = next
			lost = true
			continue
		}
		frame := z[pos:]
		if werr == nil {
			frame = z[pos : pos+n]
		}
		// step 2: stream-decode it, keeping every block that decodes
		start := len(out)
		r.Reset(frame)
		derr := dec.Reset(&r)
		if derr == nil {
			out, derr = readAllInto(dec, out)
		}
		if derr == nil && werr != nil {
			derr = werr
		}
		if derr == nil {
			if lost {
				out = placeChunk(out, start)
				lost = false
			}
			pos += n
			continue
		}
		// step 3: report, pad, resync
		what := "damaged"
		if errors.Is(derr, io.ErrUnexpectedEOF) || werr != nil && pos+len(frame) == len(z) {
			what = "truncated"
		}
		damage(int64(len(out)), fmt.Sprintf("sealed file %s at compressed offset %d: %v", what, pos, derr))
		if want := frameContentSize(frame); want > 0 && want <= 1<<24 && int64(len(out)-start) < want {
			out = append(out, make([]byte, int(want)-(len(out)-start))...)
		} else if want < 0 || int64(len(out)-start) > want {
			// a frame of unknown size (the old single-frame format), or
			// more output than stated: nothing after it can be placed
			return out, nil
		}
		if werr == nil {
			pos += n
		} else {
			pos = nextFrameMagic(z, pos+1)
			lost = true
		}
	}
	return out, nil
}

// placeChunk moves the chunk decoded at out[start:] to where its header's
// index says it belongs, zero-filling the chunks lost before it. Without a
// readable file header or chunk header it leaves out as it is.
func placeChunk(out []byte, start int) []byte {
	le := binary.LittleEndian
	if len(out) < hdrStringsOff || string(out[:8]) != fileMagic || len(out)-start < chunkHdrSize ||
		le.Uint32(out[start:]) != chunkMagic {
		return out
	}
	hdr, chunk := uint64(le.Uint32(out[12:])), uint64(le.Uint32(out[16:]))
	idx := le.Uint64(out[start+16:])
	if chunk == 0 || idx > 1<<24 {
		return out
	}
	want := hdr + idx*chunk
	if want <= uint64(start) || want-uint64(start) > 1<<26 {
		return out
	}
	gap := int(want) - start
	n := len(out) - start
	out = append(out, make([]byte, gap)...)
	copy(out[start+gap:], out[start:start+n])
	clear(out[start : start+gap])
	return out
}

// readAllInto appends everything r yields to out.
func readAllInto(r io.Reader, out []byte) ([]byte, error) {
	for {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		n, err := r.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// nextFrameMagic is the position of the next zstd frame magic at or after
// from, or len(z).
func nextFrameMagic(z []byte, from int) int {
	var m [4]byte
	binary.LittleEndian.PutUint32(m[:], zstdFrameMagic)
	if from >= len(z) {
		return len(z)
	}
	if i := bytes.Index(z[from:], m[:]); i >= 0 {
		return from + i
	}
	return len(z)
}
