// Package golden compares test output with golden files under testdata.
//
// A test calls Check with the output it produced; `go test -update` rewrites
// the files instead. Review the diff by eye before committing a rewritten
// golden file: it is the expected behaviour from then on.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the -update flag of every test binary that imports this package.
var Update = flag.Bool("update", false, "rewrite golden files")

// Check compares got with the file at path, or (with -update) writes got
// there, creating its directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it; review the diff)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
