package libsockcap

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"unsafe"

	"wap5/internal/prefetch"
)

// The fast decoder: advance's tight loop over a chunk's records.
//
// Scanner.decode is the full decoder (every record shape, every check,
// the damage messages). fastRecords decodes the shapes real logs are made
// of — SEND/RECV, EVENT records without a name, FD records, with IPv4 or
// no addresses and varints of at most 8 bytes — straight from the chunk
// bytes into the scanner's event:
//
//  1. Read the record into locals, checking every value as decode does;
//     at anything else (a datagram record, a name, an IPv6 or Unix
//     address, a long varint, a value decode would refuse, the chunk's
//     end) stop before changing any state: decode then reads that record
//     from its start, so damage is reported as before, at the same
//     offset, with the same message.
//  2. An FD record updates the descriptor tables and the loop goes on;
//     a SEND/RECV after a SEND/RECV whose names came from this chunk's FD
//     record changes only the time, op and counts, and the fd's names
//     when on another fd this chunk describes (stream.hot: transfers back
//     to back);
//     an event record is stored into the event field by field, the
//     fields holding pointers (endpoints, name, process) only when they
//     differ from what the event holds (the previous event of the thread:
//     most repeat them), so no write barrier and no 232-byte clear per
//     event.
//
// The events, warnings and RecordBytes are those of decode alone
// (FuzzScanner compares the two with fastPath off and on).

// fastPath enables the fast decoder (tests compare it with the full decoder).
var fastPath = true

// fuv reads the varint at b[i:]: its value and the position after it, or
// -1 where the fast decoder leaves the record to decode (longer than 8
// bytes, or running past the end). It is over the inlining budget: the
// hot fields (fd, a transfer's return) test their one or two bytes in
// place first.
func fuv(b []byte, i int) (uint64, int) {
	if uint(i) < uint(len(b)) && b[i] < 0x80 {
		return uint64(b[i]), i + 1
	}
	return fuvLong(b, i)
}

// fuvLong is fuv for longer varints: the 8 bytes at b[i:] at once, their
// 7-bit groups up to the first byte without its top bit gathered without
// a loop.
func fuvLong(b []byte, i int) (uint64, int) {
	if i+8 <= len(b) && i >= 0 {
		x := binary.LittleEndian.Uint64(b[i:])
		m := ^x & 0x8080808080808080
		if m == 0 {
			return 0, -1
		}
		n := bits.TrailingZeros64(m) + 1 // bits up to and including the last byte's top bit
		x &= ^uint64(0) >> (64 - n)
		v := x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
			x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
		return v, i + n>>3
	}
	return fuvTail(b, i)
}

// fuvTail is fuv within the last 8 bytes of a chunk.
func fuvTail(b []byte, i int) (uint64, int) {
	var v uint64
	for shift := uint(0); shift < 56; shift += 7 {
		if i >= len(b) {
			return 0, -1
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i
		}
	}
	return 0, -1
}

