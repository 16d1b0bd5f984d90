package linking

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"wap5/trace"
)

// TestLinkCheckedTrace: Link trusts a binary trace's decoder's check of
// its messages (trace.MessagesChecked: no CheckValid pass) only while the
// messages are those it checked. A trace edited after reading — in place
// and reported (MessagesEdited, as skew.Perturb does), or given a new
// slice — is checked again, and its bad message is an error; an unedited
// one links to the same result as with the mark cleared (every message
// checked), for both methods.
func TestLinkCheckedTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.bin")
	if err := trace.WriteFile(p, unixClientTrace(), true); err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T) *trace.Trace {
		tr, err := trace.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !tr.MessagesChecked() {
			t.Fatal("the binary trace is not marked checked as read")
		}
		return tr
	}
	for _, tc := range []struct {
		name string
		edit func(tr *trace.Trace)
		want string // Link's error ("": none)
	}{
		{"edited in place, reported", func(tr *trace.Trace) {
			tr.Messages[7].Dst = 9
			tr.MessagesEdited()
		}, "linking: message 7: destination node 9 out of range"},
		{"times edited in place, reported", func(tr *trace.Trace) {
			tr.Messages[3].Send, tr.Messages[3].Recv = trace.Unknown, trace.Unknown
			tr.MessagesEdited()
		}, "linking: message 3: neither send nor receive time is known"},
		{"new slice", func(tr *trace.Trace) {
			tr.Messages = append([]trace.Message(nil), tr.Messages...)
			tr.Messages[5].SrcEP = 1000
		}, "linking: message 5: source endpoint 1000 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := read(t)
			tc.edit(tr)
			_, err := Link(tr, Options{NoInstances: true})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Link = %v, want %q", err, tc.want)
			}
		})
	}
	for _, o := range []Options{{}, {Method: MethodWAP5}} {
		marked, cleared := read(t), read(t)
		cleared.MessagesEdited()
		a, err := Link(marked, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Link(cleared, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the marked trace links otherwise than the same trace checked", o.Method)
		}
	}
}
