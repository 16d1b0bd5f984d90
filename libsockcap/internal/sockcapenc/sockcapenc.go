// Package sockcapenc builds libsockcap logs in memory with the C library's own
// encoder (c/encode.c through cgo), so the Go reader can be tested against
// what the C side really writes: round trips, damage, fuzz seeds.
//
// encode.c, format.h and sockcap.h here are symbolic links to ../../c: the go
// command only notices changes to C files inside the package directory.
package sockcapenc

/*
#cgo CFLAGS: -Wall -Werror
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/un.h>
#include "sockcap.h"

static void put_inet(struct sc_buf *b, const unsigned char *ip, int v6, unsigned short port) {
	if (v6) {
		struct sockaddr_in6 a; memset(&a, 0, sizeof a);
		a.sin6_family = AF_INET6; memcpy(&a.sin6_addr, ip, 16); a.sin6_port = htons(port);
		sc_put_addr(b, (struct sockaddr *)&a, sizeof a, 0);
	} else {
		struct sockaddr_in a; memset(&a, 0, sizeof a);
		a.sin_family = AF_INET; memcpy(&a.sin_addr, ip, 4); a.sin_port = htons(port);
		sc_put_addr(b, (struct sockaddr *)&a, sizeof a, 0);
	}
}
static void put_unix(struct sc_buf *b, const char *path, size_t n, unsigned long long ino) {
	struct sockaddr_un a; memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	if (n > sizeof a.sun_path) n = sizeof a.sun_path;
	memcpy(a.sun_path, path, n);
	sc_put_addr(b, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n), ino);
}
static void encode_dgram(struct sc_buf *b, int fd, long long ret, int err, unsigned sum,
			 const unsigned char *ip, int v6, unsigned short port, int same) {
	struct sockaddr_storage ss; memset(&ss, 0, sizeof ss);
	socklen_t l = 0;
	if (ip) {
		if (v6) { struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss; a->sin6_family = AF_INET6; memcpy(&a->sin6_addr, ip, 16); a->sin6_port = htons(port); l = sizeof *a; }
		else { struct sockaddr_in *a = (struct sockaddr_in *)&ss; a->sin_family = AF_INET; memcpy(&a->sin_addr, ip, 4); a->sin_port = htons(port); l = sizeof *a; }
	}
	sc_encode_dgram(b, fd, ret, err, sum, ip ? (struct sockaddr *)&ss : NULL, l, same);
}
static void encode_event(struct sc_buf *b, unsigned char op, int fd, unsigned mask, long long ret, int err,
			 unsigned long long bytes, int fd2, int child, unsigned long long dur, const char *name,
			 unsigned sum, long long arg, int peerpid, const unsigned char *rip, int rv6, unsigned short rport) {
	struct sockaddr_storage ra; memset(&ra, 0, sizeof ra);
	socklen_t rl = 0;
	if (mask & SC_F_REMOTE) {
		if (rv6) { struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ra; a->sin6_family = AF_INET6; memcpy(&a->sin6_addr, rip, 16); a->sin6_port = htons(rport); rl = sizeof *a; }
		else { struct sockaddr_in *a = (struct sockaddr_in *)&ra; a->sin_family = AF_INET; memcpy(&a->sin_addr, rip, 4); a->sin_port = htons(rport); rl = sizeof *a; }
	}
	struct sc_event e = {.op = op, .fd = fd, .mask = mask, .ret = ret, .err = err, .bytes = bytes, .fd2 = fd2,
			     .child = child, .dur = dur, .name = name, .sum = sum, .arg = arg, .peerpid = peerpid,
			     .remote = (struct sockaddr *)&ra, .remote_len = rl};
	sc_encode_event(b, &e);
}
// sc_crc_mode is a field of the hot page (a macro): cgo reaches it through these
static int crc_mode(void) { return sc_crc_mode; }
static void set_crc_mode(int m) { sc_crc_mode = m; }
*/
import "C"

import (
	"encoding/binary"
	"net/netip"
	"unsafe"
)

