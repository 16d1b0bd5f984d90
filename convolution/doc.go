// Package convolution infers causal paths from message timing alone with
// Project 5's convolution algorithm (Aguilera et al., SOSP 2003, §5.2;
// Figure 6), for RPC and free-form message traces alike.
//
// The steps, numbered as in the code:
//
//  1. Choose the time quantum μ (§5.2.1) unless given: a tenth of the
//     median delay between a message reaching a node and that node's next
//     send, rounded down to 1, 2 or 5 × 10^k, and no smaller than the trace
//     duration over MaxQuanta so the signals stay bounded. Choose the root
//     nodes unless given: nodes whose first message in the trace is one they
//     send.
//  2. From each root i, one output edge i→j per destination j, carrying all
//     messages V from i to j (FindPathsFromRoot).
//  3. ProcessNode(j, V): turn V's arrivals at j and all of j's departures
//     into indicator signals, s(t) = √(messages in [tμ, (t+1)μ)) (§5.2.1),
//     and cross-correlate them with an FFT (FindCorrelation). The spectrum of
//     each node's departures is computed once and cached.
//  4. Spikes of the correlation (FindCausedMessages): local maxima at least
//     N standard deviations above the mean, separated by a dip below S
//     standard deviations (N = 4, S = 3), at shifts between −v and
//     MaxDelay. Each spike's run of points above S sets its delay range,
//     widened to at least ±v (§5.2.2), and a spike at a negative shift
//     beyond the tolerance is dropped (§5.2.3).
//  5. For every spike and destination k, match each message of V one to
//     one with the earliest unmatched message j→k sent within the spike's
//     delay range. All spikes towards one k form one output edge j→k (as in
//     Figure 9): its delays are the spikes' median matched delays by declining
//     count, its count the number of distinct matched messages.
//  6. Drop low-frequency noise (§5.2.3): an edge with fewer than MinCount
//     messages, or less than MinFraction of its parent edge's, ends the
//     path there. Suppress cycles: an edge may occur at most MaxRepeat times
//     on a path, and paths stop at MaxDepth edges. Recurse from k with the
//     matched messages (step 3).
//  7. Every root-to-leaf chain of the output graph is a path pattern; its
//     count is the smallest edge count along it. Suppress accidentally short
//     and derived paths by frequency counts (§5.2.3, §5.3.1): a path whose
//     last edge carries mostly the same messages as the last edge of a
//     longer path from the same root (A→B→A beside A→B→C→B→A) is derived
//     and removed. Patterns are ranked by count.
//
// Cost is O(e·m + e·S log S) for e output edges, m messages and S = T/μ
// quanta (§5.2.5).
package convolution
