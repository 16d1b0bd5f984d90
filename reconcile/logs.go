package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"syscall"

	"wap5/libsockcap"
)

// eventScanner is the part of *libsockcap.Scanner a log source reads, so
// tests can feed made-up events.
type eventScanner interface {
	Process() *libsockcap.Process
	Scan() bool
	Event() *libsockcap.Event
	Err() error
	Warnings() []error
}

// fdState is what a log source knows about one descriptor.
type fdState struct {
	socket uint64
	proto  libsockcap.Proto
	stream bool
	role   Role
	local  libsockcap.Endpoint
	remote libsockcap.Endpoint
	refs   int32 // descriptors naming it (dup)
}

// fdTable maps a process's descriptors to their state: small descriptors
// (nearly all) in a slice, others in a map. A state no descriptor names
// any more goes to free, for newState to use again: a log's states take
// the memory of the descriptors open at once, not of every socket it
// opened (states come from slabs, and one state still in use kept its
// whole slab alive).
type fdTable struct {
	dense  []*fdState
	sparse map[int32]*fdState
	free   []*fdState
}

const denseFds = 1 << 16

func (t *fdTable) get(fd int32) *fdState {
	if uint32(fd) < denseFds {
		if int(fd) < len(t.dense) {
			return t.dense[fd]
		}
		return nil
	}
	return t.sparse[fd]
}

// set points fd at st (nil: closes fd), keeping the states' counts.
func (t *fdTable) set(fd int32, st *fdState) {
	if st != nil {
		st.refs++
	}
	if old := t.get(fd); old != nil {
		if old.refs--; old.refs == 0 {
			t.free = append(t.free, old)
		}
	}
	if uint32(fd) < denseFds {
		for int(fd) >= len(t.dense) {
			if st == nil {
				return
			}
			t.dense = append(t.dense, nil)
		}
		t.dense[fd] = st
		return
	}
	if st == nil {
		delete(t.sparse, fd)
		return
	}
	if t.sparse == nil {
		t.sparse = map[int32]*fdState{}
	}
	t.sparse[fd] = st
}

// all lists the open descriptors' states, dense ones in descriptor order.
func (t *fdTable) all() []*fdState {
	var out []*fdState
	for _, st := range t.dense {
		if st != nil {
			out = append(out, st)
		}
	}
	keys := make([]int32, 0, len(t.sparse))
	for fd := range t.sparse {
		keys = append(keys, fd)
	}
	slices.Sort(keys)
	for _, fd := range keys {
		out = append(out, t.sparse[fd])
	}
	return out
}

func (t *fdTable) reset() {
	for _, st := range t.all() {
		st.refs = 0
	}
	clear(t.dense)
	t.dense = t.dense[:0]
	clear(t.sparse)
}

// logSource turns one process's socket events into observations.
type logSource struct {
	sc       eventScanner
	fast     *libsockcap.Scanner // sc, when it is one: called directly (no interface call per event)
	name     string
	obs      *Observer
	fds      fdTable
	nextSock uint64
	queue    []Observation
	warnings []string
	close    func() error
	done     bool
	path     string // the log file (NewLogSource), for reread
	last     int64  // time of the latest event
	exited   bool   // an exit event was seen
	slab     []fdState
	// clockOnly: a reading for step 0, which needs no data of stream
	// sockets (only their opens): their sends and receives become bare
	// observations (time and op; step 0 counts them, see estimateOffsets).
	clockOnly bool
	started   bool // Next was called
}

// newState makes a descriptor's state: one no descriptor names any more
// (fdTable.free), else from a slab: one object per 128 states instead of
// one each (a state per connection on a large set).
func (s *logSource) newState(st fdState) *fdState {
	if n := len(s.fds.free); n > 0 {
		p := s.fds.free[n-1]
		s.fds.free = s.fds.free[:n-1]
		*p = st
		return p
	}
	if len(s.slab) == cap(s.slab) {
		s.slab = make([]fdState, 0, 128)
	}
	s.slab = append(s.slab, st)
	return &s.slab[len(s.slab)-1]
}

