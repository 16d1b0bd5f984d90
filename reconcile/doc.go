// Package reconcile turns per-process socket logs (libsockcap) and packet
// captures into one trace of logical messages between nodes (WAP5 §4, with the
// message, fat-message and naming rules of §2.3 and §2.5; Project 5 §6).
//
// # Observations: what every input produces
//
// Every input is a Source of Observations (source.go): one socket event seen by
// one observer — a connection end coming into use (OpOpen: connect, accept,
// socketpair, or a SYN on the wire), bytes sent (OpSend), bytes received
// (OpRecv), or the end going away (OpClose). libsockcap logs yield one
// observation per socket call (logs.go); pcap files yield one per TCP segment
// or UDP datagram (pcap*.go, the packets part), attributing a packet to the
// host that sent it (OpSend) or received it (OpRecv). Stream observations may
// carry their byte offset in their direction (a TCP sequence number relative to
// the first data byte); logs leave it -1 and the matcher counts bytes.
// Datagram observations carry libsockcap's payload checksum (format.h
// SC_SUM_PREFIX: FNV-1a over the first 64 payload bytes, then the 4
// little-endian bytes of the datagram length).
//
// # The algorithm (numbers as in match.go)
//
//  1. Merge all sources into one stream ordered by observation time, with a
//     min-heap of per-source cursors (each source is time-ordered on its own
//     clock; clocks of different hosts may disagree by less than the window).
//  2. Name each observation's end: endpoints are canonicalised by the known
//     address translations (--nat, and those learnt in step 6), and a
//     connection is keyed by its protocol and unordered endpoint pair (Unix
//     sockets additionally by the host's boot id and inode). A key may be
//     reused (port reuse): an OpOpen on an end that already had a connection
//     starts the next instance of that key, so connections are identified by
//     key and lifetime.
//  3. Streams (TCP, Unix stream): each send covers a byte range of its
//     direction, each receive delivers a byte range. A logical message is a
//     run of bytes sent in one direction until the sending end receives bytes
//     of the other direction ("fat messages", WAP5 §2.3), optionally also
//     split at pauses longer than Options.SplitGap. Its send time is the
//     first send of the run; its receive time is the time of the read that
//     delivered the run's first byte (Options.RecvAt = RecvLast: its last
//     byte). This is exact whatever the write and read boundaries. When the
//     sender was not traced, runs are cut at the receiver (reads until the
//     receiver sends). A byte range seen twice on the same side
//     (retransmission, two sniffers, a log and a capture) counts once; logs
//     are preferred over packets.
//  4. Datagrams (UDP, Unix datagram): a receive matches the oldest unmatched
//     send of the same flow with the same length and checksum within the
//     window; unmatched sends older than the window were lost (reported),
//     receives matching an already matched send are duplicates (reported and
//     dropped), and matching by content rather than position tolerates
//     reordering.
//  5. Untraced peers: an end whose peer has not appeared within
//     Options.Window of its first observation is untraced; its messages keep
//     Unknown (`-`) for the missing time and the peer node is named by its
//     address.
//  6. Address translation: before an end is declared untraced, unpaired ends
//     of the opposite role (connect vs accept, or datagram flows) whose
//     addresses differ are compared: same protocol, opened within the window,
//     and the same first message sizes (streams) or lengths and checksums
//     (datagrams). A match pairs them and records the translation (DNAT:
//     destination as the sender wrote it → as the receiver saw it; SNAT:
//     source), which then canonicalises later connections directly. The
//     translations found are reported as warnings "nat: ...".
//  7. Name nodes at Options.Granularity: HOST, HOST/EXE or HOST/EXE/PID (EXE
//     is the program's base name; spaces become '_'); untraced peers by their
//     IP address (or unix:PATH). With Options.AggregateClients, ports that
//     accept connections or talk to many peer ports are fixed, others
//     ephemeral (printed `*`), and nodes that never use a fixed port locally
//     become CLIENT (WAP5 §2.5).
//  8. On TCP and Unix stream connections with a known client and server,
//     messages from the connecting end are calls and the following messages
//     from the accepting end their returns (kind= and call=).
//  9. Sort the messages by time and number them (id=).
//
// Memory is bounded by what is in flight within the window (unmatched byte
// ranges and datagrams), not by the trace length; the result itself costs
// 64 bytes per message.
package reconcile
