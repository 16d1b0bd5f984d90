package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bigTrace has more than one block of messages of every shape: unknown
// send or receive times, labels, extra text, actors, times going back.
func bigTrace(n int) *Trace {
	t := New()
	a, b, c := t.Node("a"), t.Node("b"), t.Node("c")
	ea, eb := t.Endpoint("10.0.0.1:40000"), t.Endpoint("10.0.0.2:80")
	ts := int64(1700000000e9)
	for i := 0; i < n; i++ {
		ts += int64(i%7) * 1000
		if i%1000 == 999 {
			ts -= 5000 // unsorted now and then
		}
		m := Message{Send: ts, Recv: ts + int64(i%13)*100, ID: int64(i), Bytes: int64(i % 3000), Src: a, Dst: b,
			SrcEP: ea, DstEP: eb, Call: NoRef, Truth: NoRef}
		switch i % 5 {
		case 0:
			m.Kind, m.Call = KindCall, int32(i/5)
		case 1:
			m.Kind, m.Call, m.Src, m.Dst, m.SrcEP, m.DstEP = KindReturn, int32(i/5), b, a, eb, ea
		case 2:
			m.Recv, m.Dst, m.DstEP = Unknown, c, NoEndpoint
		case 3:
			m.Send, m.Src, m.SrcEP = Unknown, c, NoEndpoint
		}
		if i%11 == 0 {
			m.Truth = t.Ref32(fmt.Sprintf("t%d", i/11))
		}
		if i%17 == 0 {
			m.ID = t.Ref(fmt.Sprintf("x-%d", i))
		}
		if i%3 == 0 && m.Send != Unknown {
			m.SrcActor = t.Actor(m.Src, fmt.Sprintf("1/%d", i%40))
		}
		if i%4 == 0 && m.Recv != Unknown {
			m.DstActor = t.Actor(m.Dst, fmt.Sprintf("2/%d", i%9))
		}
		if i%23 == 0 {
			if t.Extra == nil {
				t.Extra = map[int32]string{}
			}
			t.Extra[int32(i)] = fmt.Sprintf("span=%d", i)
		}
		t.Add(m)
	}
	return t
}

func textOf(t *testing.T, tr *Trace) string {
	var b bytes.Buffer
	if err := WriteText(&b, tr); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestColumnsRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 7, colBlock, colBlock + 1, 2*colBlock + 333} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tr := bigTrace(n)
			if err := tr.CheckValid(); err != nil {
				t.Fatal(err)
			}
			var bin bytes.Buffer
			if err := WriteBinary(&bin, tr); err != nil {
				t.Fatal(err)
			}
			back, err := ReadBinary(bytes.NewReader(bin.Bytes()), "bin")
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Warnings) > 0 {
				t.Fatalf("warnings: %v", back.Warnings)
			}
			if len(back.Messages) != n {
				t.Fatalf("%d messages back, want %d", len(back.Messages), n)
			}
			for i := range tr.Messages {
				if back.Messages[i] != tr.Messages[i] {
					t.Fatalf("message %d: %+v, want %+v", i, back.Messages[i], tr.Messages[i])
				}
			}
			if a, b := textOf(t, back), textOf(t, tr); a != b {
				t.Fatalf("text differs")
			}
		})
	}
}

// TestColumnsDamage: a truncated or corrupted file keeps the whole blocks
// before the damage, with a warning, and never panics.
func TestColumnsDamage(t *testing.T) {
	tr := bigTrace(3*colBlock + 10)
	var bin bytes.Buffer
	if err := WriteBinary(&bin, tr); err != nil {
		t.Fatal(err)
	}
	data := bin.Bytes()
	for _, cut := range []int{len(data) - 1, len(data) * 3 / 4, len(data) / 2, 40} {
		back, err := ReadBinary(bytes.NewReader(data[:cut]), "cut")
		if err != nil {
			continue // the tables themselves were cut
		}
		if len(back.Messages)%colBlock != 0 || len(back.Messages) >= len(tr.Messages) {
			t.Errorf("cut at %d: %d messages, want whole blocks", cut, len(back.Messages))
		}
		if len(back.Warnings) == 0 || !strings.Contains(back.Warnings[len(back.Warnings)-1], "cut: binary trace") {
			t.Errorf("cut at %d: warnings %q", cut, back.Warnings)
		}
		for i := range back.Messages {
			if back.Messages[i] != tr.Messages[i] {
				t.Fatalf("cut at %d: message %d differs", cut, i)
			}
		}
	}
}

// TestBinaryVersion2 reads a row-format file with actors (written by
// version 2, testdata/v2.bin: actorSample).
func TestBinaryVersion2(t *testing.T) {
	data, err := os.ReadFile("testdata/v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(data), "v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, tr); got != actorSample {
		t.Errorf("version 2 file reads as\n%s\nwant\n%s", got, actorSample)
	}
}

