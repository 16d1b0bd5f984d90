package libsockcap

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Log file name suffixes: the library writes .sclog, Seal turns it into .sclog.zst.
const (
	LogSuffix    = ".sclog"
	SealedSuffix = ".sclog.zst"
)

// FindLogs expands files and directories (recursively) into log files,
// sorted. Files named explicitly are taken as they are; in directories only
// *.sclog and *.sclog.zst count, and a sealed copy wins over its unsealed twin.
func FindLogs(paths ...string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(q, LogSuffix) || strings.HasSuffix(q, SealedSuffix)) {
				found = append(found, q)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		have := map[string]bool{}
		for _, q := range found {
			have[q] = true
		}
		for _, q := range found {
			if strings.HasSuffix(q, LogSuffix) && have[q+".zst"] {
				continue
			}
			add(q)
		}
	}
	sort.Strings(out)
	return out, nil
}

// committedLen is the length of a raw log that holds data: the header plus
// the chunks handed out, never more than the file.
func committedLen(data []byte) (int, error) {
	if len(data) < hdrStringsOff || string(data[:8]) != fileMagic {
		return 0, fmt.Errorf("not a libsockcap log (bad magic)")
	}
	le := binary.LittleEndian
	hdr := int64(le.Uint32(data[12:]))
	chunk := int64(le.Uint32(data[16:]))
	n := int64(le.Uint64(data[24:]))
	if chunk <= 0 || n < 0 || n > 1<<40/chunk {
		return len(data), nil
	}
	end := hdr + n*chunk
	if end > int64(len(data)) || end < hdr {
		end = int64(len(data))
	}
	return int(end), nil
}

// Seal compresses a finished log with zstd into path + ".zst", truncated to
// its committed length, and removes the original. The header and every chunk
// are separate zstd frames (FORMAT.md, "Sealed logs"): damage costs the
// reader one chunk, not the rest of the file. A sealed path is returned
// unchanged. Do not seal a log a live process still writes.
func Seal(path string) (string, error) {
	if strings.HasSuffix(path, ".zst") {
		return path, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if bytes.HasPrefix(data, zstdMagic) {
		return path, nil
	}
	n, err := committedLen(data)
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	dst := path + ".zst"
	tmp := dst + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	err = writeSealed(f, data[:n])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("seal %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return dst, err
	}
	return dst, nil
}

// writeSealed compresses a raw log as one zstd frame for the file header and
// one per chunk. `zstd -d` yields the raw log unchanged.
func writeSealed(w io.Writer, data []byte) error {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	defer enc.Close()
	hdr, chunk := len(data), 0
	if len(data) >= hdrStringsOff {
		hdr = int(binary.LittleEndian.Uint32(data[12:]))
		chunk = int(binary.LittleEndian.Uint32(data[16:]))
	}
	if hdr > len(data) || hdr <= 0 || chunk <= 0 {
		hdr, chunk = len(data), len(data)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	var heads []byte // the chunk headers, for the index frame
	for off, n := 0, hdr; off < len(data); off, n = off+n, chunk {
		end := min(off+n, len(data))
		buf = enc.EncodeAll(data[off:end], buf[:0])
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		if off > 0 {
			var h [chunkHdrSize]byte
			copy(h[:], data[off:end])
			heads = append(heads, h[:]...)
		}
	}
	// the index: a skippable frame (zstd -d ignores it) holding every chunk's header
	idx := binary.LittleEndian.AppendUint32(nil, sealIndexMagic)
	idx = binary.LittleEndian.AppendUint32(idx, uint32(12+len(heads)))
	idx = append(idx, sealIndexTag...)
	idx = binary.LittleEndian.AppendUint32(idx, uint32(chunk))
	idx = binary.LittleEndian.AppendUint32(idx, uint32(len(heads)/chunkHdrSize))
	idx = append(idx, heads...)
	if _, err := bw.Write(idx); err != nil {
		return err
	}
	return bw.Flush()
}

// Summary counts what a run recorded, for `wap5 run`'s closing line.
type Summary struct {
	Processes int64 // logs (one per process image)
	Events    int64 // recorded events (gap markers not counted)
	LogBytes  int64 // bytes of the log files on disk
	Dropped   int64 // events the library could not record
	Warnings  []string
}

// Summarize reads every log under dir.
func Summarize(dir string) (Summary, error) {
	var sum Summary
	logs, err := FindLogs(dir)
	if err != nil {
		return sum, err
	}
	for _, p := range logs {
		if fi, err := os.Stat(p); err == nil {
			sum.LogBytes += fi.Size()
		}
		s, err := Open(p)
		if err != nil {
			sum.Warnings = append(sum.Warnings, err.Error())
			continue
		}
		sum.Processes++
		var gaps int64
		for s.Scan() {
			if e := s.Event(); e.Op == OpGap {
				gaps += e.Bytes
			} else {
				sum.Events++
			}
		}
		d := s.Process().Dropped
		if gaps > d {
			d = gaps
		}
		sum.Dropped += d
		for _, w := range s.Warnings() {
			sum.Warnings = append(sum.Warnings, w.Error())
		}
		s.Close()
	}
	return sum, nil
}
