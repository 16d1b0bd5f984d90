package reconcile

import (
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"wap5/trace"
)

// streamCollect keeps what a StreamSink is given.
type streamCollect struct {
	msgs   []trace.Message
	ended  int
	n      int
	pieces int
}

func (c *streamCollect) Messages(t *trace.Trace, m []trace.Message) error {
	if c.ended > 0 {
		panic("Messages after End")
	}
	for i := range m {
		// Every name the message uses is in the tables already.
		if int(m[i].Src) >= len(t.Nodes) || int(m[i].Dst) >= len(t.Nodes) || int(m[i].SrcEP) >= len(t.Endpoints) || int(m[i].DstEP) >= len(t.Endpoints) {
			panic("message names a node or endpoint not yet in the tables")
		}
	}
	c.msgs = append(c.msgs, m...)
	c.pieces++
	return nil
}

func (c *streamCollect) End(t *trace.Trace, n int) error {
	c.ended++
	c.n = n
	return nil
}

// withChunk runs f with the matcher's blocks of n messages and no slack
// for disorder, so that the small test inputs (a fraction of a second
// each) are sealed and released many times over.
func withChunk(n int, f func()) {
	old, oldSlack := chunkSize, streamSlack
	chunkSize, streamSlack = n, 0
	defer func() { chunkSize, streamSlack = old, oldSlack }()
	f()
}

// TestStreamSameAsWhole: streamed through the window with tiny blocks
// (released after nearly every observation), every scenario and every
// test input gives exactly the messages, order, numbering, tables and
// warnings of the reconciliation that sorts everything at the end.
func TestStreamSameAsWhole(t *testing.T) {
	type input struct {
		name string
		run  func(opts Options) (*trace.Trace, error)
	}
	var inputs []input
	files, _ := filepath.Glob("testdata/scenarios/*.txtar")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := parseTxtar(string(data))
		base := parseOptions(t, sc.sections["options"])
		inputs = append(inputs, input{filepath.Base(file), func(opts Options) (*trace.Trace, error) {
			o := base
			o.Stream, o.SortWindow = opts.Stream, opts.SortWindow
			return ReconcileSources(buildSources(t, sc.sections["events"]), o)
		}})
	}
	for _, in := range []Inputs{
		{Logs: []string{"testdata/logs/testbed"}},
		{Logs: []string{"testdata/logs/loopback", "testdata/logs/damaged.sclog.zst"}},
		{Pcaps: []string{"../testdata/pcap/nat-client-side.pcap", "../testdata/pcap/nat-server-side.pcapng"}},
		{Logs: []string{"testdata/logs/testbed"}, Pcaps: []string{"../testdata/pcap/nat-client-side.pcap"}},
	} {
		in := in
		inputs = append(inputs, input{strings.Join(append(in.Logs, in.Pcaps...), "+"), func(opts Options) (*trace.Trace, error) {
			return Reconcile(in, opts)
		}})
	}
	early := 0
	for _, in := range inputs {
		want, err := in.run(Options{})
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		for _, n := range []int{1, 2, 5, 64} {
			var c streamCollect
			var got *trace.Trace
			withChunk(n, func() { got, err = in.run(Options{Stream: &c}) })
			if err != nil {
				t.Fatalf("%s, blocks of %d: %v", in.name, n, err)
			}
			if c.ended != 1 || c.n != len(want.Messages) || len(got.Messages) != 0 {
				t.Fatalf("%s, blocks of %d: End called %d times with %d messages, trace kept %d; want once, %d, 0", in.name, n, c.ended, c.n, len(got.Messages), len(want.Messages))
			}
			if !reflect.DeepEqual(c.msgs, want.Messages) && (len(c.msgs) > 0 || len(want.Messages) > 0) {
				t.Errorf("%s, blocks of %d: streamed messages differ from the whole trace's (%d vs %d)", in.name, n, len(c.msgs), len(want.Messages))
				for i := range min(len(c.msgs), len(want.Messages)) {
					if c.msgs[i] != want.Messages[i] {
						t.Logf("first difference at %d: %+v, want %+v", i, c.msgs[i], want.Messages[i])
						break
					}
				}
			}
			if !reflect.DeepEqual(got.Warnings, want.Warnings) {
				t.Errorf("%s, blocks of %d: warnings %q, want %q", in.name, n, got.Warnings, want.Warnings)
			}
			if !reflect.DeepEqual(got.Nodes, want.Nodes) || !reflect.DeepEqual(got.Endpoints, want.Endpoints) || !reflect.DeepEqual(got.Actors, want.Actors) {
				t.Errorf("%s, blocks of %d: tables differ", in.name, n)
			}
			if n == 1 && c.pieces >= 2 {
				early++ // released before the end: the window was at work
			}
		}
	}
	// Inputs with untraced peers or aggregation hold everything to the end;
	// the others must have been written out as they went.
	if early < len(inputs)/3 {
		t.Errorf("only %d of %d inputs were released before their end", early, len(inputs))
	}
	t.Logf("%d of %d inputs released before their end", early, len(inputs))
}

