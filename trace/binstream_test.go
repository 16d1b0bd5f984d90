package trace

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
)

// scanAll reads data with a BinaryScanner into a trace as ReadBinary would
// return it (tables, warnings, messages without their extra text).
func scanAll(data []byte) (*Trace, error) {
	t, _, err := scanWith(data, NewBinaryScanner)
	return t, err
}

// scanWith is scanAll with the scanner newScanner makes, and the scanner.
func scanWith(data []byte, newScanner func(io.Reader, string) (*BinaryScanner, error)) (*Trace, *BinaryScanner, error) {
	s, err := newScanner(bytes.NewReader(data), "f")
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	t := s.Trace()
	for s.Scan() {
		if s.Index() != len(t.Messages) {
			return nil, nil, fmt.Errorf("message %d has index %d", len(t.Messages), s.Index())
		}
		t.Messages = append(t.Messages, s.Message())
	}
	if err := s.Err(); err != nil {
		return nil, nil, err
	}
	return t, s, nil
}

// sameAsWhole says how the scanner's reading of data differs from the
// whole-trace reader's (of an input of known size, as ReadFile reads a
// file: FuzzReadWhole holds it to ReadBinary's): the same error, or the
// same tables, warnings and messages ("" when they agree).
func sameAsWhole(data []byte) string {
	whole, _, errW := readSized(bytes.NewReader(data), "f", int64(len(data)))
	scan, errS := scanAll(data)
	if fmt.Sprint(errW) != fmt.Sprint(errS) {
		return fmt.Sprintf("whole: %v; scanner: %v", errW, errS)
	}
	if errW != nil {
		return ""
	}
	whole.Extra = nil
	if len(whole.Messages) == 0 {
		whole.Messages = nil
	}
	scan.nodeIdx, whole.nodeIdx = nil, nil
	whole.checked, scan.checked = checkedMark{}, checkedMark{} // (the decoder's mark is no content)
	if !reflect.DeepEqual(whole, scan) {
		return fmt.Sprintf("whole and scanner differ: %d and %d messages, warnings %q and %q", len(whole.Messages), len(scan.Messages), whole.Warnings, scan.Warnings)
	}
	// Without the endpoints' names: the same but for the table, which
	// only its number and the unix sockets are left of.
	lean, s, errL := scanWith(data, NewBinaryScannerNoNames)
	if fmt.Sprint(errW) != fmt.Sprint(errL) {
		return fmt.Sprintf("whole: %v; scanner without names: %v", errW, errL)
	}
	if s.Endpoints() != len(whole.Endpoints) || !reflect.DeepEqual(lean.Endpoints, []string{"-"}) {
		return fmt.Sprintf("scanner without names: %d endpoints (table %q), want %d", s.Endpoints(), lean.Endpoints, len(whole.Endpoints))
	}
	for e, name := range whole.Endpoints {
		if s.UnixEndpoint(EndpointID(e)) != strings.HasPrefix(name, "unix:") {
			return fmt.Sprintf("scanner without names: endpoint %d %q: unix %v", e, name, s.UnixEndpoint(EndpointID(e)))
		}
	}
	lean.nodeIdx, lean.Endpoints = nil, whole.Endpoints
	if !reflect.DeepEqual(whole, lean) {
		return fmt.Sprintf("whole and scanner without names differ: %d and %d messages, warnings %q and %q", len(whole.Messages), len(lean.Messages), whole.Warnings, lean.Warnings)
	}
	return ""
}

