package reconcile

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"wap5/libsockcap"
)

// eventsFrom makes events of every shape the eventLog encodes from bytes:
// descriptors small, large and negative, names repeated or not, IPv4,
// IPv6 (zoned, v4-mapped), Unix paths and inodes, a port without an
// address, and fields zero or not.
func eventsFrom(data []byte) []libsockcap.Event {
	p := &libsockcap.Process{Pid: 7}
	next := func(n int) []byte {
		if len(data) < n {
			b := make([]byte, n)
			copy(b, data)
			data = nil
			return b
		}
		b := data[:n]
		data = data[n:]
		return b
	}
	val := func(sel byte) int64 {
		b := next(8)
		switch sel % 4 {
		case 0:
			return 0
		case 1:
			return -1
		case 2:
			return int64(b[0])
		}
		return int64(binary.LittleEndian.Uint64(b))
	}
	endpoint := func(sel byte) libsockcap.Endpoint {
		b := next(18)
		port := binary.LittleEndian.Uint16(b[16:])
		switch sel % 8 {
		case 0:
			return libsockcap.Endpoint{}
		case 1:
			return libsockcap.Endpoint{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), port)}
		case 2:
			return libsockcap.Endpoint{Addr: netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), port)}
		case 3:
			a := netip.AddrFrom16([16]byte(b[:16])).WithZone(string(rune('a' + b[0]%26)))
			return libsockcap.Endpoint{Addr: netip.AddrPortFrom(a, port)}
		case 4:
			a := netip.AddrFrom16(netip.AddrFrom4([4]byte(b[:4])).As16())
			return libsockcap.Endpoint{Addr: netip.AddrPortFrom(a, port)}
		case 5:
			return libsockcap.Endpoint{Unix: true, Path: string(b[:b[0]%17]), Inode: uint64(port)}
		case 6:
			return libsockcap.Endpoint{Unix: true, Inode: binary.LittleEndian.Uint64(b)}
		}
		return libsockcap.Endpoint{Addr: netip.AddrPortFrom(netip.Addr{}, port)}
	}
	var evs []libsockcap.Event
	var t int64
	var prev libsockcap.Event
	for len(data) > 0 {
		h := next(4)
		t += val(h[0])
		ev := libsockcap.Event{Proc: p, Time: t, Op: libsockcap.Op(h[1] % 20)}
		fds := []int32{0, 3, 4, -1, 5000, 70000, int32(h[2])}
		ev.Fd = fds[int(h[2])%len(fds)]
		ev.Fd2 = int32(val(h[3]))
		s := next(8)
		ev.Tid = int32(val(s[0]))
		ev.Bytes = val(s[1])
		ev.Ret = val(s[2])
		if s[2]&0x80 != 0 {
			ev.Ret = ev.Bytes
		}
		ev.Errno = int32(val(s[3]))
		ev.Sum = uint32(val(s[4]))
		ev.Child = int32(val(s[5]))
		ev.SoType = int32(val(s[6]))
		ev.Proto = libsockcap.Proto(s[7] % 5)
		if s[7]&0x80 != 0 {
			ev.Local, ev.Remote = prev.Local, prev.Remote
		} else {
			ev.Local, ev.Remote = endpoint(s[6]), endpoint(s[5])
		}
		evs = append(evs, ev)
		prev = ev
	}
	return evs
}

// sameEvent compares the fields a log source reads (logSource.convert).
func sameEvent(a, b *libsockcap.Event) bool {
	return a.Time == b.Time && a.Op == b.Op && a.Fd == b.Fd && a.Fd2 == b.Fd2 && a.Proto == b.Proto &&
		a.SoType == b.SoType && a.Ret == b.Ret && a.Errno == b.Errno && a.Bytes == b.Bytes && a.Sum == b.Sum &&
		a.Tid == b.Tid && a.Child == b.Child && a.Local == b.Local && a.Remote == b.Remote
}

// checkReplay tees the first k events (all when k < 0), replays them and
// reads the rest live: every event must come back as it was.
func checkReplay(t testing.TB, evs []libsockcap.Event, k int) {
	p := &libsockcap.Process{Pid: 7}
	sc := &sliceScanner{p: p, ev: evs, i: -1}
	log := &eventLog{}
	tee := &teeScanner{sc: sc, log: log}
	n := 0
	for (k < 0 || n < k) && tee.Scan() {
		if !sameEvent(tee.Event(), &evs[n]) {
			t.Fatalf("tee: event %d changed", n)
		}
		n++
	}
	r := newReplayScanner(sc, log)
	i := 0
	for r.Scan() {
		if i >= len(evs) {
			t.Fatalf("replay: more events than %d", len(evs))
		}
		if got := r.Event(); !sameEvent(got, &evs[i]) {
			t.Fatalf("replay (%d teed): event %d\n got %+v\nwant %+v", n, i, *got, evs[i])
		}
		i++
	}
	if i != len(evs) {
		t.Fatalf("replay (%d teed): %d events of %d", n, i, len(evs))
	}
}

func TestEventLogReplay(t *testing.T) {
	data := make([]byte, 200_000)
	x := uint64(1)
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		data[i] = byte(x)
	}
	evs := eventsFrom(data)
	if len(evs) < 1000 {
		t.Fatalf("only %d events", len(evs))
	}
	for _, k := range []int{-1, 0, 1, 17, len(evs) / 2, len(evs) - 1, len(evs)} {
		checkReplay(t, evs, k)
	}
}

func FuzzEventLog(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16"), -1)
	f.Add(make([]byte, 300), 3)
	f.Fuzz(func(t *testing.T, data []byte, k int) {
		evs := eventsFrom(data)
		if k > len(evs) {
			k = len(evs)
		}
		checkReplay(t, evs, k)
	})
}