// Format constants as the C header defines them (tests compare them with the reader's).
var (
	HdrSize   = int(C.SC_HDR_SIZE)
	ChunkSize = int(C.SC_CHUNK_SIZE)
	ChunkHdr  = int(C.SC_CHUNK_HDR_SIZE)
	Consts    = map[string]int{
		"SC_CHUNK_MAGIC": int(C.SC_CHUNK_MAGIC), "SC_VERSION": int(C.SC_VERSION), "SC_HDR_STRINGS_OFF": int(C.SC_HDR_STRINGS_OFF),
		"SC_K_SEND": C.SC_K_SEND, "SC_K_RECV": C.SC_K_RECV, "SC_K_EVENT": C.SC_K_EVENT, "SC_K_FD": C.SC_K_FD, "SC_K_DSEND": C.SC_K_DSEND, "SC_K_DRECV": C.SC_K_DRECV, "SC_AF_SAME": C.SC_AF_SAME,
		"SC_OP_SOCKET": C.SC_OP_SOCKET, "SC_OP_GAP": C.SC_OP_GAP, "SC_OP_RESOLVE": C.SC_OP_RESOLVE, "SC_OP_SOCKETPAIR": C.SC_OP_SOCKETPAIR,
		"SC_F_RET": C.SC_F_RET, "SC_F_PEERPID": C.SC_F_PEERPID, "SC_F_ALL": C.SC_F_ALL, "SC_FD_ALL": C.SC_FD_ALL,
		"SC_AF_UNIX": C.SC_AF_UNIX, "SC_AF_INET": C.SC_AF_INET, "SC_AF_INET6": C.SC_AF_INET6,
		"SC_SUM_PREFIX": C.SC_SUM_PREFIX, "SC_NAME_MAX": C.SC_NAME_MAX,
		"SC_STR_HOST": C.SC_STR_HOST, "SC_STR_CLOCKNAME": C.SC_STR_CLOCKNAME,
		"SC_STR_NETNS": C.SC_STR_NETNS,
	}
)

// Field mask bits of an event record.
const (
	FRet     = C.SC_F_RET
	FErrno   = C.SC_F_ERRNO
	FBytes   = C.SC_F_BYTES
	FFd2     = C.SC_F_FD2
	FChild   = C.SC_F_CHILD
	FDur     = C.SC_F_DUR
	FName    = C.SC_F_NAME
	FSum     = C.SC_F_SUM
	FRemote  = C.SC_F_REMOTE
	FArg     = C.SC_F_ARG
	FPeerPid = C.SC_F_PEERPID
)

// Log is an in-memory log file.
type Log struct {
	buf       []byte
	nchunks   int
	hdrSize   int
	chunkSize int
}

// Header is the process header to write.
type Header struct {
	Pid, Ppid                      int32
	StartWall, StartMono           int64
	Dropped                        uint64
	Host, Node, Exe, BootID, Clock string
	Argv                           []string
	NetNS                          uint64 // written when not 0
	// HdrSize and ChunkSize override the library's sizes (small logs for fuzz seeds).
	HdrSize, ChunkSize int
}

// NewLog starts a log with h as its header.
func NewLog(h Header) *Log {
	if h.HdrSize == 0 {
		h.HdrSize = HdrSize
	}
	if h.ChunkSize == 0 {
		h.ChunkSize = ChunkSize
	}
	b := make([]byte, h.HdrSize)
	le := binary.LittleEndian
	copy(b, "SOCKCAP1")
	le.PutUint32(b[8:], uint32(C.SC_VERSION))
	le.PutUint32(b[12:], uint32(h.HdrSize))
	le.PutUint32(b[16:], uint32(h.ChunkSize))
	le.PutUint64(b[32:], h.Dropped)
	le.PutUint64(b[40:], uint64(h.StartWall))
	le.PutUint64(b[48:], uint64(h.StartWall))
	le.PutUint64(b[56:], uint64(h.StartMono))
	le.PutUint32(b[64:], uint32(h.Pid))
	le.PutUint32(b[68:], uint32(h.Ppid))
	off := int(C.SC_HDR_STRINGS_OFF)
	put := func(tag int, v string) {
		b[off] = byte(tag)
		le.PutUint16(b[off+1:], uint16(len(v)))
		copy(b[off+3:], v)
		off += 3 + len(v)
	}
	argv := ""
	for i, a := range h.Argv {
		if i > 0 {
			argv += "\x00"
		}
		argv += a
	}
	put(C.SC_STR_HOST, h.Host)
	put(C.SC_STR_NODE, h.Node)
	put(C.SC_STR_EXE, h.Exe)
	put(C.SC_STR_ARGV, argv+"\x00")
	put(C.SC_STR_BOOTID, h.BootID)
	put(C.SC_STR_CLOCKNAME, h.Clock)
	if h.NetNS != 0 {
		var ns [8]byte
		le.PutUint64(ns[:], h.NetNS)
		put(C.SC_STR_NETNS, string(ns[:]))
	}
	le.PutUint32(b[72:], uint32(off-int(C.SC_HDR_STRINGS_OFF)))
	return &Log{buf: b, hdrSize: h.HdrSize, chunkSize: h.ChunkSize}
}

