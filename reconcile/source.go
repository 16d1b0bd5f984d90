package reconcile

import (
	"fmt"
	"net/netip"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

// Op is what an observation records.
type Op uint8

const (
	OpNone Op = iota
	// OpOpen: a connection end came into use (connect, accept, socketpair,
	// a SYN on the wire). Role says which end it is.
	OpOpen
	// OpSend: Bytes bytes left this end (one write, or one segment or
	// datagram seen leaving the observer's host).
	OpSend
	// OpRecv: Bytes bytes arrived at this end.
	OpRecv
	// OpClose: the end went away (close of the last descriptor, FIN/RST).
	// From a log: the process's last descriptor of it; other processes
	// (forked children) may still hold the socket.
	OpClose
	// OpFork: the observer (a logged process) forked; Bytes is the child's
	// pid. The child holds every socket the parent holds at that moment.
	OpFork
	// OpExit: the observer (a logged process) exited: it holds no socket
	// any more, those it inherited and never used included.
	OpExit
)

var opNames = [...]string{"none", "open", "send", "recv", "close", "fork", "exit"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", o)
}

// Role is the part an end plays in its connection.
type Role uint8

const (
	RoleUnknown Role = iota
	RoleClient       // it connected
	RoleServer       // it accepted
	RolePair         // socketpair: neither
)

// Origin says what kind of input produced an observation; when the same
// bytes are seen by both, logs win over packets.
type Origin uint8

const (
	OriginLog Origin = iota
	OriginPacket
)

// Observer is who observed: the process whose log it is, or for packets the
// host the packet left or reached. One Observer value is shared by all
// observations of that process or host (the matcher keys on the pointer).
type Observer struct {
	Host   string // node name of the host: SOCKCAP_NODE/hostname, or for packets the capture's host name or the IP address
	Exe    string // program path or name ("" for packets)
	Pid    int32  // 0 for packets
	BootID string // scopes Unix-domain sockets to one running kernel ("" = Host)
	NetNS  uint64 // network namespace (inode of /proc/PID/ns/net) within BootID's kernel; 0 = unknown
	File   string // input file, for warnings

	// hostScope and netScope (keys.go), made once: the fields above do
	// not change once the observer is made.
	hostScope, netScope string
	// The same, interned by the key table that made them (keys.go).
	scopeIDs scopeIDs
	// The latest address the matcher notedBy noted for it (noteAddr).
	notedBy *matcher
	noted   netip.Addr
	// The node this observer was named as, by the namer that named it.
	namedBy *namer
	node    trace.NodeID
	// From the log header: parent pid and start time (0 = unknown), to
	// tell which log a fork's child pid names; proc is the process the
	// matcher counts as a holder of sockets (holders.go).
	ppid   int32
	start  int64
	proc   *proc
	procBy *matcher
	// The actors of this process's threads, as the namer actBy interned
	// them: the last thread looked up, and the others.
	actBy  *namer
	actTid int32
	actID  trace.ActorID
	acts   map[int32]trace.ActorID
}

// Observation is one socket event as seen by one observer; see the package
// documentation. Sources fill a caller-provided Observation, so a source may
// reuse its own buffers between calls but must not keep a pointer to it.
type Observation struct {
	Time     int64 // ns since the Unix epoch, observer's clock
	Op       Op
	Proto    libsockcap.Proto // ProtoTCP, ProtoUDP, ProtoUnix
	Stream   bool             // true for TCP and Unix SOCK_STREAM/SOCK_SEQPACKET, false for datagrams
	Role     Role             // OpOpen: which end; later observations may leave it unknown
	Origin   Origin
	Observer *Observer
	// Socket identifies the observer's socket (connection end) within its
	// source: the same non-zero value on every observation of one end for
	// its lifetime, so the matcher need not look the end up by address.
	// 0 means unknown: the end is found by Local/Remote.
	Socket uint64
	// Local is this end's address, Remote the peer's as this end saw it.
	// For datagrams, Remote is the destination of a send and the source of a
	// receive; Local may be a wildcard (0.0.0.0:port).
	Local, Remote libsockcap.Endpoint
	// Offset is the stream offset of the first byte of a send or receive in
	// its direction (0 = the first data byte), or -1 when unknown (logs:
	// the matcher counts bytes per end).
	Offset int64
	Bytes  int64  // bytes sent or received (> 0 for OpSend and OpRecv); OpFork: the child's pid
	Sum    uint32 // datagram checksum (HasSum), as libsockcap computes it
	// Tid is the thread of the observer's process that made the call
	// (logs), 0 when unknown (packets): with Observer.Pid it names the
	// message's actor (trace.Message.SrcActor, DstActor).
	Tid    int32
	HasSum bool
	Loc    int64 // where in File the observation came from (byte offset, record or packet number), for warnings
}

// Source is a time-ordered stream of observations from one input (one
// process's log, one capture file).
type Source interface {
	// Next fills o with the next observation and reports whether there was
	// one. Observations come in nondecreasing Time order, as far as the
	// source's clock goes.
	Next(o *Observation) bool
	// Err is the error that ended the stream early, if any (damage that
	// made the rest unreadable). Everything before it was delivered.
	Err() error
	// Warnings lists non-fatal problems (with file and offset).
	Warnings() []string
	// Name names the source in messages (usually its file).
	Name() string
}

// OpenPcap opens one capture file as sources. It is set by the
// packet-capture part of this package (pcap*.go); Reconcile itself opens
// all captures together with OpenPcaps.
var OpenPcap func(path string, opts Options) ([]Source, error)

// Granularity is how finely nodes are named.
type Granularity uint8

const (
	ByHost    Granularity = iota // HOST
	ByProgram                    // HOST/EXE
	ByProcess                    // HOST/EXE/PID
)

// ParseGranularity parses "host", "program" or "process".
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "host":
		return ByHost, nil
	case "program":
		return ByProgram, nil
	case "process":
		return ByProcess, nil
	}
	return 0, fmt.Errorf("unknown granularity %q (want host, program or process)", s)
}

