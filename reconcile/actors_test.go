package reconcile

import (
	"os"
	"testing"

	"wap5/trace"
)

// TestActors checks actors.md on testdata/scenarios/actors_threads.txtar
// through the model's API (the scenario's golden shows the text form): the
// server thread that received the last byte of a request is the one that
// made the child call and sent the answer, whichever read gives the
// receive time.
func TestActors(t *testing.T) {
	data, err := os.ReadFile("testdata/scenarios/actors_threads.txtar")
	if err != nil {
		t.Fatal(err)
	}
	sc := parseTxtar(string(data))
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"recv first byte", Options{}},
		{"recv last byte", Options{RecvAt: RecvLast}},
		{"process granularity", Options{Granularity: ByProcess}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ReconcileSources(buildSources(t, sc.sections["events"]), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Fatal(err)
			}
			if len(tr.Messages) != 8 {
				t.Fatalf("%d messages, want 8", len(tr.Messages))
			}
			ms := tr.Messages
			same := func(an trace.NodeID, a trace.ActorID, bn trace.NodeID, b trace.ActorID) bool {
				return an == bn && a != trace.NoActor && a == b
			}
			name := func(n trace.NodeID, a trace.ActorID) string { return tr.ActorName(n, a) }
			for _, c := range []struct {
				what string
				got  string
				want string
			}{
				{"request sender (first write)", name(ms[0].Src, ms[0].SrcActor), "100/101"},
				{"request receiver (last byte)", name(ms[0].Dst, ms[0].DstActor), "200/202"},
				{"late last byte filled in", name(ms[4].Dst, ms[4].DstActor), "200/204"},
				{"datagram sender", name(ms[5].Src, ms[5].SrcActor), "100/105"},
				{"datagram receiver", name(ms[5].Dst, ms[5].DstActor), "300/302"},
				{"untraced sender", name(ms[6].Src, ms[6].SrcActor), ""},
				{"receiver-cut run: last read", name(ms[6].Dst, ms[6].DstActor), "200/206"},
				{"event without a thread", name(ms[7].Src, ms[7].SrcActor), ""},
			} {
				if c.got != c.want {
					t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
				}
			}
			if !same(ms[0].Dst, ms[0].DstActor, ms[1].Src, ms[1].SrcActor) {
				t.Errorf("the child call does not come from the thread that received the request")
			}
			if !same(ms[0].Dst, ms[0].DstActor, ms[3].Src, ms[3].SrcActor) {
				t.Errorf("the answer does not come from the thread that received the request")
			}
			if same(ms[0].Src, ms[0].SrcActor, ms[4].Src, ms[4].SrcActor) {
				t.Errorf("threads 101 and 100 of the client share an actor")
			}
		})
	}
}
