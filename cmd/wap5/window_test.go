package main

import (
	"os"
	"path/filepath"
	"testing"

	"wap5/trace"
)

// TestLinkStreamingBinary: --window streams a CDN trace (thousands of
// endpoints: a stream compacts a growing endpoint table, never a binary
// trace's, whose ids its messages keep) given as a binary trace block by block
// (trace.BinaryScanner) with the result of reading it whole: the same
// patterns, warnings and instances as the same trace out of order (read
// again whole, then sorted), also with the pattern table spilled at every
// chunk (--window-memory 0).
func TestLinkStreamingBinary(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "cdn.txt")
	if code, _, stderr := runCLI(t, "", "gen", "--duration", "60s", "-o", txt, "../../testdata/gen/cdn.gen"); code != 0 {
		t.Fatalf("gen: %d %s", code, stderr)
	}
	tr, err := trace.ReadFile(txt)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, tr *trace.Trace) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := trace.WriteBinary(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sorted := write("sorted.bin", tr)
	n := len(tr.Messages)
	tr.Messages[n/3], tr.Messages[n/2] = tr.Messages[n/2], tr.Messages[n/3]
	unsorted := write("unsorted.bin", tr)
	// The trace out of order is read whole and sorted (the old path): the
	// sorted one, streamed, must give exactly its output.
	for _, method := range []string{"joint", "wap5"} {
		args := []string{"link", "--json", "--method", method, "--window", "5s", "--instances"}
		wi := filepath.Join(dir, "whole.jsonl")
		code, want, wantErr := runCLI(t, "", append(args, wi, unsorted)...)
		if code != 0 || len(want) < 100 {
			t.Fatalf("unsorted: exit %d: %s", code, wantErr)
		}
		wantInst, _ := os.ReadFile(wi)
		for _, mem := range []string{"16", "0"} {
			for _, bin := range []string{sorted, unsorted} {
				si := filepath.Join(dir, "stream.jsonl")
				code, got, gotErr := runCLI(t, "", append(args, si, "--window-memory", mem, bin)...)
				gotInst, _ := os.ReadFile(si)
				if code != 0 || got != want || gotErr != wantErr || string(gotInst) != string(wantInst) || len(wantInst) == 0 {
					t.Errorf("%s %s --window-memory %s: exit %d, output equal %v, stderr %q and %q, instances equal %v",
						filepath.Base(bin), method, mem, code, got == want, gotErr, wantErr, string(gotInst) == string(wantInst))
				}
			}
		}
	}
}
