package trace

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"wap5/internal/hugemem"
)

// TestReadFileEnvelopesOnly: a version 3 binary file comes back as the
// full reader's tables and the envelopes of its messages, also when it is
// large enough that the input read so far goes back to the system as the
// blocks are decoded (keeping freed mappings off) and when it is kept
// (hugemem.Keep); anything ReadFileEnvelopes would read the usual way,
// and a damaged or missing file, is declined with nothing kept.
func TestReadFileEnvelopesOnly(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var bin bytes.Buffer
	if err := WriteBinary(&bin, noisyTrace(1_000_000)); err != nil {
		t.Fatal(err)
	}
	// More than two of readColumns' 8 MB steps of decompressed input.
	if n := len(decompressedBytes(t, bin.Bytes())); n < 16<<20 {
		t.Fatalf("the big trace decompresses to %d bytes only", n)
	}
	big := write("big.bin", bin.Bytes())
	cut := write("cut.bin", bin.Bytes()[:bin.Len()/2])
	bin.Reset()
	small := bigTrace(5000)
	small.Extra = map[int32]string{7: "note=x"}
	if err := WriteBinary(&bin, small); err != nil {
		t.Fatal(err)
	}
	smallP := write("small.bin", bin.Bytes())
	bin.Reset()
	// Endpoint ids of one to three varint bytes (the decoder's inline
	// cases).
	if err := WriteBinary(&bin, noisyTraceEPs(100_000, 40_000)); err != nil {
		t.Fatal(err)
	}
	manyEPs := write("eps.bin", bin.Bytes())
	bin.Reset()
	actors, err := ReadText(bytes.NewReader([]byte(actorSample)), "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteBinary(&bin, actors); err != nil {
		t.Fatal(err)
	}
	actorsP := write("actors.bin", bin.Bytes()) // line references: declined
	text := write("t.trace", []byte(sample))
	type tcase struct {
		name    string
		path    string
		keep    bool
		ok      bool
		noNames bool // ReadFileEnvelopesNoNames
	}
	cases := []tcase{
		{"big", big, false, true, false},
		{"big-kept", big, true, true, false},
		{"small", smallP, false, true, false},
		{"many endpoints", manyEPs, false, true, false},
		{"cut", cut, false, false, false},
		{"actors", actorsP, false, false, false},
		{"text", text, false, false, false},
		{"v2", "testdata/v2.bin", false, false, false},
		{"stdin", "-", false, false, false},
		{"missing", filepath.Join(dir, "missing"), false, false, false},
	}
	// The same without the endpoints' names: the same envelopes and
	// tables but t.Endpoints, which holds the first name only.
	for _, tc := range slices.Clone(cases) {
		tc.name += "-nonames"
		tc.noNames = true
		cases = append(cases, tc)
	}
	for _, tc := range cases {
		hugemem.Keep(tc.keep)
		read := ReadFileEnvelopesOnly
		if tc.noNames {
			read = ReadFileEnvelopesNoNames
		}
		got, env, release, ok := read(tc.path)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
		if !ok {
			if got != nil || env != nil || release != nil {
				t.Errorf("%s: declined, but kept %v, %d envelopes", tc.name, got != nil, len(env))
			}
			hugemem.Keep(false)
			continue
		}
		want, err := ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(env) != len(want.Messages) {
			t.Fatalf("%s: %d envelopes, want %d", tc.name, len(env), len(want.Messages))
		}
		for i := range env {
			if env[i] != EnvelopeOf(&want.Messages[i]) {
				t.Fatalf("%s: envelope %d is %+v, want %+v", tc.name, i, env[i], EnvelopeOf(&want.Messages[i]))
			}
		}
		want.Messages, want.Extra = nil, nil
		want.MessagesEdited() // (its decoder's mark, of the messages taken away)
		if tc.noNames {
			if len(want.Endpoints) < 2 {
				t.Fatalf("%s: %d endpoints: the case tests nothing", tc.name, len(want.Endpoints))
			}
			want.Endpoints = want.Endpoints[:1]
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: tables or warnings differ", tc.name)
		}
		release()
		hugemem.Keep(false)
	}
}

