package trace

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

func TestMessageLayout(t *testing.T) {
	// actors.md: the two actor columns fit after Kind, Message stays 64 bytes.
	var m Message
	if s := unsafe.Sizeof(m); s != 64 {
		t.Fatalf("Message is %d bytes, want exactly 64", s)
	}
	if o := unsafe.Offsetof(m.SrcActor); o <= unsafe.Offsetof(m.Kind) {
		t.Errorf("SrcActor at offset %d, not after Kind (%d)", o, unsafe.Offsetof(m.Kind))
	}
}

const actorSample = `# wap5 message trace v1
1.000000000 client 10.0.0.1:40001 1.000100000 web 10.0.0.2:80 512 kind=call call=1 sa=100/100 da=200/201
1.000200000 web 10.0.0.2:5000 1.000300000 db 10.0.0.3:5432 80 sa=200/201 da=300/300
1.000400000 db 10.0.0.3:5432 1.000500000 web 10.0.0.2:5000 90 sa=300/300 da=200/201
1.000600000 web 10.0.0.2:80 1.000700000 client 10.0.0.1:40001 1024 kind=return call=1 sa=200/201 span=x
1.000800000 web 10.0.0.2:80 - 10.0.0.9:80 10.0.0.9:80 10 sa=200/202
- 10.0.0.9:80 10.0.0.9:80 1.000900000 web 10.0.0.2:80 11 da=200/202
`

func TestActorsText(t *testing.T) {
	tr, err := ReadText(strings.NewReader(actorSample), "actors")
	if err != nil || len(tr.Warnings) > 0 {
		t.Fatalf("read: %v %v", err, tr.Warnings)
	}
	if err := tr.CheckValid(); err != nil {
		t.Fatal(err)
	}
	name := func(n NodeID, a ActorID) string { return tr.ActorName(n, a) }
	for i, tc := range []struct{ sa, da string }{
		{"100/100", "200/201"},
		{"200/201", "300/300"},
		{"300/300", "200/201"},
		{"200/201", ""},
		{"200/202", ""},
		{"", "200/202"},
	} {
		m := &tr.Messages[i]
		if got := name(m.Src, m.SrcActor); got != tc.sa {
			t.Errorf("message %d: sa %q, want %q", i, got, tc.sa)
		}
		if got := name(m.Dst, m.DstActor); got != tc.da {
			t.Errorf("message %d: da %q, want %q", i, got, tc.da)
		}
	}
	web, _ := tr.LookupNode("web")
	// Same actor iff same node and same non-zero id: the thread that
	// received the call made the database call and the answer.
	if a, b := tr.Messages[0].DstActor, tr.Messages[1].SrcActor; a != b || a == NoActor || tr.Messages[0].Dst != web {
		t.Errorf("call receiver %d and child sender %d should be the same actor", a, b)
	}
	if tr.Messages[4].SrcActor == tr.Messages[1].SrcActor {
		t.Errorf("200/202 and 200/201 got the same id")
	}
	if got := len(tr.Actors[web]); got != 2 {
		t.Errorf("web has %d actors, want 2: %q", got, tr.Actors[web])
	}
	if x := tr.Extra[3]; x != "span=x" {
		t.Errorf("extra of message 3 = %q", x)
	}
	var out bytes.Buffer
	if err := WriteText(&out, tr); err != nil {
		t.Fatal(err)
	}
	if out.String() != actorSample {
		t.Errorf("text round trip:\n%s\nwant\n%s", out.String(), actorSample)
	}
}

func TestActorsBinary(t *testing.T) {
	tr, err := ReadText(strings.NewReader(actorSample), "actors")
	if err != nil {
		t.Fatal(err)
	}
	var bin bytes.Buffer
	if err := WriteBinary(&bin, tr); err != nil {
		t.Fatal(err)
	}
	back, err := ReadBinary(&bin, "bin")
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	WriteText(&a, tr)
	WriteText(&b, back)
	if a.String() != b.String() {
		t.Errorf("binary round trip:\n%s\nwant\n%s", b.String(), a.String())
	}
	for i := range tr.Messages {
		if tr.Messages[i] != back.Messages[i] {
			t.Errorf("message %d: %+v, want %+v", i, back.Messages[i], tr.Messages[i])
		}
	}
	// Interning continues after a read: known names keep their ids.
	web, _ := back.LookupNode("web")
	if got := back.Actor(web, "200/201"); got != tr.Messages[1].SrcActor {
		t.Errorf("Actor(web, 200/201) after reading = %d, want %d", got, tr.Messages[1].SrcActor)
	}
	if got := back.Actor(web, "200/999"); got != 3 {
		t.Errorf("new actor on web = %d, want 3", got)
	}
}

