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
// host that sent it (OpSend) or received it (OpRecv). Captures are streamed,
// never held (pcapstream.go, steps S1–S3): each pass reads a file again through
// a reorder window of Options.PacketReorder, the first keeping only a small
// sample per conversation for NAT detection. Stream observations may
// carry their byte offset in their direction (a TCP sequence number relative to
// the first data byte); logs leave it -1 and the matcher counts bytes.
// Datagram observations carry libsockcap's payload checksum (format.h
// SC_SUM_PREFIX: FNV-1a over the first 64 payload bytes, then the 4
// little-endian bytes of the datagram length).
//
// # The algorithm (steps as numbered in the code: reconcile.go, match.go, dgram.go)
//
//  0. Clock offsets, for matching only (clock.go): when the logs come from
//     two or more hosts, or logs and captures are mixed (a capture has its
//     sniffer's clock), read them once for what one source does and
//     another then sees: a connect and the accept of the same connection
//     (protocol and canonical 4-tuple, loopback scoped by kernel; instances
//     of a reused tuple paired in order), a datagram's send and its receive (destination port,
//     length and checksum, paired in order). The second comes after the
//     first, which bounds the offset between the two clocks; events the
//     other way bound it from the other side. Per pair of sources: the
//     smallest difference near the median (a mispaired instance lies far
//     off), the midpoint of both bounds when there are both. A maximum
//     spanning tree over the pairs (most samples first; sources of one host
//     joined at offset 0 where nothing links them) gives each source an
//     offset against one reference. Steps 1–6 compare times in
//     offset-corrected time, so hosts minutes apart pair within the window;
//     messages keep the times their observers recorded (correcting those is
//     wap5 skew's job). Offsets of a second or more are reported as
//     warnings "clocks: ...". Caller-built sources that cannot be read
//     twice keep offset 0 (Options.SyncedClocks skips the step). This
//     pass opens each log file again and decodes it a second time (as far
//     as it reads), which costs less than keeping its events for the
//     matcher; sources of other scanners keep what it decodes in a
//     compact event log (eventlog.go), which the matcher's reading
//     replays before it decodes the rest.
//  1. Merge all sources into one stream ordered by offset-corrected
//     observation time, with a min-heap of per-source cursors (each source
//     is time-ordered on its own clock; what step 0 cannot correct must
//     stay below the window).
//  2. Name each observation's end: endpoints are canonicalised by the known
//     address translations (--nat, those a capture set shows, and those
//     learnt in step 6) to the real ends — a DNAT'd destination becomes the
//     server's address, a SNAT'd source the client's — and a connection is
//     keyed by its protocol and unordered endpoint pair. Loopback addresses,
//     abstract Unix names and wildcard sockets' addresses are also keyed by
//     their network: boot id and network namespace when the log header
//     names it (libsockcap.Process.NetNS), so processes of one machine
//     traced under different node names share their loopback while network
//     namespaces of one kernel stay apart; else (older logs, packets) by
//     node name and boot id. Unix paths are keyed by their host (node name
//     and boot id: the file system). Unix sockets by both inodes when
//     known, within one kernel, else by path, pairing in order. A key may be reused (port
//     reuse): an OpOpen on an end that already had a connection starts the
//     next instance of that key, so connections are identified by key and
//     lifetime; an end that opens the key again abandons its earlier
//     instances that saw no byte and no peer (a refused non-blocking
//     connect), so the peer's next open goes to the new one. Observations
//     carrying a Socket id find their end directly. An end logged by
//     processes lives until its last holder lets go (holders.go): a
//     process holds it from its open or first use, a fork (OpFork, with
//     the child's pid) passes all the parent holds to the child when the
//     child has a log, and a close of the process's last descriptor or
//     its exit (OpExit: the end of its log) lets go; so a forking server's parent closing its
//     copy does not end the connection its child serves.
//  3. Streams (TCP, Unix stream): each send covers a byte range of its
//     direction, each receive delivers a byte range. A logical message is a
//     run of bytes sent in one direction until the sending end receives bytes
//     of the other direction ("fat messages", WAP5 §2.3), optionally also
//     split at pauses longer than Options.SplitGap. Its send time is the
//     first send of the run; its receive time is the time of the read that
//     delivered the run's first byte (Options.RecvAt = RecvLast: its last
//     byte). This is exact whatever the write and read boundaries. When the
//     sender was not traced, runs are cut at the receiver (reads until the
//     receiver sends). A byte range seen twice on the same end
//     (retransmission, two sniffers, a capture and a log) counts once.
//     Logs win over captures: packets of a host whose processes are logged
//     are ignored, and a log's open takes over an end a capture saw first.
//  4. Datagrams (UDP, Unix datagram): a receive matches the oldest unmatched
//     send of the same flow (destination port, source port when known,
//     compatible addresses) with the same length and checksum — the oldest
//     within a second of it in offset-corrected time if there is one, so
//     that a lost datagram of a periodic flow does not shift the rest; unmatched
//     sends still waiting after the window were lost when a traced process
//     receives at that address (reported), receives matching an already
//     matched send are duplicates (reported and dropped), and matching by
//     content rather than position tolerates reordering. An end bound to
//     the wildcard address is named by its node's only address, if it has
//     one, else as the peer saw it.
//  5. Untraced peers: an end whose peer has not appeared within
//     Options.Window of its first observation is untraced; its messages keep
//     Unknown (`-`) for the missing time and the peer node is named by its
//     address.
//  6. Address translation: before an end is declared untraced, unpaired ends
//     of the opposite role (connect vs accept) whose addresses differ are
//     compared: same protocol, opened within the window, and the same sizes
//     of the first message each way, each size known on both ends or on
//     neither (a first message one end saw whole and the other has not, or
//     not yet, is no agreement: an unrelated connection still in its first
//     exchange would otherwise agree with anything of the same size the
//     other way); the closest in time wins (on a tie, the earliest
//     created). Their timing must agree whatever the clocks: the server's
//     delay from its first read to its first write cannot exceed the
//     client's from its first write to its first read (causality; a 1 ms
//     slack). Two ends observed by one logged process, or by a process
//     and its forked child, are never paired: that is a relay (a proxy
//     forwarding a request and its response with the same sizes), and a
//     translation happens between hosts. Candidates are found through an
//     index of lonely connections by role and known sizes, each list in
//     creation-time order, walked outwards from the searching connection's
//     time: a search costs about the candidates with its sizes near it in
//     time, not all lonely connections. Sizes alone cannot tell every
//     untraced flow from a translated one: among thousands of untraced
//     connections within the window, some agree in both sizes by chance
//     (hundreds on a CoDeeN-sized set without any translation). Two more
//     rules hold them apart (natcheck.go). Timing: where step 0 has related
//     the two sources' clocks (handshake samples link them, or one host's
//     logs share its clock), the server's first read must come after the
//     client's first write, and the client's first read after the
//     server's first write, in offset-corrected time, within what the
//     offsets may be off: the intervals of the spanning tree's edges
//     between the two sources, summed (an edge's true offset lies between
//     the bounds samples of both directions give, or below a
//     one-direction bound by up to clockNear), plus 200 ppm of drift from
//     the samples' times and the 1 ms slack — a chance candidate seconds
//     away fails, a real one nests. Untraced peers: an end whose peer address (a client's
//     destination as written, ip:port; a server's client as seen, ip; not
//     loopback) at least 3 lonely connections with known first sizes used,
//     more than the translations found through it, each within 5 minutes
//     of the one before and the last within 5 minutes, is neither paired
//     nor searched, unless a traced host uses that address (a log's local
//     address, or a captured end's): that peer is an untraced host, as a
//     virtual address in front of traced servers has its flows paired. Such
//     an end leaves the index when its sizes become known. (The counts
//     idle for 5 minutes are dropped as the table grows.) Timing says
//     nothing between clocks step 0 could not relate, and untraced peers
//     are known only once their first lonely connections were declared (a
//     window in): there a chance pair remains possible. A virtual address
//     most of whose flows go to untraced servers counts as an untraced
//     peer too.
//     Datagrams still unmatched after the window are paired with
//     an unmatched datagram of the same length and checksum. A match pairs
//     them and records the translation (DNAT: destination as the sender
//     wrote it → as the receiver saw it; SNAT: source; a SNAT that kept the
//     port becomes a rule for the whole address), which then canonicalises
//     later flows directly. The translations found are reported as warnings
//     "nat: KIND PROTO BEFORE -> AFTER (N flows)". With logs and captures
//     mixed, the logs are reconciled once first to learn their translations
//     and their unpaired connections' peers; a capture then reports no
//     sends or receives for an address it saw only through a router that no
//     log covers, in flows with such an uncovered peer (pcapsource.go, P3),
//     so that a captured server's ends pair here with its masqueraded
//     traced clients'.
//  7. Name nodes at Options.Granularity (into the namer's own tables, in the
//     order decided; step 9 numbers the output's): HOST, HOST/EXE or HOST/EXE/PID (EXE
//     is the program's base name, libsockcap.Process.Program: argv[0]'s for
//     a multi-call binary such as redis-server; spaces become '_'); untraced peers by their
//     IP address (or Unix endpoint). With Options.AggregateClients, ports
//     that accept connections, talk to three or more peer ports, or lie
//     below the ephemeral range (32768) are fixed, others ephemeral (printed
//     `*`), and nodes that never use a fixed port become CLIENT (WAP5 §2.5).
//  8. On TCP and Unix stream connections with a known client and server,
//     messages from the connecting end are calls; a message from the
//     accepting end is the return of the call that holds the last byte the
//     server had read when it began to answer (kind=, call=). The pairing is
//     by stream position, so it holds whatever the two hosts' clocks say; a
//     call answered by nothing stays a call, a second answer is no return.
//  9. Sort the messages by time (send time, else receive time), messages
//     of the same time by content (canon.go: send, receive, source node and
//     endpoint names, destination node and endpoint names, bytes, kind,
//     the actors' names): sort each block of emitted messages by time,
//     merge the blocks, and put each run of one time in content order once
//     nothing more of its time can come; then number them (id=), renumber
//     the calls in time order, and renumber nodes, endpoints and actors
//     from the namer's ids (step 7: in decision order) to the output's, by
//     first use in this order (unused ones after, by name). So the trace is
//     a function of the messages, whatever order the matcher decided them
//     in. IP endpoints travel in the messages as packed integers (address
//     index, port) and are named only when the tables are written.
//     Streaming (Options.Stream, emit.go), the same is done as the
//     inputs are read: a full block is sealed (its keys sorted), and the
//     sealed blocks' messages below the watermark — the earliest time a
//     message decided from now on can have — are merged out, put in
//     order, renumbered, numbered and written; call ids are renumbered
//     through a window over the calls in flight.
//
// # Memory
//
// Memory during matching is bounded by what is in flight within the window
// (unmatched byte ranges and datagrams, open connections), not by the trace
// length. With Options.Stream (wap5 reconcile, text and binary) the
// messages are too: they go to the sink as soon as every input has passed
// their time and nothing in flight is older (the watermark: the merged
// clock less the most negative clock offset and 100 ms for sources
// slightly out of order, or the first byte of any send run, receive run or
// datagram not yet emitted, whichever is earlier), but never later than
// Options.SortWindow behind the inputs; a message decided after that is
// written out of time order and counted in a warning. Messages that may
// still change (a return whose call is not decided yet, a message whose
// last byte is not read yet: its receiving thread) are held by reference
// until settled. Without a stream the result costs 64 bytes per message:
// messages are collected in blocks, each block is sorted, and the blocks
// are merged once into the result (step 9); with Options.ReturnMemory the
// blocks' memory goes back to the system as they are copied, so the peak
// stays near the size of the result instead of twice it. With Options.Sink
// the merge hands the messages to the sink as it goes and no result is
// built at all (but the blocks are kept to the end): it merges twice, the
// first time only to number the tables, which the sink's Begin needs final.
//
// Actors (trace.Message.SrcActor, DstActor: which thread sent and which
// received, a hint for inference): a stream message's sender actor is the thread (pid/tid
// of the log) of the write that began its run, its receiver actor the
// thread of the read that delivered its last byte (filled in when that read
// comes after the message was emitted); a datagram's are the threads of its
// send and its receive. Packets, events without a thread and CLIENT nodes
// (AggregateClients) leave them unknown.
package reconcile