// TestBinaryScanner: the scanner reads what ReadBinary reads, block by
// block (three blocks here), for every version, and for damaged inputs
// keeps the same messages with the same warning.
func TestBinaryScanner(t *testing.T) {
	var bin bytes.Buffer
	if err := WriteBinary(&bin, bigTrace(2*colBlock+123)); err != nil {
		t.Fatal(err)
	}
	data := bin.Bytes()
	inputs := map[string][]byte{"v3": data, "half": data[:len(data)/2], "cut": data[:len(data)-3]}
	flip := bytes.Clone(data)
	flip[len(flip)*2/3] ^= 0x40
	inputs["flip"] = flip
	for _, old := range []string{"testdata/v1.bin", "testdata/v2.bin"} {
		d, err := os.ReadFile(old)
		if err != nil {
			t.Fatal(err)
		}
		inputs[old] = d
		inputs[old+" cut"] = d[:len(d)*3/4]
	}
	// Unix sockets among the endpoints (NewBinaryScannerNoNames keeps
	// which they are).
	ut := bigTrace(300)
	for i := 0; i < 100; i++ {
		ut.Messages[i*3].SrcEP = ut.Endpoint(fmt.Sprintf("unix:/run/s%d", i%7))
	}
	var ub bytes.Buffer
	if err := WriteBinary(&ub, ut); err != nil {
		t.Fatal(err)
	}
	inputs["unix"] = ub.Bytes()
	for name, d := range inputs {
		if diff := sameAsWhole(d); diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
	}
	// And the whole trace came through, in three blocks.
	tr, err := scanAll(data)
	if err != nil || len(tr.Messages) != 2*colBlock+123 {
		t.Fatalf("%v, %d messages", err, len(tr.Messages))
	}
}

// TestBinaryScannerInvalid: an invalid message (a node out of range) is the
// scanner's error, with ReadBinary's text.
func TestBinaryScannerInvalid(t *testing.T) {
	tr := bigTrace(500)
	tr.Messages[321].Dst = 7
	var bin bytes.Buffer
	if err := WriteBinary(&bin, tr); err != nil {
		t.Fatal(err)
	}
	if _, err := scanAll(bin.Bytes()); err == nil {
		t.Fatal("no error")
	}
	if diff := sameAsWhole(bin.Bytes()); diff != "" {
		t.Fatal(diff)
	}
}

// FuzzBinaryScanner: whatever the bytes, the scanner reads exactly what
// ReadBinary does (the same error, or the same trace and warnings).
func FuzzBinaryScanner(f *testing.F) {
	var bin bytes.Buffer
	WriteBinary(&bin, bigTrace(300))
	data := bin.Bytes()
	f.Add(data)
	f.Add(data[:len(data)-3])
	f.Add(data[:len(data)/2])
	f.Add(append(bytes.Clone(data), "trailing"...))
	flip := bytes.Clone(data)
	flip[len(flip)/3] ^= 0x40
	f.Add(flip)
	tr, _ := ReadText(bytes.NewReader([]byte(actorSample)), "a")
	bin.Reset()
	WriteBinary(&bin, tr)
	f.Add(bin.Bytes())
	for _, old := range []string{"testdata/v1.bin", "testdata/v2.bin"} {
		if d, err := os.ReadFile(old); err == nil {
			f.Add(d)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte(BinaryMagic)) {
			return
		}
		if diff := sameAsWhole(data); diff != "" {
			t.Fatal(diff)
		}
	})
}

// TestBinaryScannerDamaged: inputs with a few bits flipped anywhere (the
// tables, the frame, the columns) read as the whole-trace reader reads
// them (the fuzz target's check over fixed random damage, so that plain
// `go test` covers it too; the fuzzer spends much of a short run
// minimising its kilobyte inputs: scripts/fuzz-all.sh caps that).
func TestBinaryScannerDamaged(t *testing.T) {
	var bin bytes.Buffer
	if err := WriteBinary(&bin, bigTrace(700)); err != nil {
		t.Fatal(err)
	}
	data := bin.Bytes()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		d := bytes.Clone(data)
		for k := 0; k < 1+r.IntN(3); k++ {
			d[r.IntN(len(d))] ^= byte(1 << r.IntN(8))
		}
		if !bytes.HasPrefix(d, []byte(BinaryMagic)) {
			continue // not taken for a binary trace (wap5 link sniffs the magic)
		}
		if diff := sameAsWhole(d); diff != "" {
			t.Fatalf("damage %d: %s", i, diff)
		}
	}
}
