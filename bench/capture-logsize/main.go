// Command capture-logsize reports the on-disk cost of libsockcap logs, for
// bench/capture-overhead.sh: events, raw file bytes, record bytes and sealed
// (zstd) bytes, each per event. With -zstd FILE it prints FILE's size and its
// zstd-compressed size (to compare with strace's text output).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"wap5/libsockcap"
)

func main() {
	z := flag.String("zstd", "", "report FILE's plain and zstd-compressed size")
	flag.Parse()
	if *z != "" {
		data, err := os.ReadFile(*z)
		check(err)
		var buf bytes.Buffer
		enc, _ := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBetterCompression))
		enc.Write(data)
		enc.Close()
		fmt.Printf("plain %d zstd %d\n", len(data), buf.Len())
		return
	}
	var events, fileBytes, recBytes, sealedBytes int64
	for _, dir := range flag.Args() {
		logs, err := libsockcap.FindLogs(dir)
		check(err)
		for _, p := range logs {
			fi, err := os.Stat(p)
			check(err)
			fileBytes += fi.Size()
			s, err := libsockcap.Open(p)
			check(err)
			for s.Scan() {
				events++
			}
			recBytes += s.RecordBytes()
			for _, w := range s.Warnings() {
				fmt.Fprintln(os.Stderr, "warning:", w)
			}
			// seal a copy to measure the sealed size
			tmp, err := os.MkdirTemp("", "logsize")
			check(err)
			data, err := os.ReadFile(p)
			check(err)
			cp := filepath.Join(tmp, filepath.Base(p))
			check(os.WriteFile(cp, data, 0o600))
			sealed, err := libsockcap.Seal(cp)
			check(err)
			sfi, err := os.Stat(sealed)
			check(err)
			sealedBytes += sfi.Size()
			os.RemoveAll(tmp)
		}
	}
	if events == 0 {
		fmt.Println("events 0")
		return
	}
	e := float64(events)
	fmt.Printf("events %d file_B_per_event %.2f record_B_per_event %.2f sealed_B_per_event %.2f\n",
		events, float64(fileBytes)/e, float64(recBytes)/e, float64(sealedBytes)/e)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "capture-logsize:", err)
		os.Exit(1)
	}
}
