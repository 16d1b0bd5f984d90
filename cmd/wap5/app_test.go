package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI drives the CLI in-process and returns exit status, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"wap5"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	code, _, stderr := runCLI(t, "", "--no-such-flag")
	if code != 2 {
		t.Fatalf("exit status %d, want 2 (stderr %q)", code, stderr)
	}
	if !strings.HasPrefix(stderr, "wap5: ") {
		t.Fatalf("stderr %q lacks the wap5: prefix", stderr)
	}
}