// unzz is the zigzag decoding of u.
func unzz(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// v4 is an address as the fast decoder reads it: IPv4 (ok) or none.
type v4 struct {
	ip   [4]byte
	port uint16
	ok   bool
}

// faddr reads an address of family none or IPv4 at b[i:]; -1 for anything
// else (decode reads it).
func faddr(b []byte, i int) (v4, int) {
	if i < len(b) {
		switch b[i] {
		case afNone:
			return v4{}, i + 1
		case afInet:
			if i+7 <= len(b) {
				return v4{ip: [4]byte(b[i+1 : i+5]), port: binary.BigEndian.Uint16(b[i+5:]), ok: true}, i + 7
			}
		}
	}
	return v4{}, -1
}

// setEP stores a into *e (the zero endpoint for none) if it differs.
func setEP(e *Endpoint, a v4) {
	if !a.ok {
		if !sameEP(e, &zeroEP) {
			*e = Endpoint{}
		}
		return
	}
	ap := netip.AddrPortFrom(netip.AddrFrom4(a.ip), a.port)
	if e.Addr != ap || e.Inode != 0 || e.Unix || e.Path != "" {
		*e = Endpoint{Addr: ap}
	}
}

// sameEP is *a == *b, the address first (it differs most often).
func sameEP(a, b *Endpoint) bool {
	return a.Addr == b.Addr && a.Inode == b.Inode && a.Unix == b.Unix && a.Path == b.Path
}

var zeroEP Endpoint

// fastRecords decodes records of the stream from st.pos (steps 1–2 above):
// true with the next event in st.ev; false at a record it leaves to decode
// or at the end of the chunk's committed records, having consumed the FD
// records before it.
func (s *Scanner) fastRecords(st *stream) bool {
	b := st.data[:st.end]
	pos := st.pos
	for pos < len(b) {
		// step 1: the record into locals
		k := b[pos]
		if k == 0 || k > kFd {
			break // the end of the committed records, or a datagram record
		}
		// dt: mostly 2–4 bytes (ns since the previous record), fuvLong inlined
		var udt uint64
		p := pos + 1
		if p+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[p:])
			m := ^x & 0x8080808080808080
			if m == 0 {
				break
			}
			n := bits.TrailingZeros64(m) + 1
			x &= ^uint64(0) >> (64 - n)
			udt = x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
				x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
			p += n >> 3
		} else if udt, p = fuvTail(b, p); p < 0 {
			break
		}
		if udt > 1<<53 { // |dt| ≤ 2^52, as decode checks
			break
		}
		t := st.t + unzz(udt)
		op := OpSend + Op(k-kSend)
		if k == kEvent {
			if p >= len(b) {
				break
			}
			op = Op(b[p])
			p++
			if op == OpNone || op >= opCount {
				break
			}
		}
		// fd: one byte, inline (fuv is over the inlining budget)
		var ufd uint64
		if p < len(b) && b[p] < 0x80 {
			ufd = uint64(b[p])
			p++
		} else if ufd, p = fuvLong(b, p); p < 0 {
			break
		}
		fd := unzz(ufd)
		if fd < -1 || fd > 1<<31-1 {
			break
		}
		if k == kFd {
			// step 2: an FD record
			if p >= len(b) || b[p] > byte(ProtoUnix) {
				break
			}
			proto := Proto(b[p])
			sotype, p := fuv(b, p+1)
			if p < 0 || sotype > 255 {
				break
			}
			mask, p := fuv(b, p)
			if p < 0 || mask&^fdAll != 0 {
				break
			}
			var loc, rem v4
			var peer uint64
			if mask&fdLocal != 0 {
				if loc, p = faddr(b, p); p < 0 {
					break
				}
			}
			if mask&fdRemote != 0 {
				if rem, p = faddr(b, p); p < 0 {
					break
				}
			}
			if mask&fdPeerPid != 0 {
				if peer, p = fuv(b, p); p < 0 {
					break
				}
			}
			if fi := st.fds.slot(int32(fd)); fi != nil {
				fi.proto, fi.sotype, fi.peerPid = proto, int32(sotype), int32(peer)
				setEP(&fi.local, loc)
				setEP(&fi.remote, rem)
				s.procFds.put(int32(fd), fi)
			}
			st.hot = false
			s.recBytes += int64(p - pos)
			pos, st.pos, st.t = p, p, t
			continue
		}
		var ret, arg, dur, nbytes int64
		var errno, child, peerPid int32
		var sum uint32
		fd2 := int32(-1)
		var loc, rem v4
		if k != kEvent {
			// SEND/RECV: fd zz, ret zz, [errno uv if ret < 0]; ret of
			// one or two bytes inline
			var u uint64
			q := p
			if q+1 < len(b) && b[q+1] < 0x80 {
				if c := b[q]; c < 0x80 {
					u, q = uint64(c), q+1
				} else {
					u, q = uint64(c&0x7f)|uint64(b[q+1])<<7, q+2
				}
			} else if u, q = fuv(b, q); q < 0 {
				break
			}
			if ret = unzz(u); ret < 0 {
				if u, q = fuv(b, q); q < 0 {
					break
				}
				errno = int32(u)
			} else {
				nbytes = ret
			}
			p = q
			if st.hot {
				// the previous event was a SEND/RECV whose names came
				// from this chunk's FD record: the fields no SEND/RECV
				// has are clear; on the same fd only time, op and counts
				// change, on another fd this chunk describes its names
				// too (stored, not compared: cheaper)
				e := &st.ev
				if fd := int32(fd); fd != st.hotFd {
					fi := st.fds.get(fd)
					if fi == nil {
						goto full
					}
					e.Fd, e.Proto, e.SoType, e.PeerPid = fd, fi.proto, fi.sotype, fi.peerPid
					e.Local, e.Remote = fi.local, fi.remote
					st.hotFd = fd
				}
				e.Time, e.Op, e.Ret, e.Bytes, e.Errno = s.wall(t), op, ret, nbytes, errno
				s.recBytes += int64(p - pos)
				st.pos, st.t = p, t
				if s.peek {
					s.peekNext(st, b, p)
				}
				return true
			}
		full:
		} else {
			// EVENT: op u8, fd zz, mask uv, then the fields of the mask
			mask, q := fuv(b, p)
			if q < 0 || mask&^fAll != 0 || mask&fName != 0 {
				break
			}
			var u uint64
			if mask&fRet != 0 {
				if u, q = fuv(b, q); q < 0 {
					break
				}
				ret = unzz(u)
			}
			if mask&fErrno != 0 {
				if u, q = fuv(b, q); q < 0 || u > 1<<16 {
					break
				}
				errno = int32(u)
			}
			if mask&fBytes != 0 {
				if u, q = fuv(b, q); q < 0 || u > 1<<62 {
					break
				}
				nbytes = int64(u)
			} else if (op == OpSend || op == OpRecv) && ret > 0 {
				nbytes = ret
			}
			if mask&fFd2 != 0 {
				if u, q = fuv(b, q); q < 0 {
					break
				}
				if v := unzz(u); v < -1 || v > 1<<31-1 {
					break
				} else {
					fd2 = int32(v)
				}
			}
			if mask&fChild != 0 {
				if u, q = fuv(b, q); q < 0 {
					break
				}
				child = int32(u)
			}
			if mask&fDur != 0 {
				if u, q = fuv(b, q); q < 0 {
					break
				}
				dur = int64(u)
			}
			if mask&fSum != 0 {
				if u, q = fuv(b, q); q < 0 || u > 1<<32-1 {
					break
				}
				sum = uint32(u)
			}
			if mask&fRemote != 0 {
				if rem, q = faddr(b, q); q < 0 {
					break
				}
			}
			if mask&fLocal != 0 {
				if loc, q = faddr(b, q); q < 0 {
					break
				}
			}
			if mask&fArg != 0 {
				if u, q = fuv(b, q); q < 0 {
					break
				}
				arg = unzz(u)
			}
			if mask&fPeerPid != 0 {
				if u, q = fuv(b, q); q < 0 {
					break
				}
				peerPid = int32(u)
			}
			p = q
		}
		// step 2: the event, field by field
		e := &st.ev
		st.hot = false
		var proto Proto
		var sotype int32
		var fi *fdInfo
		if fd >= 0 && op != OpFork && op != OpExec && op != OpExit && op != OpResolve && op != OpGap {
			if fi = st.fds.get(int32(fd)); fi == nil {
				fi = s.procFds.get(int32(fd))
			} else if k != kEvent {
				st.hot, st.hotFd = true, int32(fd)
			}
			if fi != nil {
				proto, sotype = fi.proto, fi.sotype
				if peerPid == 0 {
					peerPid = fi.peerPid
				}
			}
		}
		if e.Proc != &s.proc {
			e.Proc = &s.proc
		}
		e.Time, e.Dur, e.Tid, e.Op, e.Fd, e.Fd2, e.Proto = s.wall(t), dur, st.tid, op, int32(fd), fd2, proto
		e.Bytes, e.Ret, e.Errno, e.Sum, e.PeerPid, e.Child, e.Arg, e.SoType = nbytes, ret, errno, sum, peerPid, child, arg, sotype
		if e.Name != "" {
			e.Name = ""
		}
		// a decoded address wins; else the descriptor's (decode: "if zero")
		switch {
		case loc.ok:
			setEP(&e.Local, loc)
		case fi != nil:
			if !sameEP(&e.Local, &fi.local) {
				e.Local = fi.local
			}
		default:
			setEP(&e.Local, v4{})
		}
		switch {
		case rem.ok:
			setEP(&e.Remote, rem)
		case fi != nil:
			if !sameEP(&e.Remote, &fi.remote) {
				e.Remote = fi.remote
			}
		default:
			setEP(&e.Remote, v4{})
		}
		s.recBytes += int64(p - pos)
		st.pos, st.t = p, t
		if s.peek {
			s.peekNext(st, b, p)
		}
		return true
	}
	st.pos = pos
	return false
}

