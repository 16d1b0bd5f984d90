package reconcile

import (
	"encoding/binary"
	"net/netip"

	"wap5/libsockcap"
)

// Step 0 (clock.go) and the matcher read every log: each log is decoded
// once. The offset pass reads it through a teeScanner, which keeps every
// event it decodes in an eventLog, a compact re-encoding of the fields the
// log source uses (logSource.convert); the matcher's reading then replays
// the eventLog (replayScanner) and goes on decoding the log where the pass
// stopped. Replaying is a few varints per event, not the log's records, its
// threads' merge and its descriptor table; blocks already replayed are let
// go. The events replayed are the events decoded, field for field (those
// the log source reads), so the observations are the same.

// eventLogBlock: the size at which a block of the eventLog is closed.
const eventLogBlock = 64 << 10

// denseEndpointFds: descriptors below this have their latest names kept on
// both sides (an event repeating its descriptor's names stores none).
const denseEndpointFds = 1 << 12

// Field presence bits of an encoded event (after its op byte), the common
// ones of a send or receive first (one byte of mask).
const (
	elFd       = 1 << iota
	elBytes    // Bytes follows
	elRetBytes // Ret is Bytes
	elTid      // Tid follows (else the previous event's)
	elLocal    // the local endpoint follows (else: the descriptor's latest)
	elRemote   // the remote endpoint follows
	elKind     // Proto and SoType follow (else: the descriptor's latest)
	elFd2      // Fd2 follows (else -1)
	elRet      // Ret follows (else 0, or Bytes with elRetBytes)
	elErrno
	elSum
	elChild
)

// Endpoint encoding bits.
const (
	epValid = 1 << iota
	ep4
	epUnix
	epPath
	epInode
	epZone
	epPort
)

// eventLog is the events of one log as the offset pass decoded them.
type eventLog struct {
	blocks [][]byte
	cur    []byte // the block being written
	n      int    // events
	ended  bool   // the log's scanner reported its end
}

// fdNames are a descriptor's latest names as encoded.
type fdNames struct {
	local, remote libsockcap.Endpoint
	soType        int32
	proto         libsockcap.Proto
}

// teeScanner is the offset pass's scanner: the log's own, each event also
// appended to an eventLog.
type teeScanner struct {
	sc    eventScanner
	log   *eventLog
	last  int64
	tid   int32
	names []fdNames
}

func (t *teeScanner) Process() *libsockcap.Process { return t.sc.Process() }
func (t *teeScanner) Event() *libsockcap.Event     { return t.sc.Event() }
func (t *teeScanner) Err() error                   { return t.sc.Err() }
func (t *teeScanner) Warnings() []error            { return t.sc.Warnings() }

func (t *teeScanner) Scan() bool {
	if !t.sc.Scan() {
		t.log.ended = true
		t.flush()
		return false
	}
	t.put(t.sc.Event())
	return true
}

// flush closes the current block.
func (t *teeScanner) flush() {
	if len(t.log.cur) > 0 {
		t.log.blocks = append(t.log.blocks, t.log.cur)
		t.log.cur = nil
	}
}

