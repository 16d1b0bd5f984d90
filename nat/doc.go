// Package nat detects network address translation in packet captures and
// keeps the canonicalisation map that reconcile applies to endpoint names
// (WAP5 §7.1, "Network address translation").
//
// A translated packet is the same packet on both sides of the router: its
// payload and every header field that routing and NAT leave alone (IP id,
// TCP sequence and acknowledgement numbers, flags, window, lengths) are
// identical, while addresses, ports, checksums and the TTL differ. Detect
// follows these steps (the numbers appear in the code):
//
//  1. Fingerprint every packet over the fields NAT leaves alone (Key) and
//     bucket packets by fingerprint; in each bucket, observations with
//     different address pairs are candidate translations (a match).
//  2. Orient each match: the observation with the higher TTL was seen before
//     the router decremented it, so it is "before" (as the sender wrote it);
//     with equal TTLs the earlier (offset-corrected) timestamp is "before".
//  3. Turn each match into the flow's original direction (the side that sent
//     the TCP SYN, else the first packet of the flow in that capture), so a
//     reply un-translated by conntrack counts for the same rule as its
//     request: a reply matched as (S→C before, V→C after) is the forward
//     flow (C→V before, C→S after).
//  4. Separate frequent matches from accidental ones: for each flow as sent,
//     keep only the translated flow it matches most often (and vice versa),
//     and require at least MinTCP / MinUDP matched packets for a rule; UDP
//     needs more because datagrams lack TCP's random sequence numbers.
//  5. Classify each accepted flow pair: a changed destination is DNAT
//     (before = destination the sender wrote, after = what the receiver saw),
//     a changed source is SNAT (masquerade); both may apply to one flow.
//  6. Aggregate flows into rules: ports kept across several flows become
//     `*`; SNAT source ports are ephemeral, so an SNAT rule that keeps ports
//     is `ip:*`; when several sources share one translated address, the
//     per-port pairs are listed instead, so the map stays unambiguous.
//
// The resulting Map merges with what reconcile's flow matching found in
// libsockcap logs (Merge), is read and written as the contract's JSON
// (ReadMap, WriteJSON) and canonicalises endpoints (Canonical): a DNAT
// virtual address becomes the real server, an SNAT address the real client.
package nat
