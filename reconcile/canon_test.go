package reconcile

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wap5/libsockcap"
	"wap5/trace"
)

// TestCanonicalOutput: the trace is a function of the messages (step 9,
// canon.go). The same inputs given in the opposite order — so the sources'
// merge breaks ties of time the other way and the matcher decides messages,
// and names nodes and endpoints, in another order — give the same bytes of
// binary trace (but for the warnings: step 0 names the clocks' offsets
// against the first source); and in every trace the messages are in canonical order and
// the tables numbered by first use.
func TestCanonicalOutput(t *testing.T) {
	type input struct {
		name    string
		sources func(rev bool) []Source
		opts    Options
	}
	var inputs []input
	files, _ := filepath.Glob("testdata/scenarios/*.txtar")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := parseTxtar(string(data))
		inputs = append(inputs, input{filepath.Base(file), func(rev bool) []Source {
			s := buildSources(t, sc.sections["events"])
			if rev {
				slices.Reverse(s)
			}
			return s
		}, parseOptions(t, sc.sections["options"])})
	}
	for _, dir := range []string{"testdata/logs/testbed"} {
		logs, err := libsockcap.FindLogs(dir)
		if err != nil || len(logs) < 2 {
			t.Fatalf("%s: %d logs, %v", dir, len(logs), err)
		}
		for _, g := range []Granularity{ByHost, ByProcess} {
			inputs = append(inputs, input{dir, func(rev bool) []Source {
				var s []Source
				for _, f := range logs {
					src, err := NewLogSource(f)
					if err != nil {
						t.Fatal(err)
					}
					s = append(s, src)
				}
				if rev {
					slices.Reverse(s)
				}
				return s
			}, Options{Granularity: g}})
		}
	}
	differ := 0
	for _, in := range inputs {
		var out [2][]byte
		var decided [2][]string
		var text [2]string
		for k, rev := range []bool{false, true} {
			o := in.opts
			var names *namer
			tr, m, err := reconcileSources(in.sources(rev), o)
			if err != nil {
				t.Fatalf("%s: %v", in.name, err)
			}
			names = m.names
			checkCanonical(t, in.name, tr)
			// Warnings aside: step 0 reports clock offsets against the
			// first source.
			text[k] = strings.Join(tr.Warnings, "\n")
			tr.Warnings = nil
			var b bytes.Buffer
			if err := trace.WriteBinary(&b, tr); err != nil {
				t.Fatal(err)
			}
			out[k] = b.Bytes()
			var tb bytes.Buffer
			trace.WriteText(&tb, tr)
			text[k] = tb.String() + "warnings:\n" + text[k]
			for _, n := range names.t.Nodes {
				decided[k] = append(decided[k], n.Name)
			}
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("%s: the binary trace depends on the order of the inputs:\n%s\nreversed:\n%s", in.name, text[0], text[1])
		}
		if !slices.Equal(decided[0], decided[1]) {
			differ++
		}
	}
	// The test shows something only where the matcher named nodes in
	// another order.
	if differ == 0 {
		t.Errorf("no input was named in another order when reversed")
	}
	t.Logf("%d of %d inputs named in another order when reversed", differ, len(inputs))
}

// checkCanonical checks that tr's messages are in canonical order (time,
// then content by name) and its tables numbered by first use, with the
// unused entries after, by name.
func checkCanonical(t *testing.T, name string, tr *trace.Trace) {
	t.Helper()
	ms := tr.Messages
	for i := 1; i < len(ms); i++ {
		a, b := &ms[i-1], &ms[i]
		if a.Time() > b.Time() {
			t.Fatalf("%s: message %d before %d out of time order", name, i-1, i)
		}
		if a.Time() == b.Time() && bytes.Compare(tieKey(tr, a), tieKey(tr, b)) > 0 {
			t.Fatalf("%s: messages %d and %d of one time out of content order:\n%s\n%s", name, i-1, i, tieKey(tr, a), tieKey(tr, b))
		}
	}
	nodes, eps := 0, 1
	nodeSeen := make([]bool, len(tr.Nodes))
	epSeen := make([]bool, len(tr.Endpoints))
	for i := range ms {
		for _, x := range [2]struct {
			n trace.NodeID
			e trace.EndpointID
		}{{ms[i].Src, ms[i].SrcEP}, {ms[i].Dst, ms[i].DstEP}} {
			if !nodeSeen[x.n] {
				if int(x.n) != nodes {
					t.Fatalf("%s: node %d first used as the %d-th", name, x.n, nodes)
				}
				nodeSeen[x.n] = true
				nodes++
			}
			if x.e != trace.NoEndpoint && !epSeen[x.e] {
				if int(x.e) != eps {
					t.Fatalf("%s: endpoint %d first used as the %d-th", name, x.e, eps)
				}
				epSeen[x.e] = true
				eps++
			}
		}
	}
	rest := tr.Nodes[nodes:]
	if !slices.IsSortedFunc(rest, func(a, b trace.Node) int { return bytes.Compare([]byte(a.Name), []byte(b.Name)) }) {
		t.Fatalf("%s: unused nodes not sorted by name", name)
	}
	if !slices.IsSorted(tr.Endpoints[eps:]) {
		t.Fatalf("%s: unused endpoints not sorted by name", name)
	}
}

// tieKey is the canonical tie order's key of a message (canon.go) as
// bytes that compare in that order: the times as fixed-width big-endian
// (offset so that Unknown comes first), names NUL-terminated.
func tieKey(tr *trace.Trace, m *trace.Message) []byte {
	var b []byte
	num := func(v int64) {
		u := uint64(v) ^ 1<<63
		for s := 56; s >= 0; s -= 8 {
			b = append(b, byte(u>>s))
		}
	}
	str := func(s string) { b = append(append(b, s...), 0) }
	num(m.Send)
	num(m.Recv)
	str(tr.NodeName(m.Src))
	str(tr.EndpointName(m.SrcEP))
	str(tr.NodeName(m.Dst))
	str(tr.EndpointName(m.DstEP))
	num(m.Bytes)
	b = append(b, byte(m.Kind))
	actor := func(n trace.NodeID, a trace.ActorID) {
		if a == trace.NoActor {
			b = append(b, 0)
			return
		}
		b = append(b, 1)
		str(tr.ActorName(n, a))
	}
	actor(m.Src, m.SrcActor)
	actor(m.Dst, m.DstActor)
	return b
}
