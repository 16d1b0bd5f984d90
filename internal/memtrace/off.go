//go:build !memtrace

// Package memtrace (build tag memtrace, diagnostics only) samples the
// process's resident memory and prints it at marks; without the tag Mark
// does nothing.
package memtrace

// Mark does nothing without the memtrace build tag.
func Mark(string) {}
