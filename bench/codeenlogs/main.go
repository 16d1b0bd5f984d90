// Command codeenlogs writes real libsockcap logs that carry the messages of
// a trace: one sealed log per traced node, its records encoded by the C
// library's own encoder (libsockcap/c/encode.c, compiled in), laid out as
// the library lays them out (format.h: header, 64 KiB chunks, an SC_K_FD
// record for every fd a chunk mentions, socket/connect/accept/close events,
// hot-path SEND/RECV records). bench/reconcile-codeen.sh feeds it the
// CoDeeN-sized trace of `wap5 gen testdata/gen/codeen.gen` and times `wap5
// reconcile` on the result.
//
//	codeenlogs -o DIR TRACE
//
// Every message becomes a write by its sender and a read by its receiver at
// the trace's times (each node's own clock), for the ends on traced nodes;
// the untraced ends (clients, origin servers, DNS) have no log. A pair of
// endpoints is one TCP connection: the end whose port is 3128 or below 1024
// accepts it, the other connects; each end closes after its last message.
// Each node is one single-threaded process (pid 1000+node index) listening
// on fd 3.
package main

/*
#cgo CFLAGS: -O2
#include <stdlib.h>
#include "records.h"
*/
import "C"

import (
	"container/heap"
	"encoding/binary"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"unsafe"

	"wap5/libsockcap"
	"wap5/trace"
)

const (
	kSend  = C.SC_K_SEND
	kRecv  = C.SC_K_RECV
	kEvent = C.SC_K_EVENT
	kFd    = C.SC_K_FD

	opSocket  = C.SC_OP_SOCKET
	opListen  = C.SC_OP_LISTEN
	opConnect = C.SC_OP_CONNECT
	opAccept  = C.SC_OP_ACCEPT
	opClose   = C.SC_OP_CLOSE
	opExit    = C.SC_OP_EXIT

	listenFd = 3
)

func main() {
	out := flag.String("o", "", "output `DIR` (one subdirectory per node)")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: codeenlogs -o DIR TRACE")
		os.Exit(2)
	}
	t, err := trace.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n, events, err := write(t, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "codeenlogs: %d logs, %d events, %d messages\n", n, events, len(t.Messages))
}

// ev is one socket call of a traced node: a write or a read of one message.
type ev struct {
	t             int64
	n             int64
	conn          int32
	local, remote trace.EndpointID
	recv          bool
}

func traced(t *trace.Trace, n trace.NodeID) bool {
	if t.Nodes[n].Untraced {
		return false
	}
	_, err := netip.ParseAddr(t.NodeName(n))
	return err != nil
}

func write(t *trace.Trace, dir string) (logs int, events int64, err error) {
	type key struct{ a, b trace.EndpointID }
	conns := map[key]int32{}
	per := make([][]ev, len(t.Nodes))
	for i := range t.Messages {
		m := &t.Messages[i]
		k := key{m.SrcEP, m.DstEP}
		if k.a > k.b {
			k.a, k.b = k.b, k.a
		}
		c, ok := conns[k]
		if !ok {
			c = int32(len(conns))
			conns[k] = c
		}
		if m.Send != trace.Unknown && traced(t, m.Src) {
			per[m.Src] = append(per[m.Src], ev{t: m.Send, n: m.Bytes, conn: c, local: m.SrcEP, remote: m.DstEP})
		}
		if m.Recv != trace.Unknown && traced(t, m.Dst) {
			per[m.Dst] = append(per[m.Dst], ev{t: m.Recv, n: m.Bytes, conn: c, local: m.DstEP, remote: m.SrcEP, recv: true})
		}
	}
	conns = nil
	eps := make([]netip.AddrPort, len(t.Endpoints))
	for i, s := range t.Endpoints {
		eps[i], _ = netip.ParseAddrPort(s)
	}
	for n := range per {
		if len(per[n]) == 0 {
			continue
		}
		path, err := writeNode(t, trace.NodeID(n), per[n], eps, dir)
		if err != nil {
			return logs, events, err
		}
		if _, err := libsockcap.Seal(path); err != nil {
			return logs, events, err
		}
		logs++
		events += int64(len(per[n]))
		per[n] = nil
	}
	return logs, events, nil
}

// fdHeap hands out the lowest free descriptor, as the kernel does.
type fdHeap []int32

