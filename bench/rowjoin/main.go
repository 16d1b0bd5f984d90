// Command rowjoin is rc7's prototype of a different data flow for plain short
// TCP connections (issue #3): every logged connection end is reduced, as the
// logs are decoded (once), to one fixed-size row — canonical 4-tuple, role,
// lifetime and up to rowOps writes and reads with their times — and the rows
// are joined per time block by a radix sort on the key instead of a live
// per-connection record fed event by event. The joined pairs (or lone ends,
// whose peer was not traced) become the logical messages (fat-message rule,
// receive time = the read that delivered a run's first byte, call/return by
// stream position), which are sorted by time and numbered.
//
// It is a measurement, not a reconciler: no NAT step, no clock-offset
// report, no node naming or trace writing, loopback/Unix/UDP and connections
// with more than rowOps calls per end only counted (they would keep the
// current path). With -check TRACE (a binary trace `wap5 reconcile
// --no-nat-detect -o` wrote for the same logs) it compares the messages it
// made with the trace's: send time, receive time, bytes, kind, endpoints.
//
//	go build -o /tmp/rc7/rowjoin ./bench/rowjoin
//	/usr/bin/time -f '%U %S %M' /tmp/rc7/rowjoin [-check T.w5t] [-block 32s] LOGDIR...
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

const rowOps = 6 // calls kept per end; more → the end is counted as "long" (current path)

// row is one logged TCP connection end, 112 bytes.
type row struct {
	a, b     uint64 // canonical endpoints, ip<<16|port, a < b
	open     int64
	close    int64
	t        [rowOps]int64 // call times
	n        [rowOps]int32 // bytes: > 0 send, < 0 recv
	tid      int32         // thread of the end's first call (the actor)
	src      uint16        // source (log) index
	role     uint8         // 1 client (connect), 2 server (accept)
	nops     uint8
	localIsA bool
	long     bool // more than rowOps calls, or several threads: not in the lane
	_        [2]byte
}

// msg is one produced message, 40 bytes.
type msg struct {
	send, recv int64
	bytes      int64
	srcEP      uint64 // ip<<16|port of the sender's end
	dstEP      uint64
	srcLog     uint16 // 1 + source index of the sender's log, 0 untraced
	dstLog     uint16
	kind       uint8
}

type fdRow struct {
	idx int32 // index+1 in cur rows of this source, 0 = none
}

type source struct {
	sc   *libsockcap.Scanner
	more bool
	fds  []int32 // fd → 1+index into open
	open []row   // rows being filled (by slot)
	free []int32
}

type stats struct {
	events, tcpEnds, longEnds, otherEnds int64
	pairs, lone, msgs                    int64
	// events (open, calls, close) of the joined ends, and the messages, of
	// pairs and of lone ends: what a lane taking only pairs would take
	pairEvents, loneEvents, pairMsgs     int64
	cpuDecode, cpuJoin, cpuMsgs, cpuSort float64
}

func cpuNow() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func pack(ap libsockcap.Endpoint) (uint64, bool) {
	if ap.Unix || !ap.Addr.IsValid() || !ap.Addr.Addr().Is4() || ap.Addr.Addr().IsLoopback() {
		return 0, false
	}
	a4 := ap.Addr.Addr().As4()
	ip := uint64(a4[0])<<24 | uint64(a4[1])<<16 | uint64(a4[2])<<8 | uint64(a4[3])
	return ip<<16 | uint64(ap.Addr.Port()), true
}