// TestDecodeChecks: the checks folded into the column decoder let through
// exactly what CheckValid lets through. Each case breaks one message of a
// trace of several blocks in one way CheckValid rejects; the binary reader
// must fail with CheckValid's own error, and the unbroken trace must read
// without a second look at its messages.
func TestDecodeChecks(t *testing.T) {
	const n = colBlock + 7
	base := bigTrace(n)
	var buf bytes.Buffer
	if err := WriteBinary(&buf, base); err != nil {
		t.Fatal(err)
	}
	if _, decoded, err := readBinary(bytes.NewReader(buf.Bytes()), "x"); err != nil || !decoded {
		t.Fatalf("valid trace: %v, checked by the decoder: %v", err, decoded)
	}
	for _, at := range []int{0, colBlock, n - 1} {
		for name, brk := range map[string]func(m *Message){
			"src node":       func(m *Message) { m.Src = 3 },
			"dst node":       func(m *Message) { m.Dst = 1 << 20 },
			"src endpoint":   func(m *Message) { m.SrcEP = 3 },
			"dst endpoint":   func(m *Message) { m.DstEP = 1 << 30 },
			"no time":        func(m *Message) { m.Send, m.Recv = Unknown, Unknown },
			"negative size":  func(m *Message) { m.Bytes = -5 },
			"kind":           func(m *Message) { m.Kind = 3 },
			"src actor":      func(m *Message) { m.SrcActor = 1000 },
			"dst actor":      func(m *Message) { m.Src, m.Dst, m.DstActor = 0, 2, 1 }, // c has no actors
			"id label":       func(m *Message) { m.ID = -2 - int64(len(base.Labels)) },
			"call label":     func(m *Message) { m.Call = -2 - int32(len(base.Labels)) - 7 },
			"truth label":    func(m *Message) { m.Truth = math.MinInt32 },
			"src node, high": func(m *Message) { m.Src = -1 },
		} {
			tr := bigTrace(n)
			brk(&tr.Messages[at])
			want := tr.CheckValid()
			if want == nil {
				t.Fatalf("%s at %d: CheckValid accepts it", name, at)
			}
			buf.Reset()
			if err := WriteBinary(&buf, tr); err != nil {
				t.Fatal(err)
			}
			_, err := ReadBinary(bytes.NewReader(buf.Bytes()), "x")
			if err == nil || err.Error() != "x: "+want.Error() {
				t.Errorf("%s at %d: read gives %v, want x: %v", name, at, err, want)
			}
		}
	}
	// A label id the tables do have, and a line reference, are fine.
	tr := bigTrace(n)
	tr.Messages[5].ID = -1 - int64(len(tr.Labels))
	tr.Messages[6].ID = LineRef(6)
	buf.Reset()
	if err := WriteBinary(&buf, tr); err != nil {
		t.Fatal(err)
	}
	if _, decoded, err := readBinary(bytes.NewReader(buf.Bytes()), "x"); err != nil || decoded {
		t.Errorf("valid references: %v, checked by the decoder: %v (the line reference needs CheckValid)", err, decoded)
	}
}

// TestUvAt: the column decoder's varints agree with encoding/binary's on
// every length, at the end of the buffer and on damaged input.
func TestUvAt(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		var buf []byte
		for j := rnd.IntN(4); j >= 0; j-- {
			v := rnd.Uint64() >> rnd.UintN(64)
			buf = binary.AppendUvarint(buf, v)
		}
		if rnd.IntN(4) == 0 { // damage: random bytes, a cut, a high bit set
			switch rnd.IntN(3) {
			case 0:
				buf[rnd.IntN(len(buf))] = byte(rnd.Uint32())
			case 1:
				buf = buf[:rnd.IntN(len(buf))]
			case 2:
				buf[len(buf)-1] |= 0x80
			}
		}
		for p := 0; p <= len(buf); {
			want, n := binary.Uvarint(buf[p:])
			got, q := uvAt(buf, p)
			if n <= 0 {
				if q <= len(buf) {
					t.Fatalf("%x at %d: got %d, %d; want damage", buf, p, got, q)
				}
				break
			}
			if got != want || q != p+n {
				t.Fatalf("%x at %d: got %d, %d; want %d, %d", buf, p, got, q, want, p+n)
			}
			p = q
		}
	}
}

// TestEnsureCapacity: the streaming reader's buffer holds exactly 1 MB (or
// the request): how far ahead it reads decides where a damaged stream
// stops, so a larger buffer (huge pages round up) would keep fewer messages.
func TestEnsureCapacity(t *testing.T) {
	data := make([]byte, 3<<20)
	for _, n := range []int{10, 1 << 20, 1<<20 + 5} {
		b := &binReader{r: bytes.NewReader(data)}
		if !b.ensure(n) || cap(b.buf) != max(n, 1<<20) {
			t.Fatalf("ensure(%d): cap %d, want %d", n, cap(b.buf), max(n, 1<<20))
		}
	}
}

// TestReadFileMapped: ReadFile reads a binary trace from the file itself
// (mapped, not copied); whole, cut or corrupted, it gives what Read gives on
// the same bytes from a stream: the messages, the warnings and the error.
func TestReadFileMapped(t *testing.T) {
	tr := bigTrace(3*colBlock + 10)
	var bin bytes.Buffer
	if err := WriteBinary(&bin, tr); err != nil {
		t.Fatal(err)
	}
	data := bin.Bytes()
	flip := func(at int) []byte {
		d := slices.Clone(data)
		d[at] ^= 0x5a
		return d
	}
	cases := map[string][]byte{
		"whole":          data,
		"cut last byte":  data[:len(data)-1],
		"cut 3/4":        data[:len(data)*3/4],
		"cut half":       data[:len(data)/2],
		"cut in tables":  data[:40],
		"magic only":     data[:len(BinaryMagic)],
		"flipped 3/4":    flip(len(data) * 3 / 4),
		"flipped half":   flip(len(data) / 2),
		"flipped header": flip(len(BinaryMagic) + 2),
	}
	dir := t.TempDir()
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "of").Replace(name))
			if err := os.WriteFile(path, d, 0o600); err != nil {
				t.Fatal(err)
			}
			want, wantErr := Read(bytes.NewReader(d), path)
			got, gotErr := ReadFile(path)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			if !slices.Equal(got.Messages, want.Messages) || !slices.Equal(got.Warnings, want.Warnings) {
				t.Errorf("%d messages, warnings %q; want %d, %q", len(got.Messages), got.Warnings, len(want.Messages), want.Warnings)
			}
		})
	}
}