// reread gives step 0 a reading of the same log from its start. A log
// file is opened again and decoded a second time: with the fast decoder
// that costs less CPU and memory than keeping the events step 0 decodes
// and replaying them (bench/results-dec9.md, BenchmarkIngestLogs). A source of another
// scanner not read yet keeps what step 0 decodes (teeScanner) and replays
// it, then decodes the rest (eventlog.go).
func (s *logSource) reread() (Source, error) {
	if !s.started && (s.path == "" || !rereadByPath) {
		l := &eventLog{}
		c := newLogSource(&teeScanner{sc: s.sc, log: l}, s.name)
		c.clockOnly = true
		s.sc, s.fast = newReplayScanner(s.sc, l), nil
		return c, nil
	}
	if s.path != "" {
		c, err := NewLogSource(s.path)
		if err != nil {
			return nil, err
		}
		c.(*logSource).clockOnly = true
		return c, nil
	}
	if ss, ok := s.sc.(*sliceScanner); ok {
		c := EventSource(ss.p, ss.ev)
		c.(*logSource).clockOnly = true
		return c, nil
	}
	return nil, fmt.Errorf("%s: cannot be read again", s.name)
}

// rereadByPath: reread opens a log file again rather than teeing it
// (BenchmarkIngestLogs compares the two).
var rereadByPath = true

// NewLogSource reads one libsockcap log file as a Source.
func NewLogSource(path string) (Source, error) {
	sc, err := libsockcap.Open(path)
	if err != nil {
		return nil, err
	}
	s := newLogSource(sc, path)
	s.close = sc.Close
	s.path = path
	return s, nil
}

// EventSource makes a Source of events already in memory, all of one
// process (tests, benchmarks, other producers of libsockcap events).
func EventSource(p *libsockcap.Process, events []libsockcap.Event) Source {
	return newLogSource(&sliceScanner{p: p, ev: events, i: -1}, p.File)
}

func newLogSource(sc eventScanner, name string) *logSource {
	p := sc.Process()
	host := p.Node
	if host == "" {
		host = p.Host
	}
	if name == "" {
		name = p.File
	}
	fast, _ := sc.(*libsockcap.Scanner)
	return &logSource{sc: sc, fast: fast, name: name,
		obs: &Observer{Host: host, Exe: p.Program(), Pid: p.Pid, BootID: p.BootID, NetNS: p.NetNS, File: name,
			ppid: p.Ppid, start: p.StartWall}}
}

// stop closes a log read only in part (step 0 had enough of it).
func (s *logSource) stop() {
	if !s.done {
		s.done = true
		if s.close != nil {
			s.close()
		}
	}
}

func (s *logSource) Name() string       { return s.name }
func (s *logSource) Err() error         { return s.sc.Err() }
func (s *logSource) Warnings() []string { return s.warnings }

func (s *logSource) Next(o *Observation) bool {
	s.started = true
	for {
		if len(s.queue) > 0 {
			*o = s.queue[0]
			s.queue = s.queue[1:]
			return true
		}
		if s.done {
			return false
		}
		var more bool
		if s.fast != nil {
			more = s.fast.Scan()
		} else {
			more = s.sc.Scan()
		}
		if !more {
			s.done = true
			for _, w := range s.sc.Warnings() {
				var d *libsockcap.DamageError
				if errors.As(w, &d) {
					s.warnings = append(s.warnings, fmt.Sprintf("%s: offset %d: %s", d.File, d.Offset, d.Msg))
				} else {
					s.warnings = append(s.warnings, fmt.Sprintf("%s: %v", s.name, w))
				}
			}
			if s.close != nil {
				s.close()
			}
			if !s.exited {
				// The log ended without an exit (an exec, a kill, the
				// end of the capture): nothing more of this process
				// image will be seen, so it holds nothing from here on.
				s.exited = true
				s.queue = append(s.queue, Observation{Time: max(s.last, s.obs.start), Op: OpExit,
					Origin: OriginLog, Observer: s.obs, Offset: -1})
				continue
			}
			return false
		}
		var ev *libsockcap.Event
		if s.fast != nil {
			ev = s.fast.Event()
		} else {
			ev = s.sc.Event()
		}
		if ev.Time > s.last {
			s.last = ev.Time
		}
		if s.convert(ev, o) {
			return true
		}
	}
}