func (h fdHeap) Len() int           { return len(h) }
func (h fdHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h fdHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *fdHeap) Push(x any)        { *h = append(*h, x.(int32)) }
func (h *fdHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type connState struct {
	fd   int32
	left int32 // events still to come on this end
}

func writeNode(t *trace.Trace, node trace.NodeID, evs []ev, eps []netip.AddrPort, dir string) (string, error) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	state := map[int32]*connState{}
	for i := range evs {
		st := state[evs[i].conn]
		if st == nil {
			st = &connState{fd: -1}
			state[evs[i].conn] = st
		}
		st.left++
	}
	name := t.NodeName(node)
	pid := int32(1000 + int(node))
	start := evs[0].t - 1_000_000
	l := newLog(name, pid, start)
	defer l.free()
	free := &fdHeap{}
	next := int32(listenFd + 1)
	now := start
	// The listening socket.
	l.event(now, opSocket, listenFd, C.SC_F_RET|C.SC_F_ARG, listenFd, -1, 0, 1, nil)
	any := netip.AddrPortFrom(netip.IPv4Unspecified(), 3128)
	l.fd(now, listenFd, any, nil)
	l.event(now, opListen, listenFd, C.SC_F_RET|C.SC_F_ARG, 0, -1, 0, 128, nil)
	for i := range evs {
		e := &evs[i]
		st := state[e.conn]
		local, remote := eps[e.local], eps[e.remote]
		if e.t > now {
			now = e.t
		}
		if st.fd < 0 {
			if free.Len() > 0 {
				st.fd = heap.Pop(free).(int32)
			} else {
				st.fd = next
				next++
			}
			at := max(now-1000, l.last)
			if local.Port() == 3128 || local.Port() < 1024 {
				l.fd(at, st.fd, local, &remote)
				l.event(at, opAccept, st.fd, C.SC_F_RET|C.SC_F_FD2, int64(st.fd), listenFd, 0, 0, nil)
			} else {
				l.event(at, opSocket, st.fd, C.SC_F_RET|C.SC_F_ARG, int64(st.fd), -1, 0, 1, nil)
				l.fd(at, st.fd, local, &remote)
				l.event(at, opConnect, st.fd, C.SC_F_RET|C.SC_F_REMOTE|C.SC_F_DUR, 0, -1, 500, 0, &remote)
			}
		}
		l.sendRecv(now, e.recv, st.fd, e.n, local, remote)
		if st.left--; st.left == 0 {
			l.event(now, opClose, st.fd, C.SC_F_RET, 0, -1, 0, 0, nil)
			heap.Push(free, st.fd)
			delete(state, e.conn)
		}
	}
	l.event(now, opExit, -1, C.SC_F_ARG, 0, -1, 0, 0, nil)
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(d, fmt.Sprintf("%d-%d.sclog", pid, start))
	return path, os.WriteFile(path, l.buf, 0o644)
}

// logw lays records out as the library does: a header, then chunks of one
// thread, each chunk describing (SC_K_FD) every fd it mentions.
type logw struct {
	buf       []byte
	chunk     int // offset of the current chunk, 0: none
	pos       int
	base      int64
	last      int64
	seq       uint32
	nchunks   uint64
	tid       int32
	described map[int32]uint64 // fd → chunk number+1 holding its SC_K_FD record
	scratch   *C.uint8_t
}

const scratchSize = 2 * C.SC_RECORD_MAX

func newLog(node string, pid int32, start int64) *logw {
	hdr := int(C.SC_HDR_SIZE)
	b := make([]byte, hdr, 64<<20)
	le := binary.LittleEndian
	copy(b, C.SC_MAGIC)
	le.PutUint32(b[8:], uint32(C.SC_VERSION))
	le.PutUint32(b[12:], uint32(hdr))
	le.PutUint32(b[16:], uint32(C.SC_CHUNK_SIZE))
	le.PutUint32(b[20:], uint32(C.SC_CLOCK_REALTIME))
	le.PutUint64(b[40:], uint64(start))
	le.PutUint64(b[48:], uint64(start))
	le.PutUint64(b[56:], uint64(start%1e12))
	le.PutUint32(b[64:], uint32(pid))
	le.PutUint32(b[68:], 1)
	off := int(C.SC_HDR_STRINGS_OFF)
	put := func(tag int, v string) {
		b[off] = byte(tag)
		le.PutUint16(b[off+1:], uint16(len(v)))
		copy(b[off+3:], v)
		off += 3 + len(v)
	}
	put(C.SC_STR_HOST, node)
	put(C.SC_STR_NODE, node)
	put(C.SC_STR_EXE, "/usr/sbin/squid")
	put(C.SC_STR_ARGV, "squid\x00")
	put(C.SC_STR_BOOTID, "boot-"+node)
	put(C.SC_STR_CLOCKNAME, "CLOCK_REALTIME")
	le.PutUint32(b[72:], uint32(off-int(C.SC_HDR_STRINGS_OFF)))
	return &logw{buf: b, tid: pid, described: map[int32]uint64{}, last: start,
		scratch: (*C.uint8_t)(C.malloc(scratchSize))}
}