func (g Granularity) String() string {
	switch g {
	case ByProgram:
		return "program"
	case ByProcess:
		return "process"
	}
	return "host"
}

// RecvAt chooses which read gives a stream message its receive time.
type RecvAt uint8

const (
	RecvFirst RecvAt = iota // the read that delivered the message's first byte (default)
	RecvLast                // the read that delivered its last byte
)

// DefaultWindow is Options.Window when unset: larger than what remains of
// the clock differences between hosts once step 0 has estimated them (and
// than the differences it cannot estimate, WAP5 §7 saw seconds to minutes
// uncorrected), small enough that what waits in it stays small.
const DefaultWindow = 30 * time.Second

// Options control reconciliation. The zero value is usable (host
// granularity, first-byte receive times, DefaultWindow, no gap splitting).
type Options struct {
	Granularity      Granularity
	AggregateClients bool
	// SplitGap, when > 0, also ends a message when the sender pauses longer
	// than this between two writes in the same direction.
	SplitGap time.Duration
	// PacketReorder is how far a capture's packets may be out of time order
	// (0: DefaultPacketReorder); captures are read through a window this
	// long, so later stragglers are warned about and taken in file order.
	PacketReorder time.Duration
	RecvAt        RecvAt
	// Window is how long (observation time) an end waits for its peer, a
	// datagram for its receive, before it is declared untraced or lost; it
	// must exceed the clock differences between hosts that step 0 leaves
	// (those it cannot estimate; all of them with SyncedClocks). 0 means
	// DefaultWindow.
	Window time.Duration
	// NAT lists known address translations (wap5 nat --json, --nat FILE).
	NAT []Translation
	// DisableNATDetection turns off step 6.
	DisableNATDetection bool
	// SyncedClocks skips step 0 (estimating the hosts' clock offsets from
	// connection handshakes before matching): for inputs whose clocks are
	// known to agree within Window; it saves one pass over the logs.
	SyncedClocks bool
	// Sink, when set, receives the messages in their final order (step 9)
	// as they are gathered, instead of their being kept: the trace
	// returned has the tables and warnings but no messages. For a caller
	// that only writes the trace out: the result is never built.
	Sink Sink
	// Stream, when set (and Sink is not), receives the messages as the
	// emission window lets them go (see doc.go, "Memory"): memory is
	// bounded by that window instead of growing with the trace. Taken
	// instead of Sink; with AggregateClients the whole trace is gathered
	// first, as for Sink.
	Stream StreamSink
	// SortWindow bounds how long a message may stay undecided (a run of
	// bytes whose end the other side has not yet shown, a peer not yet
	// found) and still be written in time order when streaming: messages
	// are held until every input has passed their time and nothing older
	// is still in flight, but never longer than this behind the inputs. A
	// message decided later is written out of time order and counted in a
	// warning. 0 means DefaultSortWindow.
	SortWindow time.Duration
	// ReturnMemory hands memory back to the system while the result is
	// gathered (a few forced collections): peak RSS about the size of the
	// result instead of twice it. For one-shot commands.
	ReturnMemory bool
}