// EnablePrefetch makes the fast decoder note, for Prefetch, where the
// next record is (peekNext: a few instructions per event, which only a
// reader merging many logs gets back).
func (s *Scanner) EnablePrefetch() { s.peek = true }

// Prefetch asks for the memory the next Scan reads first, without waiting
// for it: the current thread's next record, its descriptor's entry and the
// event it is decoded into, as the fast decoder noted them when it read
// the record before (peekNext, after EnablePrefetch; nothing after
// another decoder's event). A
// reader that merges many logs calls it for the log it reads next, so
// that the fetch overlaps its work on the others. A hint: it changes
// nothing but the time.
func (s *Scanner) Prefetch() {
	if s.pfRec == 0 {
		return
	}
	prefetch.Lines(s.pfRec, 1)
	if s.pfSlot != 0 {
		prefetch.Lines(s.pfSlot, unsafe.Sizeof(fdSlot{}))
	}
	prefetch.Lines(s.pfEv, unsafe.Sizeof(Event{}))
}

// peekNext notes for Prefetch where the record at b[p] (the next one of
// stream st, its bytes just read and so in the caches) is, and the entry
// of the descriptor it names when it is a transfer or an event with a
// one-byte descriptor.
func (s *Scanner) peekNext(st *stream, b []byte, p int) {
	s.pfRec, s.pfEv, s.pfSlot = uintptr(unsafe.Pointer(unsafe.SliceData(b)))+uintptr(p), uintptr(unsafe.Pointer(&st.ev)), 0
	if p+14 > len(b) || b[p] == 0 || b[p] > kEvent { // kind, dt ≤ 10, op, fd: within b
		return
	}
	k := b[p]
	p++
	for i := 0; b[p] >= 0x80; i++ { // dt
		if i == 9 {
			return
		}
		p++
	}
	p++
	if k == kEvent {
		p++ // op
	}
	if b[p] >= 0x80 {
		return
	}
	if fd := int32(unzz(uint64(b[p]))); uint32(fd) < uint32(len(st.fds.small)) {
		s.pfSlot = uintptr(unsafe.Pointer(&st.fds.small[fd]))
	}
}