// decompressedBytes is the content of the binary trace data.
func decompressedBytes(t *testing.T, data []byte) []byte {
	out, r, free := decompressWhole(bytes.NewReader(data[len(BinaryMagic):]), len(data))
	defer free()
	if r != nil {
		t.Fatal("not a whole binary trace")
	}
	return append([]byte(nil), out...)
}

// noisyTrace is n messages among 20 nodes over 5000 endpoints with random
// gaps, delays, sizes and actors: a binary trace that does not compress
// far (decompressWhole takes at most 16 times its input).
func noisyTrace(n int) *Trace { return noisyTraceEPs(n, 5000) }

// noisyTraceEPs is noisyTrace over neps endpoints.
func noisyTraceEPs(n, neps int) *Trace {
	t := New()
	r := rand.New(rand.NewSource(1))
	var nodes []NodeID
	for i := range 20 {
		nodes = append(nodes, t.Node(fmt.Sprint("n", i)))
	}
	var eps []EndpointID
	for i := range neps {
		eps = append(eps, t.Endpoint(fmt.Sprintf("10.%d.%d.%d:%d", i/62500, i/250%250, i%250, 1024+i%60000)))
	}
	ts := int64(1700000000e9)
	for i := range n {
		ts += r.Int63n(2_000_000)
		m := Message{Send: ts, Recv: ts + r.Int63n(5_000_000), ID: int64(i), Bytes: r.Int63n(100_000),
			Src: nodes[r.Intn(20)], Dst: nodes[r.Intn(20)], SrcEP: eps[r.Intn(neps)], DstEP: eps[r.Intn(neps)],
			Call: NoRef, Truth: NoRef, Kind: Kind(r.Intn(3)), SrcActor: NoActor, DstActor: NoActor}
		if i%4 == 0 {
			m.Recv = Unknown
		}
		if i%6 == 1 {
			m.SrcActor = t.Actor(m.Src, fmt.Sprint("1/", r.Intn(30)))
		}
		t.Messages = append(t.Messages, m)
	}
	return t
}

// TestDecompressFile: decompressing a binary trace's file through its
// mapping gives what reading it into memory gives, and declines (f not
// read) where the size is not the file's or the data does not decode,
// so that decompressWhole reads the file as before.
func TestDecompressFile(t *testing.T) {
	var bin bytes.Buffer
	if err := WriteBinary(&bin, noisyTrace(20_000)); err != nil {
		t.Fatal(err)
	}
	good := bin.Bytes()
	flip := append([]byte(nil), good...)
	flip[len(flip)/2] ^= 0x40
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		data  []byte
		delta int // added to the size given
		ok    bool
	}{
		{"good", good, 0, true},
		{"cut", good[:len(good)/2], 0, false},
		{"flipped", flip, 0, false},
		{"trailing", append(append([]byte(nil), good...), "trailing"...), 0, false},
		{"size short", good, -1, false},
		{"size long", good, 1, false},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(int64(len(BinaryMagic)), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		out, free, ok := decompressFile(f, len(tc.data)+tc.delta)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
		if at, _ := f.Seek(0, io.SeekCurrent); at != int64(len(BinaryMagic)) {
			t.Errorf("%s: the file was read (at %d)", tc.name, at)
		}
		want, r, freeWant := decompressWhole(bytes.NewReader(tc.data[len(BinaryMagic):]), len(tc.data))
		if ok && (r != nil || !bytes.Equal(out, want)) {
			t.Errorf("%s: %d bytes through the mapping, %d read (reader %v)", tc.name, len(out), len(want), r != nil)
		}
		if ok {
			free()
		}
		freeWant()
		f.Close()
	}
}
