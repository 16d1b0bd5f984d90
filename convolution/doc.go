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
//  3. ProcessNode(j, V): turn V's arrivals at j and the departures of each
//     edge j→k into indicator signals, s(t) = √(messages in [tμ, (t+1)μ))
//     (§5.2.1), and cross-correlate them (FindCorrelation) by FFT. Only the
//     lags in [−maxLag, maxLag] are needed, so the correlation is taken
//     block-wise: V's signal is cut into blocks of B quanta, each
//     correlated with the edge's signal over the block widened by maxLag
//     on both sides, at a power-of-two FFT length n = B + 2·maxLag of about
//     four times the lags; the blocks' products are summed in the
//     frequency domain, so one short inverse transform gives C. V's block
//     spectra are computed once per vertex, each edge's once per run. When
//     the signals are sparse enough (deep vertices carry few messages) the
//     same sums are taken directly, over the pairs of non-zero quanta or
//     V's non-zero quanta against the edge's whole signal, whichever of the
//     three costs least. Correlating per destination rather than against
//     all of j's departures (as Figure 6 does, splitting by destination
//     after) keeps one busy edge's spikes from hiding a quieter edge's.
//  4. Spikes of each correlation (FindCausedMessages): local maxima at
//     least N standard deviations above the mean, separated by a dip below
//     S standard deviations (N = 4, S = 3), at shifts between −v and
//     MaxDelay. The mean and deviation are those of the background (three
//     rounds of clipping at N σ), so one strong spike does not hide weaker
//     ones. Each spike's run of points above S sets its delay range,
//     widened to at least ±v (§5.2.2). A spike at a negative shift beyond
//     the tolerance is dropped, and with each node's own clock (TimeLocal) no
//     negative delay is matched at all (§5.2.3). A spike whose excess over
//     the background (Σ C − mean over its run, about the number of messages
//     it explains) is below the minimum edge share is noise.
//  5. For every spike, in order of delay, match each message of V that no
//     earlier spike towards k explained one to one with the earliest
//     unmatched message j→k sent within the spike's delay range; later
//     spikes towards k would be the same causality seen through further
//     hops (FanOut lifts this). All spikes towards one k form one output
//     edge j→k (as in Figure 9): its delays are the spikes' median matched
//     delays by declining count, its count the number of matched messages.
//  6. Drop low-frequency noise (§5.2.3): an edge with fewer than MinCount
//     messages, less than MinFraction of its parent edge's, or less than
//     MinRootFraction of its path's first edge's, ends the path there.
//     Suppress cycles: an edge may occur at most MaxRepeat times on a path;
//     paths stop at MaxDepth edges and at root nodes (a client that got its
//     reply starts a new path). Recurse from k with the matched messages
//     (step 3). MaxCorrelations bounds the whole search (with a warning).
//  7. Every root-to-leaf chain of the output graph is a path pattern; its
//     count is the smallest edge count along it. Suppress accidentally short
//     and derived paths by frequency counts (§5.2.3, §5.3.1): a path whose
//     last edge carries mostly the same messages as the last edge of a
//     longer path from the same root (A→B→A beside A→B→C→B→A) is derived
//     and removed. Patterns are ranked by count.
//
// Cost is O(e·m + e·S log S) for e output edges, m messages and S = T/μ
// quanta (§5.2.5); block-wise, an edge's inverse transform costs
// O(S/B·n + n log n) rather than O(S log S).
package convolution