func (s *logSource) state(fd int32, ev *libsockcap.Event) *fdState {
	st := s.fds.get(fd)
	if st == nil {
		st = s.newState(fdState{proto: ev.Proto, stream: isStream(ev)})
		s.fds.set(fd, st)
	}
	if st.proto == libsockcap.ProtoOther && ev.Proto != libsockcap.ProtoOther {
		st.proto, st.stream = ev.Proto, isStream(ev)
	}
	return st
}

// isStream: TCP and Unix SOCK_STREAM/SOCK_SEQPACKET are streams; UDP and
// Unix SOCK_DGRAM are datagrams.
func isStream(ev *libsockcap.Event) bool {
	switch ev.SoType {
	case syscall.SOCK_STREAM, syscall.SOCK_SEQPACKET:
		return true
	case syscall.SOCK_DGRAM:
		return false
	}
	return ev.Proto == libsockcap.ProtoTCP || ev.Proto == libsockcap.ProtoUnix && ev.Sum == 0
}

func (s *logSource) base(o *Observation, ev *libsockcap.Event, st *fdState, op Op) {
	// Field by field, the names only when they differ from what o holds
	// (usually the previous observation of the same socket): they hold
	// pointers, and storing them costs write barriers.
	o.Time, o.Op, o.Proto, o.Stream, o.Role = ev.Time, op, st.proto, st.stream, st.role
	o.Origin, o.Socket, o.Offset, o.Bytes, o.Sum, o.HasSum, o.Loc = OriginLog, st.socket, -1, 0, 0, false, 0
	o.Tid = ev.Tid
	if o.Observer != s.obs {
		o.Observer = s.obs
	}
	if !sameEndpoint(&o.Local, &st.local) {
		o.Local = st.local
	}
	if !sameEndpoint(&o.Remote, &st.remote) {
		o.Remote = st.remote
	}
}

// process fills o with an observation of the process itself (OpFork,
// OpExit): no socket, no names.
func (s *logSource) process(o *Observation, ev *libsockcap.Event, op Op) {
	*o = Observation{Time: ev.Time, Op: op, Origin: OriginLog, Observer: s.obs, Offset: -1, Tid: ev.Tid}
}

