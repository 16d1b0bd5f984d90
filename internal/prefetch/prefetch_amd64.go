package prefetch

// Line asks for the cache line holding address p.
//
//go:noescape
func Line(p uintptr)

// Two asks for the lines holding a and b.
//
//go:noescape
func Two(a, b uintptr)

// Four asks for the lines holding a, b, c and d.
//
//go:noescape
func Four(a, b, c, d uintptr)

// Lines asks for every cache line of [p, p+n).
//
//go:noescape
func Lines(p, n uintptr)