// DefaultSortWindow is Options.SortWindow when unset: longer than
// DefaultWindow, so that messages of untraced peers (decided when that
// window expires) are still written in order.
const DefaultSortWindow = 60 * time.Second

// StreamSink takes a reconciled trace's messages while the inputs are still
// being read (Options.Stream).
type StreamSink interface {
	// Messages receives the next messages, numbered, in trace order; t's
	// tables name everything they use (names are only ever added; see
	// LateNames for endpoints). The slice is only valid during the call.
	Messages(t *trace.Trace, msgs []trace.Message) error
	// End is called once after the last of the n messages, when t's
	// tables and warnings are final.
	End(t *trace.Trace, n int) error
}

// LateNames may be implemented by a StreamSink that needs the trace's
// endpoint names only at the end (a binary trace's tables, written last):
// Reconcile then calls EndNamed instead of End, with t's tables final but
// for its Endpoints, which hold only "-": names names every endpoint id
// the messages carry, each name made only as the sink asks for it (the
// millions of ephemeral ports of a large set are never held as strings).
// Until then Messages gets messages whose endpoint ids are final but not
// yet in t.Endpoints.
type LateNames interface {
	EndNamed(t *trace.Trace, n int, names trace.EndpointNames) error
}

// Sink takes a reconciled trace's messages as they are produced.
type Sink interface {
	// Begin is called once, when t's tables (nodes, endpoints, labels,
	// actors) and warnings are final, before the n messages.
	Begin(t *trace.Trace, n int) error
	// Messages receives the next messages, numbered; the slice is only
	// valid during the call.
	Messages(msgs []trace.Message) error
}

// Inputs are the files to reconcile: libsockcap log files or directories
// (searched recursively: each host's logs under its node directory), pcap
// or pcapng files, and sources built by the caller.
type Inputs struct {
	Logs    []string
	Pcaps   []string
	Sources []Source
	// Hosts names the hosts seen in captures by address, so that they
	// line up with the node names of the logs (nil: named by address).
	Hosts HostNames
}

// Translation is one address translation, as in the contract's `wap5 nat
// --json`: Before is the address as the sender wrote it, After as the
// receiver saw it; a port of "*" keeps or rewrites every port of the address.
type Translation struct {
	Kind    string `json:"kind"` // "dnat" or "snat"
	Before  string `json:"before"`
	After   string `json:"after"`
	Proto   string `json:"proto"` // "tcp" or "udp"
	Flows   int    `json:"flows"`
	Packets int    `json:"packets"`
}
