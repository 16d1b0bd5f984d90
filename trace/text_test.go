package trace

import (
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
