package reconcile

// Streaming captures (steps P1–P5 of pcapsource.go without holding the
// packets): a capture is a feed that can be read from its start again, and
// each pass reads it packet by packet through a bounded reorder window.
//
//  S1. First pass over every capture, on the addresses as captured: a
//      bounded sample for NAT detection (the first natSample packets of
//      each conversation at each capture point), the handshakes (SYN and
//      SYN-ACK segments, one per connection end), and per endpoint the
//      packets and highest TTL for the clock choice; also whether a
//      conversation carried TCP data. Memory: a few hundred bytes per
//      conversation, nothing per packet.
//  S2. Only when some conversation carried data but no capture saw its
//      handshake (a capture that started mid-stream): a second pass that
//      assigns packets to connections to learn the first byte of those
//      directions (P4's lowest sequence number).
//  S3. The replay (P5) reads the capture once more, assigning each packet
//      to its connection as it goes.

import (
	"fmt"
	"net/netip"
	"os"
	"sort"
	"time"

	"wap5/nat"
)

// DefaultPacketReorder is how far a capture's packets may be out of time
// order (tcpdump's per-CPU buffers) unless Options.PacketReorder says
// otherwise: each pass holds packets that long and hands them on in time
// order; a straggler later than that goes on at once, at the time of the
// packet handed on before it (counted in a warning).
const DefaultPacketReorder = 50 * time.Millisecond

func (o Options) packetReorder() int64 {
	if o.PacketReorder > 0 {
		return int64(o.PacketReorder)
	}
	return int64(DefaultPacketReorder)
}

// natSample is how many packets of each conversation at each capture point
// NAT detection sees (S1): a translated flow needs 2 (TCP) or 3 (UDP)
// matching packets, and its first packets carry the handshake that orients
// it.
const natSample = 16

// packetBatch is how many packets a pass hands on at once.
const packetBatch = 256

// feed is one capture that can be read from its start as often as needed.
type feed interface {
	// each hands the capture's packets in file order, in batches, to fn
	// until fn returns false. The batch is reused after fn returns. The
	// Capture has the frames and decode warnings (no packets). keyed (nil:
	// all) says which packets need Packet.Key, in file order.
	each(keyed func(*nat.Packet) bool, fn func([]nat.Packet) bool) (*Capture, error)
	// reorder is the reorder window in ns (Options.PacketReorder).
	reorder() int64
}

// fileFeed reads a capture file.
type fileFeed struct {
	path   string
	ci     int32
	window int64
}

func (f fileFeed) reorder() int64 { return f.window }

func (f fileFeed) each(keyed func(*nat.Packet) bool, fn func([]nat.Packet) bool) (*Capture, error) {
	r, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	batch := make([]nat.Packet, 0, packetBatch)
	stopped := false
	c, err := streamCapture(r, f.path, f.ci, keyed, func(p *nat.Packet) bool {
		batch = append(batch, *p)
		if len(batch) == packetBatch {
			if !fn(batch) {
				stopped = true
				return false
			}
			batch = batch[:0]
		}
		return true
	})
	if err == nil && !stopped && len(batch) > 0 {
		fn(batch)
	}
	return c, err
}

// memFeed replays a capture already read (PcapSources).
type memFeed struct {
	c      *Capture
	window int64
}

func (m memFeed) reorder() int64 { return m.window }

func (m memFeed) each(keyed func(*nat.Packet) bool, fn func([]nat.Packet) bool) (*Capture, error) {
	batch := make([]nat.Packet, 0, packetBatch)
	for i := 0; i < len(m.c.Packets); i += packetBatch {
		batch = append(batch[:0], m.c.Packets[i:min(i+packetBatch, len(m.c.Packets))]...)
		if keyed != nil {
			// As a file would: no fingerprint where none is asked for.
			for j := range batch {
				if !keyed(&batch[j]) {
					batch[j].Key = 0
				}
			}
		}
		if !fn(batch) {
			break
		}
	}
	return &Capture{File: m.c.File, Frames: m.c.Frames, Warnings: m.c.Warnings}, nil
}

// reorder hands packets on in time order (stably: equal times keep file
// order), holding each until one reorder window newer has been read.
type reorder struct {
	window  int64
	buf     []nat.Packet // held, sorted by time from head
	head    int
	newest  int64
	emitted int64 // time of the last packet handed on
	started bool
	seen    bool
	late    int
	out     []nat.Packet
	fn      func([]nat.Packet) bool
	stop    bool
}

func newReorder(window int64, fn func([]nat.Packet) bool) *reorder {
	return &reorder{window: window, fn: fn, out: make([]nat.Packet, 0, packetBatch)}
}

