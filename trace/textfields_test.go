package trace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestFieldsWordwise: the eight-bytes-at-a-time splitter agrees with the
// byte loop on random lines of spaces, tabs and other bytes.
func TestFieldsWordwise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alpha := []byte("  \t\tab=.:-\x00\x80\xff\x09\x20\x29\x19")
	var a, b TextScanner
	for n := 0; n < 20000; n++ {
		line := make([]byte, r.IntN(70))
		for i := range line {
			line[i] = alpha[r.IntN(len(alpha))]
		}
		got, want := a.fields(line), b.fieldsScalar(line)
		if len(got) != len(want) {
			t.Fatalf("%q: %q, want %q", line, got, want)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: %q, want %q", line, got, want)
			}
		}
	}
}

// fieldsScalar is the byte loop the wordwise splitter replaced.
func (s *TextScanner) fieldsScalar(line []byte) [][]byte {
	f := s.f[:0]
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if j > i {
			f = append(f, line[i:j])
		}
		i = j
	}
	s.f = f
	return f
}

// TestReadTextNameCache: names read through ReadText's cache come back as
// written — short and long (not cached) names, endpoints that share their
// first and last eight bytes, names reused near and far apart.
func TestReadTextNameCache(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(TextHeader + "\n")
	type row struct{ src, sep, dst, dep, sa, da string }
	var rows []row
	for i := 0; i < 6000; i++ {
		long := strings.Repeat("h", 20+i%15) // some above cachedNameMax
		rows = append(rows, row{
			src: []string{"a", "b", long, "host/exe/" + strconv.Itoa(i%7)}[i%4],
			sep: fmt.Sprintf("10.%d.0.1:%d", i%3, 30000+i%2000),
			dst: []string{"b", "a", "c"}[i%3],
			dep: fmt.Sprintf("10.0.0.%d%s:80", i%5, strings.Repeat("0", i%4)),
			// The same thread names on different nodes are different actors.
			sa: fmt.Sprintf("%d/%d", 100+i%3, 100+i%5), da: fmt.Sprintf("%d/%d", 100+i%5, 100+i%3),
		})
	}
	for i, r := range rows {
		fmt.Fprintf(&b, "%d.5 %s %s %d.6 %s %s 10 sa=%s da=%s\n", i, r.src, r.sep, i, r.dst, r.dep, r.sa, r.da)
	}
	tr, err := ReadText(&b, "names")
	if err != nil || len(tr.Warnings) > 0 {
		t.Fatal(err, tr.Warnings)
	}
	for i, r := range rows {
		m := &tr.Messages[i]
		got := row{tr.NodeName(m.Src), tr.EndpointName(m.SrcEP), tr.NodeName(m.Dst), tr.EndpointName(m.DstEP),
			tr.ActorName(m.Src, m.SrcActor), tr.ActorName(m.Dst, m.DstActor)}
		if got != r {
			t.Fatalf("line %d: %+v, want %+v", i+2, got, r)
		}
	}
	if err := tr.CheckValid(); err != nil {
		t.Fatal(err)
	}
	// Interning after the read still finds what was read.
	if id := tr.Endpoint(rows[17].sep); tr.EndpointName(id) != rows[17].sep || int(id) >= len(tr.Endpoints) || id != tr.Messages[17].SrcEP {
		t.Fatalf("Endpoint(%q) = %d after the read, message has %d", rows[17].sep, id, tr.Messages[17].SrcEP)
	}
}

func TestTextMessagesEstimate(t *testing.T) {
	head := bytes.Repeat([]byte(strings.Repeat("x", 99)+"\n"), 40) // 100 bytes a line
	for _, tc := range []struct {
		head     []byte
		size     int64
		min, max int
	}{
		{head, 1_000_000, 10_000, 10_600},
		{head, 0, 0, 0},                   // size unknown
		{[]byte("one line\n"), 1e6, 0, 0}, // too few lines to tell
	} {
		if n := textMessages(tc.head, tc.size); n < tc.min || n > tc.max {
			t.Errorf("textMessages(%d-byte head, %d) = %d, want %d…%d", len(tc.head), tc.size, n, tc.min, tc.max)
		}
	}
}
