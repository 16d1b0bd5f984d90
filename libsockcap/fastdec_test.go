package libsockcap_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"wap5/libsockcap"
)

// TestFastDecoderAgrees reads real logs (the repository's, and those under
// the directories in $WAP5_DECODE_LOGS) with the fast decoder and with the
// full decoder alone, side by side: the same events, field for field, the
// same warnings and record bytes.
func TestFastDecoderAgrees(t *testing.T) {
	var files []string
	for _, d := range append([]string{"../reconcile/testdata/logs", "../cmd/wap5/testdata/dump"}, strings.Fields(os.Getenv("WAP5_DECODE_LOGS"))...) {
		f, err := libsockcap.FindLogs(d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	// and damaged copies of a log of every record shape: a byte of its
	// first records set to 0xff or 0x80 (bad varints, kinds, families,
	// values out of range, records crossing the chunk's end)
	raw := buildLog(t)
	dir := t.TempDir()
	for off := hdr.HdrSize + 32; off < hdr.HdrSize+400; off += 5 {
		b := append([]byte(nil), raw...)
		b[off] = 0xff
		if off%2 == 0 {
			b[off] = 0x80
		}
		p := filepath.Join(dir, fmt.Sprintf("d%d.sclog", off))
		os.WriteFile(p, b, 0o600)
		files = append(files, p)
	}
	defer func() { *libsockcap.FastPath = true }()
	n, warned := 0, 0
	for _, f := range files {
		*libsockcap.FastPath = false
		a, err := libsockcap.Open(f)
		if err != nil {
			continue
		}
		*libsockcap.FastPath = true
		b, err := libsockcap.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			*libsockcap.FastPath = false
			oa := a.Scan()
			*libsockcap.FastPath = true
			ob := b.Scan()
			if oa != ob {
				t.Fatalf("%s: event %d: one reader ended", f, n)
			}
			if !oa {
				break
			}
			if !reflect.DeepEqual(*a.Event(), *b.Event()) {
				t.Fatalf("%s: event %d differs:\nfull %+v\nfast %+v", f, n, *a.Event(), *b.Event())
			}
			n++
		}
		if !reflect.DeepEqual(a.Warnings(), b.Warnings()) || a.RecordBytes() != b.RecordBytes() {
			t.Fatalf("%s: warnings or record bytes differ: %v / %v", f, a.Warnings(), b.Warnings())
		}
		if len(a.Warnings()) > 0 {
			warned++
		}
		a.Close()
		b.Close()
	}
	if n < 150 || warned < 5 {
		t.Fatalf("only %d events, %d damaged logs compared", n, warned)
	}
	t.Logf("%d logs (%d damaged), %d events", len(files), warned, n)
}
