// Package render writes traces and inferred paths for people and programs:
// the contract's JSON, text tables, and (later) dot, SVG, HTML, Perfetto and
// Jaeger. Every renderer takes an io.Writer, the result and options.
package render
