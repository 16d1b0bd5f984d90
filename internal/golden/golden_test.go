package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.golden")

	r := &recorder{TB: t}
	Check(r, path, []byte("a\n"))
	if !r.failed {
		t.Error("a missing golden file passed")
	}

	*Update = true
	Check(t, path, []byte("a\n"))
	*Update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}

	for _, tc := range []struct {
		got  string
		fail bool
	}{{"a\n", false}, {"b\n", true}, {"a", true}} {
		r := &recorder{TB: t}
		Check(r, path, []byte(tc.got))
		if r.failed != tc.fail {
			t.Errorf("Check(%q) failed=%v, want %v", tc.got, r.failed, tc.fail)
		}
	}
}