func (r *reorder) add(batch []nat.Packet) bool {
	for i := range batch {
		p := &batch[i]
		if r.started && p.Time < r.emitted {
			// Beyond the window: it goes on next, at the time of the
			// packet before it (a source's times never go back).
			r.late++
			p.Time = r.emitted
		}
		if !r.seen || p.Time > r.newest {
			r.seen, r.newest = true, p.Time
		}
		n := len(r.buf)
		r.buf = append(r.buf, *p)
		if n > r.head && r.buf[n-1].Time > p.Time {
			k := r.head + sort.Search(n-r.head, func(k int) bool { return r.buf[r.head+k].Time > p.Time })
			copy(r.buf[k+1:], r.buf[k:n])
			r.buf[k] = *p
		}
		for r.head < len(r.buf) && r.buf[r.head].Time <= r.newest-r.window {
			if !r.push(&r.buf[r.head]) {
				return false
			}
			r.head++
		}
		if r.head == len(r.buf) {
			r.buf, r.head = r.buf[:0], 0
		} else if r.head >= 1024 && r.head*2 >= len(r.buf) {
			r.buf = r.buf[:copy(r.buf, r.buf[r.head:])]
			r.head = 0
		}
	}
	return true
}

func (r *reorder) push(p *nat.Packet) bool {
	r.started, r.emitted = true, p.Time
	r.out = append(r.out, *p)
	if len(r.out) == cap(r.out) {
		ok := r.fn(r.out)
		r.out = r.out[:0]
		if !ok {
			r.stop = true
			return false
		}
	}
	return true
}

// flush hands on everything held.
func (r *reorder) flush() {
	if r.stop {
		return
	}
	for ; r.head < len(r.buf); r.head++ {
		if !r.push(&r.buf[r.head]) {
			return
		}
	}
	if len(r.out) > 0 {
		r.fn(r.out)
		r.out = r.out[:0]
	}
}

// sorted reads a feed through a reorder window; the count of late packets
// is returned with the capture's information.
func sorted(f feed, keyed func(*nat.Packet) bool, fn func([]nat.Packet) bool) (*Capture, int, error) {
	r := newReorder(f.reorder(), fn)
	c, err := f.each(keyed, r.add)
	r.flush()
	return c, r.late, err
}

// convKey is a conversation at one capture point, addresses as captured.
type convKey struct {
	lo, hi netip.AddrPort
	proto  uint8
}

// pktEP is an endpoint as captured.
type pktEP struct {
	ep    netip.AddrPort
	proto uint8
}

// epSeen is what S1 counts per endpoint for the clock choice (P3).
type epSeen struct {
	ttl  uint8 // highest TTL of packets it sent
	pkts int
}

// firstPass is S1's result for one capture.
type firstPass struct {
	info   *Capture
	late   int
	window int64 // the reorder window, ns
	sample []nat.Packet
	syns   []nat.Packet
	eps    map[pktEP]*epSeen
	data   map[convKey]bool // TCP conversations with data or FIN
}

func readFirstPass(f feed) (*firstPass, error) {
	fp := &firstPass{window: f.reorder(), eps: map[pktEP]*epSeen{}, data: map[convKey]bool{}}
	counts := map[convKey]int{}
	keyCounts := map[convKey]int{}
	conv := func(p *nat.Packet) convKey {
		if p.Dst.Compare(p.Src) < 0 {
			return convKey{p.Dst, p.Src, p.Proto}
		}
		return convKey{p.Src, p.Dst, p.Proto}
	}
	// Fingerprints for the first natSample packets of each conversation in
	// file order; the sample takes those of them among the first
	// natSample in time order (the same unless the file is out of order).
	keyed := func(p *nat.Packet) bool {
		ck := conv(p)
		n := keyCounts[ck]
		if n < natSample {
			keyCounts[ck] = n + 1
			return true
		}
		return false
	}
	info, late, err := sorted(f, keyed, func(batch []nat.Packet) bool {
		for i := range batch {
			p := &batch[i]
			ck := conv(p)
			if n := counts[ck]; n < natSample && p.Key != 0 {
				counts[ck] = n + 1
				fp.sample = append(fp.sample, *p)
			}
			if p.Proto == nat.ProtoTCP {
				if p.Flags&nat.FlagSYN != 0 {
					fp.syns = append(fp.syns, *p)
				} else if p.Len > 0 || p.Flags&nat.FlagFIN != 0 {
					fp.data[ck] = true
				}
			}
			for k, ep := range [2]netip.AddrPort{p.Src, p.Dst} {
				ek := pktEP{ep, p.Proto}
				s := fp.eps[ek]
				if s == nil {
					s = &epSeen{}
					fp.eps[ek] = s
				}
				s.pkts++
				if k == 0 {
					s.ttl = max(s.ttl, p.TTL)
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	fp.info, fp.late = info, late
	return fp, nil
}

func (fp *firstPass) warnings() []string {
	w := append([]string(nil), fp.info.Warnings...)
	if fp.late > 0 {
		w = append(w, fmt.Sprintf("%s: %d packets more than %d ms out of time order (reorder window); taken at the time of the packet before them", fp.info.File, fp.late, fp.window/1_000_000))
	}
	return w
}