// convert turns one event into at most one observation (more go to the
// queue); false when the event says nothing the matcher needs.
func (s *logSource) convert(ev *libsockcap.Event, o *Observation) bool {
	switch ev.Op {
	case libsockcap.OpSocket:
		if ev.Fd >= 0 {
			s.fds.set(ev.Fd, nil)
			s.state(ev.Fd, ev)
		}
	case libsockcap.OpConnect:
		if ev.Ret < 0 && ev.Errno != int32(syscall.EINPROGRESS) || ev.Fd < 0 {
			return false
		}
		st := s.state(ev.Fd, ev)
		s.learn(st, ev)
		if !st.stream {
			return false
		}
		st.role = RoleClient
		s.nextSock++
		st.socket = s.nextSock
		s.base(o, ev, st, OpOpen)
		return true
	case libsockcap.OpAccept:
		if ev.Fd < 0 || ev.Ret < 0 {
			return false
		}
		st := s.newState(fdState{proto: ev.Proto, stream: true, role: RoleServer, local: ev.Local, remote: ev.Remote})
		if st.proto == libsockcap.ProtoOther {
			st.proto = libsockcap.ProtoTCP
		}
		s.fds.set(ev.Fd, st)
		s.nextSock++
		st.socket = s.nextSock
		s.base(o, ev, st, OpOpen)
		return true
	case libsockcap.OpSocketpair:
		// Each end opens at its first event, which carries its own names.
		for _, fd := range [2]int32{ev.Fd, ev.Fd2} {
			if fd >= 0 {
				s.fds.set(fd, s.newState(fdState{proto: libsockcap.ProtoUnix, stream: isStream(ev), role: RolePair}))
			}
		}
	case libsockcap.OpSend, libsockcap.OpRecv:
		if ev.Bytes <= 0 || ev.Fd < 0 {
			return false
		}
		st := s.fds.get(ev.Fd)
		if st == nil || st.proto == libsockcap.ProtoOther {
			st = s.state(ev.Fd, ev) // state's work, past its usual case
		}
		s.learn(st, ev)
		if st.proto == libsockcap.ProtoOther {
			return false
		}
		if st.stream && st.socket == 0 {
			s.nextSock++
			st.socket = s.nextSock
		}
		op := OpSend
		if ev.Op == libsockcap.OpRecv {
			op = OpRecv
		}
		if st.stream && s.clockOnly {
			o.Time, o.Op, o.Proto, o.Stream = ev.Time, op, st.proto, true
			return true
		}
		s.base(o, ev, st, op)
		o.Bytes = ev.Bytes
		if !st.stream {
			// Per-datagram addresses (sendto/recvfrom) win over the fd's.
			if !ev.Remote.IsZero() {
				o.Remote = ev.Remote
			}
			o.Sum, o.HasSum = ev.Sum, true
		}
		return true
	case libsockcap.OpClose:
		st := s.fds.get(ev.Fd)
		s.fds.set(ev.Fd, nil)
		if st == nil || !st.stream || st.socket == 0 {
			return false
		}
		if st.refs > 0 {
			return false // still open under a dup'ed descriptor
		}
		s.base(o, ev, st, OpClose)
		return true
	case libsockcap.OpDup:
		if st := s.fds.get(ev.Fd); st != nil && ev.Fd2 >= 0 {
			s.fds.set(ev.Fd2, st)
		}
	case libsockcap.OpFork:
		// The child holds every socket this process holds (the matcher
		// keeps the holders, holders.go).
		if ev.Child <= 0 {
			return false
		}
		s.process(o, ev, OpFork)
		o.Bytes = int64(ev.Child)
		return true
	case libsockcap.OpExit:
		s.exited = true
		seen := map[*fdState]bool{}
		for _, st := range s.fds.all() {
			if st.stream && st.socket != 0 && !seen[st] {
				seen[st] = true
				var x Observation
				s.base(&x, ev, st, OpClose)
				s.queue = append(s.queue, x)
			}
		}
		s.fds.reset()
		// Then the process itself: what it inherited and never used goes
		// with it.
		var x Observation
		s.process(&x, ev, OpExit)
		s.queue = append(s.queue, x)
	case libsockcap.OpGap:
		s.warnings = append(s.warnings, fmt.Sprintf("%s: %d events lost at %s (thread %d)", s.name, ev.Bytes,
			formatNs(ev.Time), ev.Tid))
	}
	return false
}

// learn takes the names an event carries (the reader fills them from the
// fd's latest description).
func (s *logSource) learn(st *fdState, ev *libsockcap.Event) {
	// Compared first: most events repeat the names, and a store of
	// an endpoint (it holds pointers) costs a write barrier.
	if !sameEndpoint(&st.local, &ev.Local) && !ev.Local.IsZero() && (st.local.IsZero() || st.stream) {
		st.local = ev.Local
	}
	if !sameEndpoint(&st.remote, &ev.Remote) && !ev.Remote.IsZero() && (st.remote.IsZero() || st.stream) {
		st.remote = ev.Remote
	}
}

// sameEndpoint is *a == *b, inlined (the generated comparison is a call
// per endpoint, four per event): the address and port first, which differ
// most often, the path last.
func sameEndpoint(a, b *libsockcap.Endpoint) bool {
	return a.Addr == b.Addr && a.Inode == b.Inode && a.Unix == b.Unix && a.Path == b.Path
}

func formatNs(t int64) string { return fmt.Sprintf("%d.%09d", t/1e9, t%1e9) }

// sliceScanner serves events from memory.
type sliceScanner struct {
	p  *libsockcap.Process
	ev []libsockcap.Event
	i  int
}

func (s *sliceScanner) Process() *libsockcap.Process { return s.p }
func (s *sliceScanner) Scan() bool                   { s.i++; return s.i < len(s.ev) }
func (s *sliceScanner) Event() *libsockcap.Event     { return &s.ev[s.i] }
func (s *sliceScanner) Err() error                   { return nil }
func (s *sliceScanner) Warnings() []error            { return nil }