func (l *logw) free() { C.free(unsafe.Pointer(l.scratch)) }

// room starts a new chunk unless the current one has room for an
// operation's records (an SC_K_FD record and the call's), as the library
// keeps it.
func (l *logw) room(t int64) {
	if l.chunk != 0 && l.pos+2*C.SC_RECORD_MAX <= l.chunk+C.SC_CHUNK_SIZE {
		return
	}
	l.chunk = len(l.buf)
	l.buf = append(l.buf, make([]byte, C.SC_CHUNK_SIZE)...)
	c := l.buf[l.chunk:]
	le := binary.LittleEndian
	le.PutUint32(c[0:], uint32(C.SC_CHUNK_MAGIC))
	le.PutUint32(c[4:], uint32(l.tid))
	le.PutUint64(c[8:], uint64(t))
	le.PutUint64(c[16:], l.nchunks)
	le.PutUint32(c[24:], l.seq)
	l.nchunks++
	l.seq++
	le.PutUint64(l.buf[24:], l.nchunks)
	l.pos = l.chunk + C.SC_CHUNK_HDR_SIZE
	l.base, l.last = t, t
}

// commit appends a record whose body (from dt on) the encoder wrote into
// scratch.
func (l *logw) commit(kind byte, t int64, n C.size_t) {
	if n == 0 {
		panic("codeenlogs: record overflow")
	}
	copy(l.buf[l.pos+1:], unsafe.Slice((*byte)(unsafe.Pointer(l.scratch)), int(n)))
	l.buf[l.pos] = kind
	l.pos += 1 + int(n)
	l.last = t
}

func ip4(a netip.AddrPort) *C.uint8_t {
	b := a.Addr().As4()
	return (*C.uint8_t)(C.CBytes(b[:]))
}

func (l *logw) fd(t int64, fd int32, local netip.AddrPort, remote *netip.AddrPort) {
	l.room(t)
	lip := ip4(local)
	defer C.free(unsafe.Pointer(lip))
	var rip *C.uint8_t
	var rport C.uint16_t
	if remote != nil {
		rip = ip4(*remote)
		defer C.free(unsafe.Pointer(rip))
		rport = C.uint16_t(remote.Port())
	}
	n := C.rec_fd(l.scratch, scratchSize, C.int64_t(t-l.last), C.int(fd), lip, C.uint16_t(local.Port()), rip, rport)
	l.commit(kFd, t, n)
	l.described[fd] = l.nchunks
}

func (l *logw) event(t int64, op int, fd int32, mask uint, ret int64, fd2 int32, dur uint64, arg int64, remote *netip.AddrPort) {
	l.room(t)
	var rip *C.uint8_t
	var rport C.uint16_t
	if remote != nil {
		rip = ip4(*remote)
		defer C.free(unsafe.Pointer(rip))
		rport = C.uint16_t(remote.Port())
	}
	n := C.rec_event(l.scratch, scratchSize, C.int64_t(t-l.last), C.int(op), C.int(fd), C.unsigned(mask),
		C.int64_t(ret), C.int(fd2), C.uint64_t(dur), C.int64_t(arg), rip, rport)
	l.commit(kEvent, t, n)
}

// sendRecv appends a hot-path SEND or RECV record, after the fd's SC_K_FD
// record when this chunk does not have it yet.
func (l *logw) sendRecv(t int64, recv bool, fd int32, n int64, local, remote netip.AddrPort) {
	l.room(t)
	if l.described[fd] != l.nchunks {
		l.fd(t, fd, local, &remote)
	}
	kind := byte(kSend)
	if recv {
		kind = kRecv
	}
	k := C.rec_sendrecv(l.scratch, scratchSize, C.int64_t(t-l.last), C.int(fd), C.int64_t(n))
	l.commit(kind, t, k)
}