// put appends one event.
func (t *teeScanner) put(ev *libsockcap.Event) {
	if t.log.cur == nil {
		t.log.cur = make([]byte, 0, eventLogBlock+512)
	}
	b := t.log.cur
	var mask uint64
	set := func(bit uint64, v bool) {
		if v {
			mask |= bit
		}
	}
	set(elFd, ev.Fd != 0)
	set(elFd2, ev.Fd2 != -1)
	set(elRetBytes, ev.Ret != 0 && ev.Ret == ev.Bytes)
	set(elRet, ev.Ret != 0 && ev.Ret != ev.Bytes)
	set(elErrno, ev.Errno != 0)
	set(elBytes, ev.Bytes != 0)
	set(elSum, ev.Sum != 0)
	set(elTid, ev.Tid != t.tid)
	set(elChild, ev.Child != 0)
	t.tid = ev.Tid
	var nm *fdNames
	if ev.Fd >= 0 && ev.Fd < denseEndpointFds {
		for int(ev.Fd) >= len(t.names) {
			t.names = append(t.names, fdNames{})
		}
		nm = &t.names[ev.Fd]
	}
	if nm == nil || nm.proto != ev.Proto || nm.soType != ev.SoType {
		mask |= elKind
		if nm != nil {
			nm.proto, nm.soType = ev.Proto, ev.SoType
		}
	}
	if nm == nil || !sameEndpoint(&nm.local, &ev.Local) {
		mask |= elLocal
		if nm != nil {
			nm.local = ev.Local
		}
	}
	if nm == nil || !sameEndpoint(&nm.remote, &ev.Remote) {
		mask |= elRemote
		if nm != nil {
			nm.remote = ev.Remote
		}
	}
	b = append(b, byte(ev.Op))
	b = binary.AppendUvarint(b, mask)
	b = binary.AppendVarint(b, ev.Time-t.last)
	t.last = ev.Time
	if mask&elFd != 0 {
		b = binary.AppendVarint(b, int64(ev.Fd))
	}
	if mask&elBytes != 0 {
		b = binary.AppendVarint(b, ev.Bytes)
	}
	if mask&elTid != 0 {
		b = binary.AppendVarint(b, int64(ev.Tid))
	}
	if mask&elKind != 0 {
		b = append(b, byte(ev.Proto))
		b = binary.AppendVarint(b, int64(ev.SoType))
	}
	if mask&elFd2 != 0 {
		b = binary.AppendVarint(b, int64(ev.Fd2))
	}
	if mask&elRet != 0 {
		b = binary.AppendVarint(b, ev.Ret)
	}
	if mask&elErrno != 0 {
		b = binary.AppendVarint(b, int64(ev.Errno))
	}
	if mask&elSum != 0 {
		b = binary.AppendUvarint(b, uint64(ev.Sum))
	}
	if mask&elChild != 0 {
		b = binary.AppendVarint(b, int64(ev.Child))
	}
	if mask&elLocal != 0 {
		b = appendEndpoint(b, &ev.Local)
	}
	if mask&elRemote != 0 {
		b = appendEndpoint(b, &ev.Remote)
	}
	t.log.cur = b
	t.log.n++
	if len(b) >= eventLogBlock {
		t.flush()
	}
}

func appendEndpoint(b []byte, e *libsockcap.Endpoint) []byte {
	a := e.Addr.Addr()
	var f byte
	if a.IsValid() {
		f |= epValid
		if a.Is4() {
			f |= ep4
		}
		if a.Zone() != "" {
			f |= epZone
		}
	}
	if e.Addr.Port() != 0 {
		f |= epPort
	}
	if e.Unix {
		f |= epUnix
	}
	if e.Path != "" {
		f |= epPath
	}
	if e.Inode != 0 {
		f |= epInode
	}
	b = append(b, f)
	if f&epValid != 0 {
		if f&ep4 != 0 {
			x := a.As4()
			b = append(b, x[:]...)
		} else {
			x := a.As16()
			b = append(b, x[:]...)
		}
		if f&epZone != 0 {
			b = binary.AppendUvarint(b, uint64(len(a.Zone())))
			b = append(b, a.Zone()...)
		}
	}
	if f&epPort != 0 {
		b = binary.BigEndian.AppendUint16(b, e.Addr.Port())
	}
	if f&epPath != 0 {
		b = binary.AppendUvarint(b, uint64(len(e.Path)))
		b = append(b, e.Path...)
	}
	if f&epInode != 0 {
		b = binary.AppendUvarint(b, e.Inode)
	}
	return b
}

// replayScanner is the matcher's scanner of a log the offset pass read: the
// eventLog's events, then the log's scanner from where the pass stopped.
type replayScanner struct {
	sc    eventScanner
	log   *eventLog
	blk   int    // next block
	cur   []byte // rest of the current block
	left  int    // events not replayed yet
	live  bool   // past the eventLog: sc's events
	last  int64
	tid   int32
	names []fdNames
	ev    libsockcap.Event
}

func newReplayScanner(sc eventScanner, log *eventLog) *replayScanner {
	return &replayScanner{sc: sc, log: log, left: -1, ev: libsockcap.Event{Proc: sc.Process()}}
}

func (r *replayScanner) Process() *libsockcap.Process { return r.sc.Process() }
func (r *replayScanner) Err() error                   { return r.sc.Err() }
func (r *replayScanner) Warnings() []error            { return r.sc.Warnings() }

func (r *replayScanner) Event() *libsockcap.Event {
	if r.live {
		return r.sc.Event()
	}
	return &r.ev
}

