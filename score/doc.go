// Package score measures inferred causal paths against the ground truth of a
// trace whose messages carry truth= path-instance ids (wap5 gen writes them):
// the accuracy metrics of Project 5 (Aguilera et al., SOSP 2003, §7.5.1) —
// false positives and negatives counted by path patterns, by path instances
// and by messages, the top-N false-negative curve of Figure 17 — plus the
// error of the node delays of correctly inferred patterns, and instance
// precision and recall when the result lists its instances.
//
// Score, steps numbered as in the code:
//
//  1. Group the truth trace's messages by truth id and give each message its
//     cause: the parent= id the generator wrote, if any; otherwise the latest
//     message of the same instance that its sender received before sending it
//     (on the sender's own clock; for an untraced sender, the latest message
//     into it sent before this one arrived — exact when both are on one
//     peer's clock, as in A→B→A).
//  2. Shape the truth the way the result's algorithm shapes paths: message
//     trees under each parentless message (linking); call trees, a call's
//     parent being the call whose span at the caller contains it (nesting);
//     every root-to-leaf node chain of the message trees (convolution). Each
//     tree or chain is one truth path instance.
//  3. Give every truth instance and every inferred pattern a canonical key:
//     "From>To(children…)" with children sorted by key (sibling order is
//     ignored), or "A>B>C" for chains. Truth node names pass through the
//     aliases; when the result names a node CLIENT and the truth does not,
//     client-like truth nodes (no fixed port) become CLIENT (WAP5 §2.5).
//     Truth instances with one key form a truth pattern; inferred patterns
//     with one key are merged.
//  4. Patterns: a truth pattern is found when its key is inferred; an
//     inferred pattern is false when its key is no truth pattern's.
//  5. Instances and messages by counts (the §7.5.1 example): per key,
//     min(truth count, inferred expected count) instances are right; the
//     rest are false negatives (truth) and false positives (inferred);
//     messages follow with each pattern's size.
//  6. Instances by message sets, when the result has instances: an inferred
//     instance is correct when its message set equals a truth instance's;
//     precision, recall, probability-weighted precision, and messages
//     correctly ascribed.
//  7. Top-N false negatives (Figure 17): for N = 1..K, the truth patterns
//     among the N most frequent that are not among the N best-ranked inferred
//     patterns; with a tolerance, misses whose inferred score is within the
//     tolerance of the N-th inferred score are forgiven (near-ties).
//  8. Delays of correctly inferred patterns: steps aligned by canonical
//     order; the inferred mean node delay (Step.Wait — linking's parent
//     received → child sent, nesting's call delay, convolution's edge delay)
//     against the true mean; nesting also compares call latency. Relative
//     errors for true delays of at least MinDelay.
package score
