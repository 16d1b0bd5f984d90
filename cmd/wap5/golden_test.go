package main

import (
	"path/filepath"
	"testing"

	"wap5/internal/golden"
)

// goldenFile compares got with testdata/DIR/NAME, or rewrites that file when
// the test runs with -update (review the diff by eye before committing it).
func goldenFile(t *testing.T, dir, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", dir, name), got)
}
