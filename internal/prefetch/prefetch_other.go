//go:build !amd64

package prefetch

// On other architectures the hints are not given.

func Line(p uintptr) {}

func Two(a, b uintptr) {}

func Four(a, b, c, d uintptr) {}

func Lines(p, n uintptr) {}
