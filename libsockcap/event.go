// Package libsockcap reads the per-process logs written by the libsockcap.so
// preload library (C sources in ./c, format in FORMAT.md) and exposes them as
// a stream of socket events.
package libsockcap

import (
	"fmt"
	"net/netip"
	"strings"
)

// Op is the kind of socket call an event records.
type Op uint8

// The operations, in the vocabulary of the contract's `wap5 dump --json`.
const (
	OpNone Op = iota
	OpSocket
	OpBind
	OpListen
	OpConnect
	OpAccept
	OpSend
	OpRecv
	OpClose
	OpShutdown
	OpDup
	OpFork
	OpExec
	OpExit
	OpSocketpair
	OpResolve // getaddrinfo/gethostbyname: a resolver call with its duration
	OpGap     // records lost (full disk, unwritable directory...): Bytes holds how many
	opCount
)

var opNames = [...]string{"none", "socket", "bind", "listen", "connect", "accept", "send", "recv",
	"close", "shutdown", "dup", "fork", "exec", "exit", "socketpair", "resolve", "gap"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", o)
}

// Proto is the transport of a socket.
type Proto uint8

const (
	ProtoOther Proto = iota
	ProtoTCP
	ProtoUDP
	ProtoUnix // Unix-domain, stream or datagram
)

var protoNames = [...]string{"other", "tcp", "udp", "unix"}

func (p Proto) String() string {
	if int(p) < len(protoNames) {
		return protoNames[p]
	}
	return fmt.Sprintf("proto%d", p)
}

// Endpoint is one end of a socket: an IP address and port, or a Unix path
// (Path is "" with Inode set for unnamed Unix sockets such as socketpair).
type Endpoint struct {
	Addr  netip.AddrPort
	Path  string
	Unix  bool
	Inode uint64 // socket inode, for Unix sockets (matches the peer's)
}

// IsZero reports whether the endpoint is unknown.
func (e Endpoint) IsZero() bool { return !e.Unix && !e.Addr.IsValid() }

// String formats the endpoint as the contract does: ip:port, [v6]:port or unix:PATH.
func (e Endpoint) String() string {
	switch {
	case e.Unix && e.Path != "":
		return "unix:" + e.Path
	case e.Unix:
		return fmt.Sprintf("unix:@%d", e.Inode)
	case e.Addr.IsValid():
		return e.Addr.String()
	}
	return ""
}

// Process is the header of one per-process log: who wrote it.
type Process struct {
	Host        string // hostname
	Node        string // SOCKCAP_NODE or hostname
	Pid, Ppid   int32
	Exe         string
	Argv        []string
	StartWall   int64  // CLOCK_REALTIME at start, ns since the Unix epoch
	StartMono   int64  // the log's clock at start, ns
	ClockSource string // e.g. "CLOCK_REALTIME", "CLOCK_MONOTONIC"
	BootID      string
	NetNS       uint64 // inode of the process's network namespace (/proc/self/ns/net), 0 = unknown (older logs)
	File        string // log file it came from
	Clock       uint32 // clock id of record timestamps (FORMAT.md): 0 CLOCK_REALTIME, 1 CLOCK_MONOTONIC
	Dropped     int64  // events the library could not record (full disk, ...), from the header
	Sealed      bool   // read from a zstd-sealed file
}

// Program is the name the process's program goes by: the base name of
// Exe, or of argv[0] where Exe is a multi-call binary started under another
// name (redis-server is a link to redis-check-rdb, sh to dash, busybox's
// applets), so that nodes are named as their users call them. argv[0] counts
// only as a plain word that is neither a prefix of Exe's base name nor
// starts with it (python3 running python3.11 stays python3.11), and not a
// process title a program wrote over its arguments ("nginx: worker process")
// or a login shell's "-bash".
func (p *Process) Program() string {
	exe := baseName(p.Exe)
	if len(p.Argv) == 0 || exe == "" {
		return exe
	}
	a := baseName(p.Argv[0])
	if a == "" || a == exe || a[0] == '-' || strings.ContainsAny(a, " :\t") ||
		strings.HasPrefix(exe, a) || strings.HasPrefix(a, exe) {
		return exe
	}
	return a
}

func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Event is one recorded socket call. Time is wall-clock nanoseconds since the
// Unix epoch as read by the traced process (its own clock, uncorrected).
type Event struct {
	Proc    *Process
	Time    int64
	Dur     int64 // duration of the call in ns where recorded (resolver calls, blocking calls), else 0
	Tid     int32
	Op      Op
	Fd      int32
	Fd2     int32 // dup/dup2 target, accepted fd's listening fd, socketpair's second fd
	Proto   Proto
	Local   Endpoint
	Remote  Endpoint
	Bytes   int64 // bytes actually transferred (send/recv), lost records (gap)
	Ret     int64
	Errno   int32
	Sum     uint32 // UDP payload checksum (no payload bytes are stored)
	PeerPid int32  // Unix-domain peer's pid (SO_PEERCRED)
	Child   int32  // fork: child's pid
	Name    string // resolver: the name looked up; exec: the new program
	Arg     int64  // op-specific argument: shutdown how, exit status, listen backlog, socket type
	SoType  int32  // socket type (SOCK_STREAM 1, SOCK_DGRAM 2, SOCK_SEQPACKET 5), 0 when unknown
}
