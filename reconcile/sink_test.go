package reconcile

import (
	"path/filepath"
	"reflect"
	"testing"

	"wap5/trace"
)

// collectSink keeps what a Sink is given.
type collectSink struct {
	begun   int
	n       int
	msgs    []trace.Message
	pieces  int
	tablesN int
}

func (c *collectSink) Begin(t *trace.Trace, n int) error {
	c.begun++
	c.n = n
	c.tablesN = len(t.Nodes)
	return nil
}

func (c *collectSink) Messages(m []trace.Message) error {
	c.msgs = append(c.msgs, m...)
	c.pieces++
	return nil
}

// TestSink: a sink is given exactly the messages Reconcile would return, in
// the same order, after the tables and warnings are final.
func TestSink(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"plain", Options{}},
		{"return memory", Options{ReturnMemory: true, Granularity: ByProcess}},
		{"aggregate", Options{AggregateClients: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Logs: []string{filepath.Join("testdata", "logs", "testbed"), filepath.Join("testdata", "logs", "damaged.sclog.zst")}}
			want, err := Reconcile(in, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var c collectSink
			opts := tc.opts
			opts.Sink = &c
			got, err := Reconcile(in, opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.begun != 1 || c.n != len(want.Messages) || c.tablesN != len(want.Nodes) {
				t.Fatalf("Begin called %d times with %d messages, %d nodes; want once, %d, %d", c.begun, c.n, c.tablesN, len(want.Messages), len(want.Nodes))
			}
			if !reflect.DeepEqual(c.msgs, want.Messages) {
				t.Errorf("sink got %d messages, differing from Reconcile's %d", len(c.msgs), len(want.Messages))
			}
			if len(got.Messages) != 0 {
				t.Errorf("the trace kept %d messages", len(got.Messages))
			}
			if !reflect.DeepEqual(got.Warnings, want.Warnings) || len(want.Warnings) == 0 {
				t.Errorf("warnings %q, want %q", got.Warnings, want.Warnings)
			}
			if !reflect.DeepEqual(got.Nodes, want.Nodes) || !reflect.DeepEqual(got.Actors, want.Actors) || !reflect.DeepEqual(got.Endpoints, want.Endpoints) {
				t.Errorf("tables differ")
			}
		})
	}
}
