// Package analyze runs wap5's whole pipeline over captured inputs — reconcile
// → skew → link (and nest) — and writes every stage's result into one
// directory, the way `wap5 analyze` does. It is a driver, not an algorithm:
// each stage is the public function of its own package, called in order.
//
// The steps, as numbered in the code (run.go):
//
//  1. Reconcile the inputs (libsockcap logs and pcaps) into one message
//     trace (reconcile.Reconcile).
//  2. Clock offsets (skew.Estimate), unless turned off. They are applied to
//     the trace (skew.Apply) unless every traced node reads one clock: the
//     logs' headers name each process's host, boot id and clock source, and
//     nodes of one host and boot share CLOCK_REALTIME exactly, so an
//     estimate there only measures delay asymmetry (it is reported, not
//     applied). Options.Skew chooses auto (that rule), always or never.
//  3. Link messages into causal paths (linking.Link) on the corrected trace.
//  4. Nest calls into call trees (nesting.Nest), Project 5's view of the same
//     trace, unless turned off.
//  5. Collect every stage's warnings, prefixed by the stage's name.
//
// Report.WriteDir then writes the files of Outputs (trace, skew, linking,
// nesting, the text report); more renderers are added as more Outputs.
package analyze
