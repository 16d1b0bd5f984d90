// Package skew estimates every node's clock offset and drift relative to a
// reference node from a message trace's send and receive timestamps, and
// corrects traces with them (WAP5, Reynolds et al., WWW 2006, §5.2: network
// latency needs the sender's and receiver's clocks reconciled; Project 5,
// Aguilera et al., SOSP 2003, §7.5.6: the skewer). Node-internal delays
// never need it: both of their timestamps come from one clock.
//
// A message from a to b observed on two clocks has d = recv_b − send_a =
// delay + Δ(t), where Δ = θ_b − θ_a is the difference of the two clocks'
// errors; a message back has d' = delay' − Δ(t). With the same delay
// distribution both ways (the symmetric-delay assumption), Δ is half the
// difference of the two directions' lower envelopes. Method, with the
// numbers used in the code:
//
//  1. Series (series.go). Every message with both timestamps between two
//     different nodes a < b adds a sample to its pair's series in its
//     direction, on a's clock: x = send time for a→b, receive time for b→a.
//     Accumulator.Add does this one message at a time for streaming callers;
//     memory is 16 bytes per sample.
//  2. Per pair and direction, the lower envelope and Δ (hull.go, fit.go).
//     a. The lower convex hull of the samples (monotone chain).
//     b. Moon, Skelly and Towsley's linear program (INFOCOM 1999): the line
//     below every sample minimising the summed distance to them, which is
//     the hull edge over the samples' mean time (Zhang, Liu and Xia's
//     convex-hull view). Its slope is the drift; the line is Paxson's
//     minimum filtering (SIGMETRICS 1998) made linear in time.
//     c. Above the envelope, low quantiles (5%, 10%, 25%) of the delays in up
//     to 16 windows, each fitted with a line (so drift is followed), with
//     standard errors from the order statistics and the windows' scatter.
//     d. Δ = (line_ab − line_ba)/2 from the quantile with the smallest
//     standard error (the envelope itself when there are too few samples):
//     with a sharp delay floor the 5% quantile is nearly as good as the
//     minimum, with a soft floor far better. The two envelopes also bound
//     Δ whatever the delays: −env_ba ≤ Δ ≤ env_ab, since no one-way delay
//     is negative (half the minimum round trip either side of symmetric).
//  3. Clock steps (steps.go), after Paxson: a step of one clock (an NTP
//     adjustment) moves both directions' delays by the same amount in
//     opposite senses; a route change moves one direction, or both the same
//     way.
//     a. Per pair, the minimum residual above each direction's envelope in
//     up to 128 windows.
//     b. A change point of the difference of those minima on a linear trend
//     (least squares over every split), of at least MinStep, large
//     against its robust noise and of opposite sign in the two
//     directions, is a step; samples near it that fit only one side place
//     it; both sides are searched again (binary segmentation).
//     c. A pair's step is attributed to the end whose other pairs show it
//     too (the share of its pairs covering that time that do); ties go to
//     the node that is not the reference, with a warning.
//     d. Every pair is cut at its two nodes' steps (with a guard interval);
//     each piece is fitted as in step 2 and relates one clock segment of
//     each node.
//  4. Pairs combined over the graph of nodes (graph.go, gonum): unknowns are
//     one drift per node and one offset per node and clock segment, the
//     reference's first segment fixed at zero, in the reference's connected
//     component; nodes outside it are uncorrectable (a warning). Nodes with one
//     neighbour (and trees of them) are eliminated exactly first, so the dense
//     solve covers only the nodes on cycles.
//     a. Drift: weighted least squares over the pieces' slopes (weights from
//     their standard errors), with a prior of 200 ppm (two clocks within 100 ppm of true time) so that a drift the
//     samples cannot pin down stays near zero.
//     b. Offsets: weighted least squares over the pieces' Δ, moved to a
//     common reference time T0 with the drifts (weights from the standard
//     errors plus 1% of half the round trip, so that short round trips,
//     which leave less room for asymmetry, count more); then, while some
//     observation's studentized residual exceeds 5, the worst is set aside
//     and the fit repeated: an asymmetric pair on a cycle of symmetric
//     ones is the one edge all inconsistent cycles share. A pair on no
//     cycle cannot be checked.
//  5. Error bounds and corrections (estimate.go). Per node the smaller of two
//     bounds, both assuming only non-negative one-way delays: the
//     sensitivity of the fit to every observation being off by as much as
//     its envelopes allow, and the distance to the ends of the interval of
//     offsets consistent with all envelopes (shortest paths over the
//     difference constraints); plus three standard errors of the drift
//     carried to the ends of the node's activity. Where delays are symmetric
//     the actual error is far smaller (FitError); where they are not, the
//     bound still holds. Each node gets one trace.Correction per clock
//     segment.
//
// Apply rewrites a trace's times onto the reference clock and records the
// corrections (Applied); Corrector converts on the fly for callers that keep
// the original times; Perturb is the skewer, the inverse.
package skew