// Chunk is one thread's chunk being filled.
type Chunk struct {
	size int
	log  *Log
	off  int
	pos  int
	last int64
}

// Chunk appends a new chunk for thread tid; its base time is base.
func (l *Log) Chunk(tid int32, base int64) *Chunk {
	off := len(l.buf)
	l.buf = append(l.buf, make([]byte, l.chunkSize)...)
	le := binary.LittleEndian
	c := l.buf[off:]
	le.PutUint32(c[0:], uint32(C.SC_CHUNK_MAGIC))
	le.PutUint32(c[4:], uint32(tid))
	le.PutUint64(c[8:], uint64(base))
	le.PutUint64(c[16:], uint64(l.nchunks))
	l.nchunks++
	le.PutUint64(l.buf[24:], uint64(l.nchunks))
	return &Chunk{log: l, off: off, pos: off + ChunkHdr, last: base, size: l.chunkSize}
}

// Bytes returns the log file's bytes.
func (l *Log) Bytes() []byte { return l.buf }

// record appends kind, dt and body; false when the chunk is full.
func (c *Chunk) record(kind byte, t int64, fill func(b *C.struct_sc_buf)) bool {
	var mem [C.SC_RECORD_MAX + 16]byte
	p := (*C.uint8_t)(C.malloc(C.size_t(len(mem))))
	defer C.free(unsafe.Pointer(p))
	b := C.struct_sc_buf{p: p, cap: C.size_t(len(mem))}
	C.sc_put_zz(&b, C.int64_t(t-c.last))
	fill(&b)
	if b.overflow != 0 {
		panic("sockcapenc: record overflow")
	}
	n := int(b.n)
	if c.pos+1+n > c.off+c.size {
		return false
	}
	c.log.buf[c.pos] = kind
	copy(c.log.buf[c.pos+1:], C.GoBytes(unsafe.Pointer(p), C.int(n)))
	c.pos += 1 + n
	c.last = t
	return true
}

// Send appends a hot-path send (recv: recv true) record.
func (c *Chunk) Send(t int64, recv bool, fd int, ret int64, errno int) bool {
	kind := byte(C.SC_K_SEND)
	if recv {
		kind = C.SC_K_RECV
	}
	return c.record(kind, t, func(b *C.struct_sc_buf) {
		C.sc_put_zz(b, C.int64_t(fd))
		C.sc_put_zz(b, C.int64_t(ret))
		if ret < 0 {
			C.sc_put_uv(b, C.uint64_t(errno))
		}
	})
}

// Dgram appends a datagram record (SC_K_DSEND, or SC_K_DRECV when recv):
// peer nil with same set elides the address (the previous one of this fd).
func (c *Chunk) Dgram(t int64, recv bool, fd int, ret int64, errno int, sum uint32, peer *netip.AddrPort, same bool) bool {
	kind := byte(C.SC_K_DSEND)
	if recv {
		kind = C.SC_K_DRECV
	}
	var ip *C.uchar
	if peer != nil {
		ip = (*C.uchar)(C.CBytes(peer.Addr().AsSlice()))
		defer C.free(unsafe.Pointer(ip))
	}
	return c.record(kind, t, func(b *C.struct_sc_buf) {
		C.encode_dgram(b, C.int(fd), C.longlong(ret), C.int(errno), C.uint(sum), ip, peerV6(peer), peerPort(peer), boolInt(same))
	})
}

