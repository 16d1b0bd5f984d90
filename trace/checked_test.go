package trace

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestCheckedMark: a binary trace's decoder marks its messages checked
// (CheckValid skips them), and every way of changing them after reading —
// an edit in place reported by MessagesEdited, a new or longer slice,
// smaller tables — leaves them checked again: the bad message is found.
func TestCheckedMark(t *testing.T) {
	// (Without the extra text, which a version 3 file does not carry, and
	// with numeric ids: the decoder proves line references in range only
	// with CheckValid's pass.)
	sample := strings.Replace(actorSample, " span=x", "", 1)
	read := func(t *testing.T) *Trace {
		tr, err := ReadText(strings.NewReader(sample), "actors")
		if err != nil {
			t.Fatal(err)
		}
		for i := range tr.Messages {
			tr.Messages[i].ID = int64(i)
		}
		var bin bytes.Buffer
		if err := WriteBinary(&bin, tr); err != nil {
			t.Fatal(err)
		}
		back, err := ReadBinary(&bin, "bin")
		if err != nil {
			t.Fatal(err)
		}
		return back
	}
	cases := []struct {
		name    string
		edit    func(tr *Trace)
		checked bool   // MessagesChecked after the edit
		want    string // CheckValid's error ("": none)
	}{
		{"as read", func(tr *Trace) {}, true, ""},
		{"sorted in place", func(tr *Trace) { tr.Sort() }, true, ""},
		{"edited in place, reported", func(tr *Trace) {
			tr.Messages[2].Src = 99
			tr.MessagesEdited()
		}, false, "message 2: source node 99 out of range"},
		{"times edited in place, reported", func(tr *Trace) {
			tr.Messages[1].Send, tr.Messages[1].Recv = Unknown, Unknown
			tr.MessagesEdited()
		}, false, "message 1: neither send nor receive time is known"},
		{"new slice", func(tr *Trace) {
			tr.Messages = slices.Clone(tr.Messages)
			tr.Messages[0].Dst = -1
		}, false, "message 0: destination node -1 out of range"},
		{"appended", func(tr *Trace) {
			m := tr.Messages[0]
			m.Kind = 7
			tr.Messages = append(tr.Messages[:len(tr.Messages):len(tr.Messages)], m)
		}, false, "bad kind 7"},
		{"resliced", func(tr *Trace) {
			tr.Messages = tr.Messages[1:]
			tr.Messages[0].Bytes = -5
		}, false, "message 0: negative size -5"},
		{"fewer nodes", func(tr *Trace) { tr.Nodes = tr.Nodes[:1] }, false, "out of range [0,1)"},
		{"fewer actors", func(tr *Trace) {
			for n := range tr.Actors {
				tr.Actors[n] = tr.Actors[n][:0]
			}
		}, false, "actor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := read(t)
			if !tr.MessagesChecked() {
				t.Fatal("a binary trace's messages are not marked checked as read")
			}
			c.edit(tr)
			if got := tr.MessagesChecked(); got != c.checked {
				t.Errorf("MessagesChecked = %v, want %v", got, c.checked)
			}
			err := tr.CheckValid()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckValid: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("CheckValid = %v, want an error with %q", err, c.want)
			}
		})
	}
	// A text trace is never marked: its reader checks nothing of the kind.
	tr, err := ReadText(strings.NewReader(actorSample), "actors")
	if err != nil {
		t.Fatal(err)
	}
	if tr.MessagesChecked() {
		t.Error("a text trace's messages are marked checked")
	}
}