func (r *replayScanner) Scan() bool {
	if r.live {
		return r.sc.Scan()
	}
	if r.left < 0 {
		r.left = r.log.n
	}
	if r.left == 0 {
		r.log.blocks, r.log.cur, r.cur = nil, nil, nil
		if r.log.ended {
			return false
		}
		r.live = true
		return r.sc.Scan()
	}
	for len(r.cur) == 0 {
		switch {
		case r.blk < len(r.log.blocks):
			r.cur = r.log.blocks[r.blk]
			r.log.blocks[r.blk] = nil // replayed: let it go
			r.blk++
		case len(r.log.cur) > 0:
			r.cur, r.log.cur = r.log.cur, nil
		default:
			panic("reconcile: event log shorter than its count")
		}
	}
	var ok bool
	r.cur, ok = r.decode(r.cur)
	if !ok {
		panic("reconcile: undecodable event log")
	}
	r.left--
	return true
}

// decode reads one event from b into r.ev.
func (r *replayScanner) decode(b []byte) ([]byte, bool) {
	d := elDec{b: b}
	ev := &r.ev
	ev.Op = libsockcap.Op(d.u8())
	mask := d.uv()
	r.last += d.zz()
	ev.Time = r.last
	field := func(bit uint64) int64 {
		if mask&bit != 0 {
			return d.zz()
		}
		return 0
	}
	var nm *fdNames
	ev.Fd = int32(field(elFd))
	if ev.Fd >= 0 && ev.Fd < denseEndpointFds {
		for int(ev.Fd) >= len(r.names) {
			r.names = append(r.names, fdNames{})
		}
		nm = &r.names[ev.Fd]
	}
	ev.Bytes = field(elBytes)
	if mask&elTid != 0 {
		r.tid = int32(d.zz())
	}
	ev.Tid = r.tid
	switch {
	case mask&elKind != 0:
		ev.Proto = libsockcap.Proto(d.u8())
		ev.SoType = int32(d.zz())
		if nm != nil {
			nm.proto, nm.soType = ev.Proto, ev.SoType
		}
	case nm != nil:
		ev.Proto, ev.SoType = nm.proto, nm.soType
	default:
		d.bad = true
	}
	ev.Fd2 = -1
	if mask&elFd2 != 0 {
		ev.Fd2 = int32(d.zz())
	}
	ev.Ret = field(elRet)
	if mask&elRetBytes != 0 {
		ev.Ret = ev.Bytes
	}
	ev.Errno = int32(field(elErrno))
	ev.Sum = 0
	if mask&elSum != 0 {
		ev.Sum = uint32(d.uv())
	}
	ev.Child = int32(field(elChild))
	if mask&elLocal != 0 {
		ev.Local = d.endpoint()
		if nm != nil {
			nm.local = ev.Local
		}
	} else if nm != nil {
		ev.Local = nm.local
	} else {
		d.bad = true
	}
	if mask&elRemote != 0 {
		ev.Remote = d.endpoint()
		if nm != nil {
			nm.remote = ev.Remote
		}
	} else if nm != nil {
		ev.Remote = nm.remote
	} else {
		d.bad = true
	}
	return d.b, !d.bad
}

// elDec reads an eventLog block; a short or malformed one sets bad.
type elDec struct {
	b   []byte
	bad bool
}

func (d *elDec) u8() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *elDec) uv() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// zz reads a zigzag varint, as binary.Varint does: uv, then the sign from
// the low bit.
func (d *elDec) zz() int64 {
	u := d.uv()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *elDec) bytes(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.bad = true
		d.b = nil
		return nil
	}
	x := d.b[:n]
	d.b = d.b[n:]
	return x
}

func (d *elDec) endpoint() libsockcap.Endpoint {
	var e libsockcap.Endpoint
	f := d.u8()
	var a netip.Addr
	if f&epValid != 0 {
		if f&ep4 != 0 {
			a = netip.AddrFrom4([4]byte(pad(d.bytes(4), 4)))
		} else {
			a = netip.AddrFrom16([16]byte(pad(d.bytes(16), 16)))
		}
		if f&epZone != 0 {
			a = a.WithZone(string(d.bytes(d.uv())))
		}
	}
	var port uint16
	if f&epPort != 0 {
		port = binary.BigEndian.Uint16(pad(d.bytes(2), 2))
	}
	if f&(epValid|epPort) != 0 {
		e.Addr = netip.AddrPortFrom(a, port)
	}
	e.Unix = f&epUnix != 0
	if f&epPath != 0 {
		e.Path = string(d.bytes(d.uv()))
	}
	if f&epInode != 0 {
		e.Inode = d.uv()
	}
	return e
}

// pad returns b, or n zero bytes when b is short (a bad block).
func pad(b []byte, n int) []byte {
	if len(b) < n {
		return make([]byte, n)
	}
	return b
}
