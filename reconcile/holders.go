package reconcile

// Step 2, holders: a socket lives until the last process holding it closes
// it. A forked child inherits every socket its parent holds, so a parent's
// close of its copy (a forking server closes the accepted connection right
// after the fork) does not end the connection while the child still holds
// it. Logs say who holds what: a process holds an end from its open or its
// first use of it (a child's log knows an inherited descriptor only from
// its first use, which may come before or after the parent's close), a
// fork (the parent's log, with the child's pid) passes everything the
// parent holds to the child — when the child is traced, else nothing is
// known of it — and a process lets go of an end at its close of its last
// descriptor of it (dup'ed descriptors are counted by the log, logs.go) or
// at its exit — the end of its log: an exit record, or the log ending
// without one (an exec, a kill; after an exec the new image's log holds
// again from its first use). The end is closed when nobody holds it any
// more.

import (
	"unsafe"

	"wap5/internal/prefetch"
)

// forkSlack bounds how much earlier than its parent's fork record a child's
// log may start (the child can run first); a log of the same pid that
// started before that is an earlier process that had the pid.
const forkSlack = int64(1e9)

// proc is one traced process as a holder of sockets. The logs of one
// process image and of the images it exec'd share it (same host and pid,
// one alive at a time).
type proc struct {
	ppid   int32
	exited bool
	held   []endRef // ends it holds or held (pruned lazily)
	kept   int      // len(held) after the last pruning
}

// holder is one process's hold on an end.
type holder struct {
	p    *proc
	held bool
}

// procKey names a process: its kernel (host and boot) and pid.
type procKey struct {
	scope string
	pid   int32
}

func keyOfProc(o *Observer) procKey { return procKey{hostScope(o), o.Pid} }

// registerLog notes a log's observer, so that a fork's child pid can be
// told apart from an untraced child (no log: nothing known holds).
func (m *matcher) registerLog(o *Observer) {
	if m.procLogs == nil {
		m.procLogs = map[procKey][]*Observer{}
		m.procs = map[procKey]*proc{}
	}
	k := keyOfProc(o)
	m.procLogs[k] = append(m.procLogs[k], o)
}

// procOf is the process an observer's log belongs to: the live one of its
// pid (a child made known by its parent's fork, an image before an exec),
// else a new one.
func (m *matcher) procOf(o *Observer) *proc {
	if o.procBy == m {
		return o.proc
	}
	if m.procs == nil {
		m.procs = map[procKey]*proc{}
	}
	k := keyOfProc(o)
	p := m.procs[k]
	if p == nil || p.exited || p.ppid != 0 && o.ppid != 0 && p.ppid != o.ppid {
		p = &proc{ppid: o.ppid}
		m.procs[k] = p
	}
	o.proc, o.procBy = p, m
	return p
}

// hold records that o's process uses e (its open or any I/O).
func (m *matcher) hold(e *end, o *Observer) {
	if h := e.holders; len(h) == 0 || o.procBy != m || h[0].p != o.proc {
		m.holdOf(e, o)
	} else {
		h[0].held = true // the usual case, inlined: the first holder
	}
}

// holdOf is hold past its inlined case.
func (m *matcher) holdOf(e *end, o *Observer) {
	p := m.procOf(o)
	for i := range e.holders {
		if e.holders[i].p == p {
			e.holders[i].held = true
			return
		}
	}
	m.addHolder(e, p)
}

func (m *matcher) addHolder(e *end, p *proc) {
	e.holders = append(e.holders, holder{p: p, held: true})
	p.held = append(p.held, e.ref())
	if len(p.held) >= 2*p.kept+64 {
		const ahead = 8
		keep := p.held[:0]
		for i, x := range p.held {
			if i+ahead < len(p.held) {
				// A pruning reads every end the process held since the
				// last: fetch ahead (its first lines: endHot).
				prefetch.Lines(uintptr(unsafe.Pointer(p.held[i+ahead].e)), endHot)
			}
			if x.live() && !x.e.c.gone && x.e.heldBy(p) {
				keep = append(keep, x)
			}
		}
		clear(p.held[len(keep):])
		p.held = keep
		p.kept = len(p.held)
	}
}

// heldBy reports whether p holds e.
func (e *end) heldBy(p *proc) bool {
	for _, h := range e.holders {
		if h.p == p {
			return h.held
		}
	}
	return false
}

// release lets go of o's process's hold on e; it reports whether another
// process still holds e.
func (m *matcher) release(e *end, o *Observer) bool {
	return m.releaseProc(e, m.procOf(o))
}

func (m *matcher) releaseProc(e *end, p *proc) bool {
	still := false
	for i := range e.holders {
		h := &e.holders[i]
		if h.p == p {
			h.held = false
		} else if h.held {
			still = true
		}
	}
	return still
}

// fork passes everything the parent holds to its child (ob.Bytes), when the
// child is traced and has not exited already.
func (m *matcher) fork(ob *Observation) {
	parent := m.procOf(ob.Observer)
	child := m.childLog(ob)
	if child == nil {
		return // untraced: nothing known holds on its behalf
	}
	cp := child.proc
	if child.procBy != m {
		cp = &proc{ppid: ob.Observer.Pid}
		child.proc, child.procBy = cp, m
		m.procs[keyOfProc(child)] = cp
	}
	if cp.exited {
		return // the child ran first and is gone already
	}
	for _, r := range parent.held {
		e := r.e
		if !r.live() || e.c.gone || !e.heldBy(parent) {
			continue
		}
		present := false
		for _, h := range e.holders {
			present = present || h.p == cp
		}
		if !present {
			m.addHolder(e, cp)
		}
	}
}

// childLog finds the log of a fork's child: same host, the child's pid, the
// parent's pid as its parent (when known), started no earlier than
// forkSlack before the fork (when known); the earliest such.
func (m *matcher) childLog(ob *Observation) *Observer {
	k := procKey{hostScope(ob.Observer), int32(ob.Bytes)}
	var best *Observer
	for _, o := range m.procLogs[k] {
		if o.ppid != 0 && ob.Observer.Pid != 0 && o.ppid != ob.Observer.Pid {
			continue
		}
		if o.start != 0 && o.start < ob.Time-forkSlack {
			continue
		}
		if best == nil || o.start < best.start {
			best = o
		}
	}
	return best
}

// exit lets go of everything a process still holds; ends nobody holds any
// more close.
func (m *matcher) exit(ob *Observation) {
	p := m.procOf(ob.Observer)
	p.exited = true
	held := p.held
	p.held = nil
	for _, r := range held {
		e := r.e
		if !r.live() || e.c.gone || !e.heldBy(p) {
			continue
		}
		if !m.releaseProc(e, p) {
			m.closeEnd(e)
			m.indexSig(e.c)
			m.pump(e.c, false)
		}
	}
	if k := keyOfProc(ob.Observer); m.procs[k] == p {
		delete(m.procs, k)
	}
}