func main() {
	check := flag.String("check", "", "binary trace to compare the messages with")
	outPath := flag.String("o", "", "also name nodes and endpoints and write a binary trace here (\"-\": discard)")
	block := flag.Duration("block", 32*time.Second, "join block (trace time)")
	prof := flag.String("cpuprofile", "", "write a CPU profile")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	paths, err := libsockcap.FindLogs(flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var st stats
	c0 := cpuNow()
	srcs := make([]*source, 0, len(paths))
	var tmin int64 = 1<<63 - 1
	for _, p := range paths {
		sc, err := libsockcap.Open(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		s := &source{sc: sc}
		s.more = sc.Scan()
		if s.more && sc.Event().Time < tmin {
			tmin = sc.Event().Time
		}
		srcs = append(srcs, s)
	}
	var (
		closed []row // rows closed in this block
		carry  []row // unmatched rows of the previous block
		msgs   []msg
		keys   []uint64
		tmp    []uint64
		next   []row
		tmpm   []msg
		held   []*mblock
		pool   []*mblock
		out    = newSink(*check != "", srcs, *outPath)
	)
	bl := int64(*block)
	st.cpuDecode += cpuNow() - c0
	for end := tmin + bl; ; end += bl {
		c := cpuNow()
		live := false
		// 1. decode every source up to the block's end into rows
		for si, s := range srcs {
			for s.more {
				ev := s.sc.Event()
				if ev.Time >= end {
					break
				}
				st.events++
				closed = s.event(ev, uint16(si), closed, &st)
				s.more = s.sc.Scan()
			}
			live = live || s.more
		}
		if !live { // the rows still open at the end close there
			for _, s := range srcs {
				for i := range s.open {
					if s.open[i].role != 0 {
						closed = append(closed, s.open[i])
					}
				}
			}
		}
		c1 := cpuNow()
		st.cpuDecode += c1 - c
		// 2. sort-join this block's rows with the previous block's unmatched ones
		rs := rowSet{closed, carry}
		keys, tmp = sortKeys(&rs, keys, tmp)
		c2 := cpuNow()
		st.cpuJoin += c2 - c1
		// 3. messages of the pairs; unmatched rows of this block carry, the
		// carried ones that found nothing again are lone ends
		for i := 0; i < len(keys); {
			j := i + 1
			for j < len(keys) && keys[j]>>32 == keys[i]>>32 {
				j++
			}
			// group [i,j): same key hash; pair client/server by key and order
			st.group(&rs, keys[i:j], &next, &msgs, live)
			i = j
		}
		carry, next = next, carry[:0]
		closed = closed[:0]
		c3 := cpuNow()
		st.cpuMsgs += c3 - c2
		// step 9, per block: sort this block's messages by time
		if len(msgs) > 0 {
			var b *mblock
			if n := len(pool); n > 0 {
				b, pool = pool[n-1], pool[:n-1]
			} else {
				b = new(mblock)
			}
			b.m = append(b.m[:0], msgs...)
			b.pos = 0
			tmpm = sortMsgs(b.m, tmpm)
			held = append(held, b)
			st.msgs += int64(len(b.m))
			msgs = msgs[:0]
		}
		// and merge out what is below the watermark: two blocks back (the
		// carry and the clock offsets), messages of the rows still open
		// excepted (counted as late if they come later)
		w := end - 2*bl
		if !live {
			w = 1<<63 - 1
		}
		held, pool = out.mergeBelow(held, pool, w)
		st.cpuSort += cpuNow() - c3
		if !live {
			break
		}
	}
	if err := out.finish(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	st.cpuSort += out.cpuFinish
	fmt.Printf("merged: %d messages, %d late (written after a later one), checksum %x\n", out.id, out.late, out.sum)
	msgs = out.all
	fmt.Printf("events %d  tcp ends %d (long %d)  other ends %d  pairs %d  lone %d  messages %d\n",
		st.events, st.tcpEnds, st.longEnds, st.otherEnds, st.pairs, st.lone, st.msgs)
	fmt.Printf("pairs: %d events, %d messages; lone ends: %d events, %d messages\n",
		st.pairEvents, st.pairMsgs, st.loneEvents, st.msgs-st.pairMsgs)
	fmt.Printf("cpu-s: decode+rows %.2f  sort-join %.2f  messages %.2f  sort+merge+write %.2f (of which naming+writing %.2f)  total %.2f\n",
		st.cpuDecode, st.cpuJoin, st.cpuMsgs, st.cpuSort, out.cpuWrite, cpuNow())
	if *check != "" {
		compare(*check, msgs)
	}
}

// event folds one decoded event into its end's row.
func (s *source) event(ev *libsockcap.Event, si uint16, closed []row, st *stats) []row {
	switch ev.Op {
	case libsockcap.OpConnect, libsockcap.OpAccept:
		if ev.Proto != libsockcap.ProtoTCP || ev.Fd < 0 {
			st.otherEnds++
			return closed
		}
		l, ok1 := pack(ev.Local)
		r, ok2 := pack(ev.Remote)
		if !ok1 || !ok2 {
			st.otherEnds++
			return closed
		}
		st.tcpEnds++
		closed = s.closeFd(ev.Fd, ev.Time, closed)
		var slot int32
		if n := len(s.free); n > 0 {
			slot = s.free[n-1]
			s.free = s.free[:n-1]
		} else {
			s.open = append(s.open, row{})
			slot = int32(len(s.open) - 1)
		}
		rw := &s.open[slot]
		*rw = row{open: ev.Time, src: si, tid: ev.Tid}
		if l < r {
			rw.a, rw.b, rw.localIsA = l, r, true
		} else {
			rw.a, rw.b = r, l
		}
		rw.role = 2
		if ev.Op == libsockcap.OpConnect {
			rw.role = 1
		}
		for int(ev.Fd) >= len(s.fds) {
			s.fds = append(s.fds, 0)
		}
		s.fds[ev.Fd] = slot + 1
	case libsockcap.OpSend, libsockcap.OpRecv:
		if ev.Fd < 0 || int(ev.Fd) >= len(s.fds) || s.fds[ev.Fd] == 0 || ev.Bytes <= 0 {
			return closed
		}
		rw := &s.open[s.fds[ev.Fd]-1]
		if rw.nops == rowOps || ev.Tid != rw.tid || ev.Bytes > 1<<31-1 {
			if !rw.long {
				st.longEnds++
			}
			rw.long = true
			return closed
		}
		rw.t[rw.nops] = ev.Time
		n := int32(ev.Bytes)
		if ev.Op == libsockcap.OpRecv {
			n = -n
		}
		rw.n[rw.nops] = n
		rw.nops++
	case libsockcap.OpClose:
		closed = s.closeFd(ev.Fd, ev.Time, closed)
	}
	return closed
}

func (s *source) closeFd(fd int32, t int64, closed []row) []row {
	if fd < 0 || int(fd) >= len(s.fds) || s.fds[fd] == 0 {
		return closed
	}
	slot := s.fds[fd] - 1
	s.fds[fd] = 0
	rw := &s.open[slot]
	rw.close = t
	closed = append(closed, *rw)
	rw.role = 0
	s.free = append(s.free, slot)
	return closed
}

func mix(a, b uint64) uint64 {
	h := a*0x9E3779B97F4A7C15 ^ b*0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	return h ^ h>>32
}

// sortKeys: (32-bit key hash << 32 | row index), LSD radix sort on the hash
// (4 passes of 8 bits over the top 32 bits), then by open time within a
// hash group (groups are tiny).
func sortKeys(rs *rowSet, keys, tmp []uint64) ([]uint64, []uint64) {
	keys = keys[:0]
	for i := range rs.closed {
		r := &rs.closed[i]
		keys = append(keys, mix(r.a, r.b)&^0xffffffff|uint64(i))
	}
	for i := range rs.carry {
		r := &rs.carry[i]
		keys = append(keys, mix(r.a, r.b)&^0xffffffff|uint64(i)|carried)
	}
	tmp = slices.Grow(tmp[:0], len(keys))[:len(keys)]
	for shift := uint(32); shift < 64; shift += 8 {
		var cnt [257]int
		for _, k := range keys {
			cnt[(k>>shift)&0xff+1]++
		}
		for i := 1; i < 257; i++ {
			cnt[i] += cnt[i-1]
		}
		for _, k := range keys {
			b := (k >> shift) & 0xff
			tmp[cnt[b]] = k
			cnt[b]++
		}
		keys, tmp = tmp, keys
	}
	return keys, tmp
}

// group pairs the rows of one hash group: same canonical endpoints, one
// client and one server, in the order they opened (a reused 4-tuple's
// instances pair in order). Unpaired rows of this block carry to the next;
// unpaired carried rows (and all at the end) are lone ends.
func (st *stats) group(rs *rowSet, g []uint64, next *[]row, msgs *[]msg, live bool) {
	if len(g) == 1 {
		st.unpaired(rs, uint32(g[0]), next, msgs, live)
		return
	}
	var ib [8]uint32
	idx := ib[:0]
	for _, k := range g {
		idx = append(idx, uint32(k))
	}
	slices.SortFunc(idx, func(x, y uint32) int {
		rx, ry := rs.at(x), rs.at(y)
		if rx.a != ry.a {
			if rx.a < ry.a {
				return -1
			}
			return 1
		}
		if rx.b != ry.b {
			if rx.b < ry.b {
				return -1
			}
			return 1
		}
		if rx.open != ry.open {
			if rx.open < ry.open {
				return -1
			}
			return 1
		}
		return int(rx.role) - int(ry.role)
	})
	var ub [8]bool
	used := ub[:0]
	for range idx {
		used = append(used, false)
	}
	for x := range idx {
		if used[x] {
			continue
		}
		rx := rs.at(idx[x])
		for y := x + 1; y < len(idx); y++ {
			ry := rs.at(idx[y])
			if ry.a != rx.a || ry.b != rx.b {
				break
			}
			if used[y] || ry.role == rx.role {
				continue
			}
			used[x], used[y] = true, true
			c, s := rx, ry
			if c.role != 1 {
				c, s = s, c
			}
			st.pairs++
			st.pairEvents += int64(c.nops) + int64(s.nops) + 4
			n0 := len(*msgs)
			*msgs = pairMsgs(c, s, *msgs)
			st.pairMsgs += int64(len(*msgs) - n0)
			break
		}
		if !used[x] {
			st.unpaired(rs, idx[x], next, msgs, live)
		}
	}
}

func (st *stats) unpaired(rs *rowSet, i uint32, next *[]row, msgs *[]msg, live bool) {
	if i&carried == 0 && live {
		*next = append(*next, rs.closed[i])
		return
	}
	st.lone++
	st.loneEvents += int64(rs.at(i).nops) + 2
	*msgs = loneMsgs(rs.at(i), *msgs)
}

// rowSet: a block's closed rows and the previous block's unmatched ones;
// a key's index has bit 31 set for the latter.
type rowSet struct{ closed, carry []row }

const carried = 1 << 31

func (rs *rowSet) at(i uint32) *row {
	if i&carried != 0 {
		return &rs.carry[i&^carried]
	}
	return &rs.closed[i]
}

func (r *row) ends() (local, remote uint64) {
	if r.localIsA {
		return r.a, r.b
	}
	return r.b, r.a
}

// runs cuts an end's sends into fat messages: a run of sends until the end
// receives. Returns (first send time, first byte offset, bytes) per run.
type run struct {
	t     int64
	off   int64
	bytes int64
	read  int64 // bytes of the other direction the sender had read when the run began
}

func sendRuns(r *row, out []run) []run {
	var off, read int64
	in := false
	for k := 0; k < int(r.nops); k++ {
		n := int64(r.n[k])
		if n > 0 {
			if !in {
				out = append(out, run{t: r.t[k], off: off, read: read})
				in = true
			}
			out[len(out)-1].bytes += n
			off += n
		} else {
			read -= n
			in = false
		}
	}
	return out
}

// recvAt: the time of the read of r that delivered byte off of its inbound
// direction, Unknown if none did.
func recvAt(r *row, off int64) int64 {
	var got int64
	for k := 0; k < int(r.nops); k++ {
		if n := int64(r.n[k]); n < 0 {
			got -= n
			if got > off {
				return r.t[k]
			}
		}
	}
	return trace.Unknown
}

func pairMsgs(c, s *row, out []msg) []msg {
	var rb [2 * rowOps]run
	cl, _ := c.ends()
	sl, _ := s.ends()
	cr := sendRuns(c, rb[:0])
	first := len(out)
	for _, r := range cr {
		out = append(out, msg{send: r.t, recv: recvAt(s, r.off), bytes: r.bytes, srcEP: cl, dstEP: sl, srcLog: c.src + 1, dstLog: s.src + 1, kind: uint8(trace.KindCall)})
	}
	for _, r := range sendRuns(s, rb[len(cr):len(cr)]) {
		m := msg{send: r.t, recv: recvAt(c, r.off), bytes: r.bytes, srcEP: sl, dstEP: cl, srcLog: s.src + 1, dstLog: c.src + 1}
		// step 8: the return of the call holding the last byte the server had read
		if r.read > 0 {
			for k, q := range cr {
				if q.off < r.read && r.read <= q.off+q.bytes {
					if out[first+k].kind == uint8(trace.KindCall) {
						m.kind = uint8(trace.KindReturn)
					}
					break
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// loneMsgs: the peer was not traced. Sends cut into runs at the end's reads;
// reads cut into runs at the end's sends (receive time = first read).
func loneMsgs(r *row, out []msg) []msg {
	local, remote := r.ends()
	callKind := func(out bool) uint8 {
		if (r.role == 1) == out {
			return uint8(trace.KindCall)
		}
		return uint8(trace.KindReturn)
	}
	var m *msg
	for k := 0; k < int(r.nops); k++ {
		n := int64(r.n[k])
		if n > 0 {
			if m == nil || m.send == trace.Unknown {
				out = append(out, msg{send: r.t[k], recv: trace.Unknown, srcEP: local, dstEP: remote, srcLog: r.src + 1, kind: callKind(true)})
				m = &out[len(out)-1]
			}
			m.bytes += n
		} else {
			if m == nil || m.recv == trace.Unknown {
				out = append(out, msg{send: trace.Unknown, recv: r.t[k], srcEP: remote, dstEP: local, dstLog: r.src + 1, kind: callKind(false)})
				m = &out[len(out)-1]
			}
			m.bytes -= n
		}
	}
	return out
}

func (m *msg) time() int64 {
	if m.send != trace.Unknown {
		return m.send
	}
	return m.recv
}

// sortMsgs: LSD radix sort by time less the block's earliest, in 11-bit
// digits, as many passes as the span needs (a 32 s block: 4).
func sortMsgs(ms, tmp []msg) []msg {
	tmp = slices.Grow(tmp[:0], len(ms))[:len(ms)]
	lo, hi := ms[0].time(), ms[0].time()
	for i := range ms {
		t := ms[i].time()
		lo, hi = min(lo, t), max(hi, t)
	}
	src, dst := ms, tmp
	const bits = 11
	for shift := uint(0); shift < 64 && uint64(hi-lo)>>shift != 0; shift += bits {
		var cnt [1<<bits + 1]int
		for i := range src {
			cnt[(uint64(src[i].time()-lo)>>shift)&(1<<bits-1)+1]++
		}
		for i := 1; i < len(cnt); i++ {
			cnt[i] += cnt[i-1]
		}
		for i := range src {
			b := (uint64(src[i].time()-lo) >> shift) & (1<<bits - 1)
			dst[cnt[b]] = src[i]
			cnt[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ms[0] {
		copy(ms, src)
	}
	return tmp
}

type mblock struct {
	m   []msg
	pos int
}

// sink numbers the messages merged out (step 9) and sums them; with keep,
// it keeps them for -check. A real run would write the trace here.
type sink struct {
	id, late int64
	last     int64
	sum      uint64
	keep     bool
	all      []msg
	// -o: naming (step 7, granularity host) and the binary trace
	path      string
	t         *trace.Trace
	srcs      []*source
	logNode   []trace.NodeID // by 1 + source index, -1 not named yet
	ipNode    map[uint32]trace.NodeID
	eps       epTable
	buf       []trace.Message
	sw        *trace.SpoolWriter
	scratch   *os.File
	cpuWrite  float64 // spooling and the final write
	cpuFinish float64
}

func newSink(keep bool, srcs []*source, path string) *sink {
	o := &sink{keep: keep, path: path}
	if path == "" {
		return o
	}
	o.t, o.srcs = trace.New(), srcs
	o.logNode = make([]trace.NodeID, len(srcs)+1)
	for i := range o.logNode {
		o.logNode[i] = -1
	}
	o.ipNode = map[uint32]trace.NodeID{}
	o.buf = make([]trace.Message, 0, 4096)
	f, err := os.CreateTemp("", "rowjoin-spool")
	if err != nil {
		panic(err)
	}
	os.Remove(f.Name())
	o.scratch, o.sw = f, trace.NewSpoolWriter(f)
	return o
}

func epName(ep uint64) string {
	ip := uint32(ep >> 16)
	return fmt.Sprintf("%d.%d.%d.%d:%d", ip>>24, ip>>16&0xff, ip>>8&0xff, ip&0xff, ep&0xffff)
}

func (o *sink) node(log uint16, ep uint64) trace.NodeID {
	if log != 0 {
		if n := o.logNode[log]; n >= 0 {
			return n
		}
		n := o.t.Node(o.srcs[log-1].sc.Process().Node)
		o.logNode[log] = n
		return n
	}
	ip := uint32(ep >> 16)
	if n, ok := o.ipNode[ip]; ok {
		return n
	}
	n := o.t.Node(fmt.Sprintf("%d.%d.%d.%d", ip>>24, ip>>16&0xff, ip>>8&0xff, ip&0xff))
	o.t.Nodes[n].Untraced = true
	o.ipNode[ip] = n
	return n
}

func (o *sink) endpoint(ep uint64) trace.EndpointID {
	k, i := o.eps.find(ep)
	if o.eps.keys[i] == k {
		return trace.EndpointID(o.eps.ids[i])
	}
	id := o.t.NewEndpoint(epName(ep))
	o.eps.put(i, k, int32(id))
	return id
}

// epTable interns packed endpoints: open addressing, linear probing, at
// most half full.
type epTable struct {
	keys []uint64 // endpoint+1, 0 empty
	ids  []int32
	n    int
}

// find is the slot of ep's key, or the empty slot where it goes.
func (t *epTable) find(ep uint64) (uint64, int) {
	if 2*(t.n+1) > len(t.keys) {
		old, oldIDs := t.keys, t.ids
		n := max(1024, 2*len(old))
		t.keys, t.ids = make([]uint64, n), make([]int32, n)
		for i, k := range old {
			if k != 0 {
				j := t.probe(k)
				t.keys[j], t.ids[j] = k, oldIDs[i]
			}
		}
	}
	k := ep + 1
	return k, t.probe(k)
}

func (t *epTable) probe(k uint64) int {
	mask := len(t.keys) - 1
	i := int(mix(k, 0x2545F4914F6CDD1D)) & mask
	for t.keys[i] != 0 && t.keys[i] != k {
		i = (i + 1) & mask
	}
	return i
}

func (t *epTable) put(i int, k uint64, id int32) {
	t.keys[i], t.ids[i] = k, id
	t.n++
}

func (o *sink) write(m *msg) {
	o.buf = append(o.buf, trace.Message{
		Send: m.send, Recv: m.recv, ID: o.id, Bytes: m.bytes,
		Src: o.node(m.srcLog, m.srcEP), Dst: o.node(m.dstLog, m.dstEP),
		SrcEP: o.endpoint(m.srcEP), DstEP: o.endpoint(m.dstEP),
		Call: trace.NoRef, Truth: trace.NoRef, Kind: trace.Kind(m.kind),
		SrcActor: trace.NoActor, DstActor: trace.NoActor,
	})
	if len(o.buf) == cap(o.buf) && len(o.buf) > 0 {
		o.flush()
	}
}

func (o *sink) flush() {
	c := cpuNow()
	if err := o.sw.Write(o.buf); err != nil {
		panic(err)
	}
	o.buf = o.buf[:0]
	o.cpuWrite += cpuNow() - c
}

func (o *sink) finish() error {
	if o.sw == nil {
		return nil
	}
	o.flush()
	c := cpuNow()
	defer func() { o.cpuFinish = cpuNow() - c; o.cpuWrite += o.cpuFinish }()
	var w io.Writer = io.Discard
	if o.path != "-" {
		f, err := os.Create(o.path)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return o.sw.Finish(w, o.t)
}

func (o *sink) put(m *msg) {
	t := m.time()
	if t < o.last {
		o.late++
	}
	o.last = t
	o.sum += uint64(o.id) * uint64(t)
	if o.sw != nil {
		o.write(m)
	}
	o.id++
	if o.keep {
		o.all = append(o.all, *m)
	}
}

// mergeBelow merges the held sorted blocks' messages with time below w
// into the sink (ties: earlier block first); exhausted blocks go to pool.
func (o *sink) mergeBelow(held, pool []*mblock, w int64) ([]*mblock, []*mblock) {
	for {
		best := -1
		var bt int64
		for i, b := range held {
			if b.pos < len(b.m) {
				if t := b.m[b.pos].time(); t < w && (best < 0 || t < bt) {
					best, bt = i, t
				}
			}
		}
		if best < 0 {
			break
		}
		b := held[best]
		// the run of b below every other head
		lim := w
		for i, c := range held {
			if i != best && c.pos < len(c.m) {
				t := c.m[c.pos].time()
				if i < best {
					t-- // earlier block wins ties
				}
				if t+1 < lim {
					lim = t + 1
				}
			}
		}
		for b.pos < len(b.m) && b.m[b.pos].time() < lim {
			o.put(&b.m[b.pos])
			b.pos++
		}
	}
	k := 0
	for _, b := range held {
		if b.pos < len(b.m) {
			held[k] = b
			k++
		} else {
			pool = append(pool, b)
		}
	}
	return held[:k], pool
}

type mkey struct {
	send, recv, bytes int64
	src, dst          uint64
	kind              uint8
}

func parseEP(s string) uint64 {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return 0
	}
	port, _ := strconv.Atoi(s[i+1:])
	var ip uint64
	for _, p := range strings.Split(s[:i], ".") {
		v, _ := strconv.Atoi(p)
		ip = ip<<8 | uint64(v)
	}
	return ip<<16 | uint64(port)
}

// compare: the multiset of (send, recv, bytes, endpoints, kind) of msgs
// against the trace's; also whether the order by time agrees.
func compare(path string, msgs []msg) {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	t, err := trace.ReadBinary(f, path)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	eps := make([]uint64, len(t.Endpoints))
	for i, s := range t.Endpoints {
		eps[i] = parseEP(s)
	}
	want := map[mkey]int{}
	for i := range t.Messages {
		m := &t.Messages[i]
		want[mkey{m.Send, m.Recv, m.Bytes, eps[m.SrcEP], eps[m.DstEP], uint8(m.Kind)}]++
	}
	var same, extra int
	for i := range msgs {
		m := &msgs[i]
		k := mkey{m.send, m.recv, m.bytes, m.srcEP, m.dstEP, m.kind}
		if want[k] > 0 {
			want[k]--
			same++
		} else {
			extra++
			if extra <= 5 {
				fmt.Printf("  only prototype: %+v\n", k)
			}
		}
	}
	missing := 0
	for k, n := range want {
		if n > 0 {
			missing += n
			if missing <= 5 {
				fmt.Printf("  only trace: %+v x%d\n", k, n)
			}
		}
	}
	inOrder := 0
	for i := range msgs {
		if i < len(t.Messages) && msgs[i].time() == t.Messages[i].Time() {
			inOrder++
		}
	}
	fmt.Printf("check: trace %d messages, prototype %d: %d same, %d only prototype, %d only trace; %d at the same position by time\n",
		len(t.Messages), len(msgs), same, extra, missing, inOrder)
}