// TestStreamLate: with a sort window far shorter than the time messages
// stay in flight, messages are written out of time order; all of them are
// there, and a warning says how many were late.
func TestStreamLate(t *testing.T) {
	in := Inputs{Logs: []string{"testdata/logs/testbed"}}
	want, err := Reconcile(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var c streamCollect
	var got *trace.Trace
	withChunk(1, func() { got, err = Reconcile(in, Options{Stream: &c, SortWindow: 1}) })
	if err != nil {
		t.Fatal(err)
	}
	// The same messages, whatever their order and numbering (of
	// messages, calls, and the tables: numbered by first use).
	strip := func(tr *trace.Trace, ms []trace.Message) []string {
		var out []string
		for _, m := range ms {
			m.ID, m.Call = trace.NoRef, trace.NoRef
			out = append(out, string(trace.AppendMessageText(nil, tr, &m)))
		}
		sort.Strings(out)
		return out
	}
	if !reflect.DeepEqual(strip(got, c.msgs), strip(want, want.Messages)) {
		t.Fatalf("late streaming lost or changed messages: %d, want %d", len(c.msgs), len(want.Messages))
	}
	late := false
	for _, w := range got.Warnings {
		late = late || strings.Contains(w, "out of time order")
	}
	inOrder := sort.SliceIsSorted(c.msgs, func(i, j int) bool { return c.msgs[i].Time() < c.msgs[j].Time() })
	if inOrder == late {
		t.Errorf("in time order: %v, late warning: %v (%q)", inOrder, late, got.Warnings)
	}
	if !late {
		t.Errorf("a 1 ns sort window wrote nothing late: the test shows nothing")
	}
}

// TestCallWindow: renumbering calls through the sliding window (with its
// map for calls left far behind) gives the numbers of the whole-trace
// renumbering, on a long sequence with returns far from their calls, calls
// never answered, and returns written before their calls.
func TestCallWindow(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type ev struct {
		old  int32
		kind trace.Kind
	}
	var evs []ev
	const calls = 300000
	pending := map[int]ev{}
	for i := int32(0); i < calls; i++ {
		switch r := rng.Intn(100); {
		case r < 3: // never answered
			evs = append(evs, ev{i, trace.KindCall})
		case r < 5: // answered much later
			evs = append(evs, ev{i, trace.KindCall})
			pending[len(evs)+callFar+rng.Intn(1000)] = ev{i, trace.KindReturn}
		case r < 7: // the return is written first (clocks)
			evs = append(evs, ev{i, trace.KindReturn}, ev{i, trace.KindCall})
		default:
			evs = append(evs, ev{i, trace.KindCall}, ev{i, trace.KindReturn})
		}
		if e, ok := pending[len(evs)]; ok {
			evs = append(evs, e)
			delete(pending, len(evs)-1)
		}
	}
	keys := make([]int, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		evs = append(evs, pending[k])
	}
	msgs := make([]trace.Message, len(evs))
	for i, e := range evs {
		msgs[i] = trace.Message{Kind: e.kind, Call: e.old}
	}
	want := append([]trace.Message(nil), msgs...)
	newCallNumbers(calls).number(want)
	w := newCallWindow()
	for i := range msgs {
		got := w.number(msgs[i].Call, msgs[i].Kind)
		if got != want[i].Call {
			t.Fatalf("message %d (call %d, %v): %d, want %d", i, msgs[i].Call, msgs[i].Kind, got, want[i].Call)
		}
		if i%1000 == 0 {
			w.trim()
		}
	}
	if len(w.ids) > 2*callFar || len(w.over) > calls/10 {
		t.Errorf("window holds %d ids and %d far ones", len(w.ids), len(w.over))
	}
}

// lateCollect is a streamCollect that takes the endpoint names at the end
// (LateNames).
type lateCollect struct {
	streamCollect
	eps []string
}

func (c *lateCollect) Messages(t *trace.Trace, m []trace.Message) error {
	c.msgs = append(c.msgs, m...)
	c.pieces++
	return nil
}

func (c *lateCollect) EndNamed(t *trace.Trace, n int, names trace.EndpointNames) error {
	if len(t.Endpoints) != 1 {
		panic("endpoints named before the end")
	}
	for id := range names.Len() {
		c.eps = append(c.eps, string(names.AppendName(nil, trace.EndpointID(id))))
	}
	return c.End(t, n)
}

// TestStreamLateNames: a sink that takes the endpoint names only at the
// end gets the messages and the names of the trace sorted at the end.
func TestStreamLateNames(t *testing.T) {
	for _, in := range []Inputs{
		{Logs: []string{"testdata/logs/testbed", "testdata/logs/damaged.sclog.zst"}},
		{Pcaps: []string{"../testdata/pcap/nat-client-side.pcap", "../testdata/pcap/nat-server-side.pcapng"}},
	} {
		want, err := Reconcile(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var c lateCollect
		got, err := Reconcile(in, Options{Stream: &c})
		if err != nil {
			t.Fatal(err)
		}
		if c.ended != 1 || !reflect.DeepEqual(c.msgs, want.Messages) || !reflect.DeepEqual(c.eps, want.Endpoints) {
			t.Errorf("%v: ended %d, %d messages, endpoints %q; want %d messages, %q", in, c.ended, len(c.msgs), c.eps, len(want.Messages), want.Endpoints)
		}
		if !reflect.DeepEqual(got.Warnings, want.Warnings) || !reflect.DeepEqual(got.Nodes, want.Nodes) {
			t.Errorf("%v: warnings or nodes differ", in)
		}
	}
}
