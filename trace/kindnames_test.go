package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime/metrics"
	"strings"
	"testing"
	"unsafe"
)

// heapAllocs is the bytes allocated in the heap so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReadFileKindNames: a binary or text trace comes back as ReadFile
// reads it (messages, tables, warnings, errors) but for its endpoints,
// named by their kind alone — "-" first, "unix:" for a unix socket's, ""
// else — in a table of the same length, outside the heap where it is
// large (a binary trace's names never in it either); a damaged or missing
// file fails as ReadFile does.
func TestReadFileKindNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	textOf := func(tr *Trace) []byte {
		var b bytes.Buffer
		if err := WriteText(&b, tr); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	binOf := func(tr *Trace) []byte {
		var b bytes.Buffer
		if err := WriteBinary(&b, tr); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	// unixEvery names every k-th endpoint (but the first) a unix
	// socket's; k 0: none.
	unixEvery := func(tr *Trace, k int) *Trace {
		for i := 1; k > 0 && i < len(tr.Endpoints); i += k {
			tr.Endpoints[i] = "unix:/run/s" + tr.Endpoints[i]
		}
		return tr
	}
	// 100,000 endpoints: a 1.6 MB table (outside the heap).
	big := binOf(unixEvery(noisyTraceEPs(200_000, 100_000), 997))
	cases := []struct {
		name string
		path string
		big  bool // the table and the names are outside the heap
		fail bool
	}{
		{"big, unix sockets", write("big.bin", big), true, false},
		{"big, cut (warning)", write("cut.bin", big[:len(big)*2/3]), true, false},
		{"small, unix sockets", write("small.bin", binOf(unixEvery(noisyTraceEPs(3000, 500), 7))), false, false},
		{"small, all unix", write("allunix.bin", binOf(unixEvery(noisyTraceEPs(3000, 50), 1))), false, false},
		{"text, unix sockets", write("unix.trace", textOf(unixEvery(noisyTraceEPs(3000, 500), 7))), false, false},
		{"none unix", write("none.bin", binOf(noisyTrace(20_000))), false, false},
		{"v2", "testdata/v2.bin", false, false},
		{"text", write("t.trace", []byte(sample)), false, false},
		{"tables cut", write("tcut.bin", big[:200]), false, true},
		{"missing", filepath.Join(dir, "missing"), false, true},
	}
	for _, tc := range cases {
		a := heapAllocs()
		want, werr := ReadFile(tc.path)
		b := heapAllocs()
		got, release, err := ReadFileKindNames(tc.path)
		c := heapAllocs()
		if (err != nil) != tc.fail || (werr != nil) != tc.fail {
			t.Fatalf("%s: error %v, ReadFile's %v, want failure %v", tc.name, err, werr, tc.fail)
		}
		if tc.fail {
			if err.Error() != werr.Error() || got != nil {
				t.Errorf("%s: error %q, want %q", tc.name, err, werr)
			}
			release()
			continue
		}
		if len(got.Endpoints) != len(want.Endpoints) || len(want.Endpoints) < 2 {
			t.Fatalf("%s: %d endpoints, want %d (and more than one)", tc.name, len(got.Endpoints), len(want.Endpoints))
		}
		unix := 0
		for i, name := range want.Endpoints {
			kind := name
			switch {
			case i == 0:
			case strings.HasPrefix(name, "unix:"):
				kind = "unix:"
			default:
				kind = ""
			}
			if got.Endpoints[i] != kind {
				t.Fatalf("%s: endpoint %d is %q, want %q (named %q)", tc.name, i, got.Endpoints[i], kind, name)
			}
			if strings.HasPrefix(name, "unix:") {
				unix++
			}
		}
		if tc.name != "none unix" && tc.name != "v2" && tc.name != "text" && unix == 0 {
			t.Fatalf("%s: no unix socket: the case tests nothing", tc.name)
		}
		// Where the table is large, neither it nor the names are in
		// the heap: the reader allocates less than ReadFile by both
		// (but for the unix sockets' bits and a little more).
		less := int64(len(want.Endpoints))*int64(unsafe.Sizeof("")) - 64<<10
		for _, name := range want.Endpoints {
			less += int64(len(name))
		}
		if tc.big && int64(b-a)-int64(c-b) < less {
			t.Errorf("%s: %d bytes allocated in the heap, ReadFile %d: want %d less at least", tc.name, c-b, b-a, less)
		}
		if err := got.CheckValid(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		got.Endpoints, want.Endpoints = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: messages, tables or warnings differ", tc.name)
		}
		release()
	}
}
