package skew

import (
	"bytes"
	"strings"
	"testing"

	"wap5/trace"
)

// TestEditsClearChecked: Apply and Perturb rewrite the times of a trace's
// messages in place, so a binary trace's decoder's mark (its messages
// checked: CheckValid skips them) must not survive them; and a message
// they leave without a time (a correction that maps a time to Unknown
// cannot be made here, so the test edits one after) is then found.
func TestEditsClearChecked(t *testing.T) {
	const sample = `# wap5 message trace v1
1.000000000 a 10.0.0.1:1 1.000100000 b 10.0.0.2:80 512 id=1
1.000200000 b 10.0.0.2:80 1.000300000 a 10.0.0.1:1 80 id=2
`
	clock := []trace.Correction{{Node: 1, Offset: 5000, DriftPPM: 3}}
	cases := []struct {
		name string
		edit func(tr *trace.Trace) error
	}{
		{"Apply", func(tr *trace.Trace) error { return Apply(tr, clock) }},
		{"Perturb", func(tr *trace.Trace) error { return Perturb(tr, clock) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := trace.ReadText(strings.NewReader(sample), "s")
			if err != nil {
				t.Fatal(err)
			}
			var bin bytes.Buffer
			if err := trace.WriteBinary(&bin, tr); err != nil {
				t.Fatal(err)
			}
			if tr, err = trace.ReadBinary(&bin, "bin"); err != nil {
				t.Fatal(err)
			}
			if !tr.MessagesChecked() {
				t.Fatal("not marked checked as read")
			}
			if err := c.edit(tr); err != nil {
				t.Fatal(err)
			}
			if tr.MessagesChecked() {
				t.Errorf("still marked checked after %s", c.name)
			}
			tr.Messages[1].Send, tr.Messages[1].Recv = trace.Unknown, trace.Unknown
			if err := tr.CheckValid(); err == nil || !strings.Contains(err.Error(), "message 1") {
				t.Errorf("CheckValid after %s and a bad edit = %v, want message 1's error", c.name, err)
			}
		})
	}
}