func peerV6(p *netip.AddrPort) C.int {
	if p == nil {
		return 0
	}
	return boolInt(p.Addr().Is6())
}

func peerPort(p *netip.AddrPort) C.ushort {
	if p == nil {
		return 0
	}
	return C.ushort(p.Port())
}

// Event is an SC_K_EVENT record's content.
type Event struct {
	Op                    uint8
	Fd, Fd2, Child, Errno int
	Mask                  uint
	Ret, Arg              int64
	Bytes, Dur            uint64
	Name                  string
	Sum                   uint32
	PeerPid               int
	Remote                netip.AddrPort
}

// Event appends an event record.
func (c *Chunk) Event(t int64, e Event) bool {
	return c.record(C.SC_K_EVENT, t, func(b *C.struct_sc_buf) {
		name := C.CString(e.Name)
		defer C.free(unsafe.Pointer(name))
		ip := e.Remote.Addr().AsSlice()
		if len(ip) == 0 {
			ip = make([]byte, 16)
		}
		cip := C.CBytes(ip)
		defer C.free(cip)
		C.encode_event(b, C.uchar(e.Op), C.int(e.Fd), C.uint(e.Mask), C.longlong(e.Ret), C.int(e.Errno),
			C.ulonglong(e.Bytes), C.int(e.Fd2), C.int(e.Child), C.ulonglong(e.Dur), name, C.uint(e.Sum),
			C.longlong(e.Arg), C.int(e.PeerPid), (*C.uchar)(cip), boolInt(e.Remote.Addr().Is6()), C.ushort(e.Remote.Port()))
	})
}

// Addr is an endpoint to encode: an IP address and port, or a Unix path and inode.
type Addr struct {
	IP    netip.AddrPort
	Unix  bool
	Path  string
	Inode uint64
}

// Fd appends an SC_K_FD record.
func (c *Chunk) Fd(t int64, fd int, proto uint8, sotype int, local, remote *Addr, peerPid int) bool {
	return c.record(C.SC_K_FD, t, func(b *C.struct_sc_buf) {
		mask := 0
		if local != nil {
			mask |= C.SC_FD_LOCAL
		}
		if remote != nil {
			mask |= C.SC_FD_REMOTE
		}
		if peerPid != 0 {
			mask |= C.SC_FD_PEERPID
		}
		C.sc_put_zz(b, C.int64_t(fd))
		C.sc_put_u8(b, C.uint8_t(proto))
		C.sc_put_uv(b, C.uint64_t(sotype))
		C.sc_put_uv(b, C.uint64_t(mask))
		for _, a := range []*Addr{local, remote} {
			if a == nil {
				continue
			}
			if a.Unix {
				p := C.CString(a.Path)
				C.put_unix(b, p, C.size_t(len(a.Path)), C.ulonglong(a.Inode))
				C.free(unsafe.Pointer(p))
				continue
			}
			ip := C.CBytes(a.IP.Addr().AsSlice())
			C.put_inet(b, (*C.uchar)(ip), boolInt(a.IP.Addr().Is6()), C.ushort(a.IP.Port()))
			C.free(ip)
		}
		if peerPid != 0 {
			C.sc_put_uv(b, C.uint64_t(peerPid))
		}
	})
}

// Sum is the C library's UDP checksum of payload (full datagram length n),
// computed as the library does on its hot path (sc_sum_prefix: the crc32
// instruction when the CPU has it). table forces the portable table path.
func Sum(payload []byte, n int, table bool) uint32 {
	k := len(payload)
	if k > int(C.SC_SUM_PREFIX) {
		k = int(C.SC_SUM_PREFIX)
	}
	if k > n {
		k = n
	}
	C.sc_sum_init() // sets the CPU mode up
	mode := C.crc_mode()
	if table {
		C.set_crc_mode(1)
	}
	p := C.CBytes(append(payload[:k:k], 0)) // never a NULL pointer
	h := C.sc_sum_prefix(p, C.size_t(k), C.uint64_t(n))
	C.free(p)
	C.set_crc_mode(mode)
	return uint32(h)
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
