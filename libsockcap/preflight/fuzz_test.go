package preflight

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseStat(f *testing.F) {
	f.Add("1234 (nginx: worker) S 1200 1234 1234 0 -1 4194624 100 0 0 0 1 2 0 0 20 0 1 0 5555 1000 10")
	f.Add("1 (a) b) R 0")
	f.Add(")")
	f.Fuzz(func(t *testing.T, s string) {
		ppid, state, start, ok := parseStat(s)
		if ok && (state == "" || start == "") {
			t.Errorf("ok with empty fields: %d %q %q", ppid, state, start)
		}
	})
}

func FuzzInterpreter(f *testing.F) {
	f.Add([]byte("#!/bin/sh\n"))
	f.Add([]byte("#!/usr/bin/env -S A=1 python3 -u\n"))
	f.Add([]byte("#!   \n"))
	f.Add([]byte("\x7fELF"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "script")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		interpreter(p, "/usr/bin:/bin") // must not panic
	})
}
