package trace

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A message without id= is named by its line in the file read, whatever
// order the trace is later sorted in; the text writer does not invent id=.
func TestLineRefs(t *testing.T) {
	const in = `# wap5 message trace v1
2.0 B - 2.1 C - 10

1.0 A - 1.1 B - 10
# comment
3.0 C - 3.1 A - 10 id=x7
`
	tr, err := ReadText(strings.NewReader(in), "lines.trace")
	if err != nil {
		t.Fatal(err)
	}
	tr.Sort()
	var got []string
	for i := range tr.Messages {
		got = append(got, tr.RefString(tr.Messages[i].ID))
	}
	if want := []string{"L4", "L2", "x7"}; !slices.Equal(got, want) {
		t.Errorf("ids after sorting %q, want %q", got, want)
	}
	if err := tr.CheckValid(); err != nil {
		t.Error(err)
	}
	var b strings.Builder
	if err := WriteText(&b, tr); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "id=") != 1 || !strings.Contains(b.String(), "id=x7") {
		t.Errorf("written:\n%s", b.String())
	}
	if !IsLineRef(LineRef(1)) || IsLineRef(NoRef) || IsLineRef(-2) || IsLineRef(0) {
		t.Error("IsLineRef")
	}
}

// ReadText interns endpoints in its own table (epTable): every name once,
// the same id wherever it recurs, through the table's growth and whatever
// the names share (long names differing in the middle only, names past the
// cache's key length); it leaves the trace's map unmade, and a lookup by
// name afterwards builds it and finds the ids the reader gave.
func TestReadTextEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		ep   func(i int) string
		n    int
	}{
		{"ephemeral ports", func(i int) string { return fmt.Sprintf("10.16.%d.%d:%d", i%7, i%250, 1024+i) }, 20000},
		{"middle differs", func(i int) string { return fmt.Sprintf("10.16.0.1%05d7:80", i) }, 9000},
		{"long names", func(i int) string { return fmt.Sprintf("unix:/var/run/a-rather-long-socket-path/%d.sock", i) }, 5000},
		{"few", func(i int) string { return fmt.Sprintf("192.0.2.%d:3128", i%3) }, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("# wap5 message trace v1\n")
			for i := range tc.n {
				// Each name twice: as a source, and again later as a
				// destination; "-" among them.
				fmt.Fprintf(&b, "%d.0 A %s %d.1 B - 10\n", i, tc.ep(i), i)
				if i >= 10 {
					fmt.Fprintf(&b, "%d.5 B - %d.6 A %s 10\n", i, i, tc.ep(i-10))
				}
			}
			tr, err := ReadText(strings.NewReader(b.String()), "eps.trace")
			if err != nil {
				t.Fatal(err)
			}
			if tr.epIdx != nil {
				t.Errorf("the trace's endpoint map was made (%d names)", len(tr.epIdx))
			}
			seen := map[string]EndpointID{}
			for i, name := range tr.Endpoints {
				if j, dup := seen[name]; dup {
					t.Fatalf("endpoint %q twice: ids %d and %d", name, j, i)
				}
				seen[name] = EndpointID(i)
			}
			if tr.Endpoints[0] != "-" {
				t.Errorf("endpoint 0 is %q, want -", tr.Endpoints[0])
			}
			want := len(seen)
			for i := range tr.Messages {
				m := &tr.Messages[i]
				for _, ep := range []EndpointID{m.SrcEP, m.DstEP} {
					if name := tr.EndpointName(ep); tr.Endpoint(name) != ep {
						t.Fatalf("message %d: endpoint %q has id %d, the index finds %d", i, name, ep, tr.Endpoint(name))
					}
				}
			}
			if len(tr.Endpoints) != want {
				t.Errorf("lookups added endpoints: %d, want %d", len(tr.Endpoints), want)
			}
		})
	}
}
