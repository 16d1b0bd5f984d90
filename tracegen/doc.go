// Package tracegen generates synthetic message traces with ground truth:
// our version of Project 5's "maketrace" (Aguilera et al., SOSP 2003,
// §7.1.1). A configuration describes nodes (traced or not, each with its own
// clock offset and drift), one-way network delays per link and direction, and
// tracelets: templates of one causal path — RPC calls with nested calls,
// one-way sends and parallel blocks — with a delay distribution per step. Each
// tracelet is run by a number of parallel workers, each in a loop with a
// uniformly random think time between instances. Every message carries
// truth= (its path instance), id=, and kind=/call= for RPCs, so that package
// score can measure inferred paths against what really happened (§7.5).
//
// The generator (engine.run, steps numbered as in the code):
//
//  1. The worker due next (a heap ordered by true start time) starts an
//     instance at true time T, unless the duration or message budget is spent.
//  2. Every message of a later instance happens at true time ≥ T; so the
//     queued messages whose observed time (a node's clock) is below the
//     earliest clock reading of T are final: they pass the optional sniffer
//     (bursty loss, §7.5.5, in true-time order) and are written, time-sorted.
//  3. The tracelet is instantiated: each step samples the sender's delay since
//     its last event on the path, picks the receiver among the target's nodes,
//     samples the network delay of the link, and recurses into the callee's
//     steps; a call's return follows the callee's reply delay, and the call
//     takes a connection of the caller's pool to the callee for that time
//     (the most recently used idle one, or a new one from a random free
//     ephemeral port; closed after an idle time or a number of calls).
//     Times are true times; a message's timestamps are the sender's and the
//     receiver's clocks
//     (true + offset + drift·t), or - for an untraced node. Messages may be
//     lost with the configured probability.
//  4. The worker thinks (a sample of the tracelet's think time after the
//     instance's last message) and is due again.
//
// Only messages of instances still in flight are held, so Write streams
// traces of any length.
package tracegen