// TestBinaryVersion1 reads a file written before actors existed
// (testdata/v1.bin: TestTextRoundTrip's sample).
func TestBinaryVersion1(t *testing.T) {
	f, err := os.Open("testdata/v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := Read(f, "v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ReadText(strings.NewReader(sample), "sample")
	var a, b bytes.Buffer
	WriteText(&a, tr)
	WriteText(&b, want)
	if a.String() != b.String() {
		t.Errorf("version 1 file reads as\n%s\nwant\n%s", a.String(), b.String())
	}
	if tr.HasActors() {
		t.Errorf("a version 1 file has actors: %q", tr.Actors)
	}
}

func TestActorIntern(t *testing.T) {
	tr := New()
	n := tr.Node("host")
	other := tr.Node("other")
	for i, tc := range []struct {
		node NodeID
		name string
		want ActorID
	}{
		{n, "", NoActor},
		{n, "1/1", 1},
		{n, "1/2", 2},
		{n, "1/1", 1},
		{other, "1/1", 1}, // per node
		{other, "9/9", 2},
		{n, "2/2", 3},
	} {
		if got := tr.Actor(tc.node, tc.name); got != tc.want {
			t.Errorf("%d: Actor(%d, %q) = %d, want %d", i, tc.node, tc.name, got, tc.want)
		}
	}
	if got := tr.ActorName(other, 2); got != "9/9" {
		t.Errorf("ActorName(other, 2) = %q", got)
	}
	for _, a := range []ActorID{0, 4, 1000} {
		if got := tr.ActorName(n, a); got != "" {
			t.Errorf("ActorName(host, %d) = %q, want \"\"", a, got)
		}
	}
	if got := tr.ActorName(NodeID(7), 1); got != "" {
		t.Errorf("ActorName of a node without actors = %q", got)
	}
}

func TestActorOverflow(t *testing.T) {
	tr := New()
	n := tr.Node("busy")
	for i := 1; i <= MaxActors; i++ {
		if got := tr.Actor(n, fmt.Sprintf("1/%d", i)); got != ActorID(i) {
			t.Fatalf("actor %d got id %d", i, got)
		}
	}
	for i := 0; i < 3; i++ {
		if got := tr.Actor(n, fmt.Sprintf("2/%d", i)); got != NoActor {
			t.Fatalf("actor beyond %d got id %d, want unknown", MaxActors, got)
		}
	}
	if got := tr.Actor(n, "1/5"); got != 5 {
		t.Errorf("known actor after overflow = %d, want 5", got)
	}
	if len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0], "busy") {
		t.Errorf("warnings %q, want one naming the node", tr.Warnings)
	}
	if got := tr.Actor(tr.Node("calm"), "1/1"); got != 1 {
		t.Errorf("another node after overflow: %d", got)
	}
}

func TestActorCheckValid(t *testing.T) {
	base := func() *Trace {
		tr := New()
		a, b := tr.Node("a"), tr.Node("b")
		tr.Add(Message{Send: 1, Recv: 2, Src: a, Dst: b, ID: NoRef, Call: NoRef, Truth: NoRef,
			SrcActor: tr.Actor(a, "1/1"), DstActor: tr.Actor(b, "2/2")})
		return tr
	}
	for _, tc := range []struct {
		name string
		brk  func(*Trace)
		want string
	}{
		{"valid", func(*Trace) {}, ""},
		{"source actor out of range", func(tr *Trace) { tr.Messages[0].SrcActor = 2 }, "source actor 2"},
		{"destination actor of a node without", func(tr *Trace) { tr.Messages[0].Dst = 0; tr.Messages[0].DstActor = 2 }, "destination actor 2"},
		{"table beyond nodes", func(tr *Trace) { tr.Actors = append(tr.Actors, []string{"x"}) }, "actor table for node 2"},
		{"empty name", func(tr *Trace) { tr.Actors[0][0] = "" }, "bad name"},
		{"space in name", func(tr *Trace) { tr.Actors[0][0] = "1 1" }, "bad name"},
		{"duplicate", func(tr *Trace) { tr.Actors[0] = append(tr.Actors[0], "1/1") }, "named twice"},
	} {
		tr := base()
		tc.brk(tr)
		err := tr.CheckValid()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
