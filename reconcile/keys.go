package reconcile

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"wap5/internal/prefetch"
	"wap5/libsockcap"
)

// epKey is a comparable endpoint identity: an IP address and port, or a Unix
// socket (path and inode, scoped to one running kernel). It holds no
// pointer: strings (Unix paths, scopes, IPv6 zones) are interned to small
// ints by keyStrings, so that a key hashes and compares as plain bytes
// (millions of connection keys on a large set).
type epKey struct {
	addr  [16]byte // netip.Addr.As16
	inode uint64
	zone  int32 // keyStrings ids
	path  int32
	scope int32
	port  uint16
	bits  uint8 // netip.Addr.BitLen: 0 (no address), 32 or 128
}

// ipEpKey is the key of an IP address and port, unscoped.
func (ks *keyStrings) ipEpKey(ap netip.AddrPort) epKey {
	a := ap.Addr()
	k := epKey{addr: a.As16(), port: ap.Port(), bits: uint8(a.BitLen())}
	if z := a.Zone(); z != "" {
		k.zone = ks.id(z)
	}
	return k
}

// less orders keys as netip.AddrPort.Compare, then path, inode and scope
// (strings compared as strings).
func (ks *keyStrings) less(k, o epKey) bool {
	if k.bits != o.bits {
		return k.bits < o.bits
	}
	if c := bytes.Compare(k.addr[:], o.addr[:]); c != 0 {
		return c < 0
	}
	if k.zone != o.zone && k.bits == 128 {
		return ks.strs[k.zone] < ks.strs[o.zone]
	}
	if k.port != o.port {
		return k.port < o.port
	}
	if k.path != o.path {
		return ks.strs[k.path] < ks.strs[o.path]
	}
	if k.inode != o.inode {
		return k.inode < o.inode
	}
	if k.scope != o.scope {
		return ks.strs[k.scope] < ks.strs[o.scope]
	}
	return false
}

// keyStrings interns the strings of endpoint keys; id 0 is "". One per
// matcher or offset pass: ids of two tables do not mix.
type keyStrings struct {
	ids  map[string]int32
	strs []string
}

func (ks *keyStrings) id(s string) int32 {
	if s == "" {
		return 0
	}
	if id, ok := ks.ids[s]; ok {
		return id
	}
	if ks.ids == nil {
		ks.ids = map[string]int32{}
		ks.strs = append(ks.strs, "")
	}
	id := int32(len(ks.strs))
	ks.strs = append(ks.strs, s)
	ks.ids[s] = id
	return id
}

// scopes are an observer's hostScope, netScope and scopeOf as ids of ks,
// cached on the observer.
func (ks *keyStrings) scopes(o *Observer) *scopeIDs {
	if o == nil {
		return &scopeIDs{}
	}
	if o.scopeIDs.by != ks {
		o.scopeIDs = scopeIDs{by: ks, host: ks.id(hostScope(o)), net: ks.id(netScope(o)), kernel: ks.id(scopeOf(o))}
	}
	return &o.scopeIDs
}

// scopeIDs: see keyStrings.scopes.
type scopeIDs struct {
	by                *keyStrings
	host, net, kernel int32
}

// pathScope scopes a Unix socket name: abstract names ("@...") live in the
// network namespace, file system paths in the host's file system.
func (ks *keyStrings) pathScope(path string, o *Observer) int32 {
	if strings.HasPrefix(path, "@") {
		return ks.scopes(o).net
	}
	return ks.scopes(o).host
}

// connKey identifies a connection up to its lifetime: protocol and the
// unordered pair of canonical endpoints.
type connKey struct {
	proto libsockcap.Proto
	a, b  epKey
}

// hash mixes the key's fields into 64 bits: the connection table's key
// (connIndex). Keys of one hash are told apart by comparing the whole key.
func (k *connKey) hash() uint64 {
	h := uint64(k.proto) + 0x9e3779b97f4a7c15
	for _, e := range [2]*epKey{&k.a, &k.b} {
		h = mix(h, binary.LittleEndian.Uint64(e.addr[:8]))
		h = mix(h, binary.LittleEndian.Uint64(e.addr[8:]))
		h = mix(h, e.inode)
		h = mix(h, uint64(uint32(e.zone))|uint64(uint32(e.path))<<32)
		h = mix(h, uint64(uint32(e.scope))|uint64(e.port)<<32|uint64(e.bits)<<48)
	}
	return h
}

// mix folds v into h (a multiply-xorshift step: every input bit reaches
// the high and the low bits).
func mix(h, v uint64) uint64 {
	hi, lo := bits.Mul64(h^v, 0xbf58476d1ce4e5b9)
	return hi ^ lo
}

// connIndex lists the instances (lifetimes) of each connection key, in
// creation order, under the key's 64-bit hash, in an open-addressing table
// (linear probing, at most 3/4 full counting deleted slots, a quarter
// after growing): a slot takes
// 32 bytes and a probe usually one cache line. A list may also hold
// connections of other keys of the same hash (in practice none); readers
// take the key's own with list. A connection knows the slot of its own
// key's list (conn.slot, kept up to date when the table grows), so its
// retirement goes there without hashing or probing.
type connIndex struct {
	slots []connSlot
	used  int // slots not empty: live lists and deleted ones
}

type connSlot struct {
	h    uint64
	list []*conn // nil: empty; empty but not nil (connGone): deleted
}

// connGone marks a deleted slot: a probe goes on past it.
var connGone = make([]*conn, 0)

// find is the slot of hash h, or -1.
func (t *connIndex) find(h uint64) int {
	if len(t.slots) == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.list == nil {
			return -1
		}
		if s.h == h && len(s.list) > 0 {
			return i
		}
	}
}

// prefetch fetches the slot where a probe for hash h starts (a hint:
// see prefetchLines).
func (t *connIndex) prefetch(h uint64) {
	if len(t.slots) > 0 {
		prefetch.Lines(uintptr(unsafe.Pointer(&t.slots[int(h)&(len(t.slots)-1)])), unsafe.Sizeof(connSlot{}))
	}
}

// prefetchSlot fetches slot i (a connection's own: conn.slot).
func (t *connIndex) prefetchSlot(i int32) {
	if i >= 0 && int(i) < len(t.slots) {
		prefetch.Lines(uintptr(unsafe.Pointer(&t.slots[i])), unsafe.Sizeof(connSlot{}))
	}
}

// get is the list of hash h (nil if none), as stored.
func (t *connIndex) get(h uint64) []*conn {
	if i := t.find(h); i >= 0 {
		return t.slots[i].list
	}
	return nil
}

// list is the instances of key (hash h), in creation order: the table's
// list itself unless it holds another key's connection.
func (t *connIndex) list(h uint64, key *connKey) []*conn {
	l := t.get(h)
	for i, x := range l {
		if !x.hasKey(key) {
			out := append([]*conn(nil), l[:i]...)
			for _, y := range l[i+1:] {
				if y.hasKey(key) {
					out = append(out, y)
				}
			}
			return out
		}
	}
	return l
}

// add appends c to the list of hash h and returns that list's slot.
func (t *connIndex) add(h uint64, c *conn) int32 {
	if (t.used+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := len(t.slots) - 1
	free := -1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.list == nil {
			if free < 0 {
				free = i
				t.used++
			}
			break
		}
		if len(s.list) == 0 {
			if free < 0 {
				free = i
			}
			continue
		}
		if s.h == h {
			s.list = append(s.list, c)
			return int32(i)
		}
	}
	t.slots[free] = connSlot{h: h, list: append([]*conn(nil), c)}
	return int32(free)
}

// grow rehashes the live lists into a table at most a quarter full, and
// moves the connections' own slots along (a read of every listed
// connection): with connections retired as fast as they are made, the
// deleted slots fill it again only after twice as many insertions as it
// holds lists.
func (t *connIndex) grow() {
	live := 0
	for i := range t.slots {
		if len(t.slots[i].list) > 0 {
			live++
		}
	}
	n := 16
	for n < 4*(live+1) {
		n *= 2
	}
	old := t.slots
	t.slots, t.used = make([]connSlot, n), live
	mask := n - 1
	for i := range old {
		s := &old[i]
		if len(s.list) == 0 {
			continue
		}
		j := int(s.h) & mask
		for t.slots[j].list != nil {
			j = (j + 1) & mask
		}
		t.slots[j] = *s
		for _, x := range s.list {
			if x.slot == int32(i) { // this is x's own key's list
				x.slot = int32(j)
			}
		}
	}
}

// remove takes c out of the list in slot i (in place, the order of the
// others kept); an emptied slot is deleted.
func (t *connIndex) remove(i int, c *conn) {
	s := &t.slots[i]
	out := s.list[:0]
	for _, x := range s.list {
		if x != c {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		s.list = connGone
	} else {
		s.list = out
	}
}

// drop takes c out of its own key's list, found through c.slot.
func (t *connIndex) drop(c *conn) {
	if i := int(c.slot); i >= 0 && i < len(t.slots) && len(t.slots[i].list) > 0 && slices.Contains(t.slots[i].list, c) {
		t.remove(i, c)
		return
	}
	t.dropKey(c.key.hash(), c) // not reached while c.slot is kept up to date
}

// dropKey takes c out of the list of hash h (an alias of c's: step 6).
func (t *connIndex) dropKey(h uint64, c *conn) {
	if i := t.find(h); i >= 0 {
		t.remove(i, c)
	}
}

// each calls f with every list.
func (t *connIndex) each(f func([]*conn)) {
	for i := range t.slots {
		if l := t.slots[i].list; len(l) > 0 {
			f(l)
		}
	}
}

// hasKey reports whether c is an instance of key: its own, or one of the
// keys of ends merged into it (step 6).
func (c *conn) hasKey(key *connKey) bool {
	if c.key == *key {
		return true
	}
	for i := range c.aliases {
		if c.aliases[i] == *key {
			return true
		}
	}
	return false
}

// hostScope is the host a Unix path means something on (its file system),
// and the fallback of netScope. Node names tell apart network namespaces
// of one kernel (one boot id).
func hostScope(o *Observer) string {
	if o == nil {
		return ""
	}
	if o.hostScope == "" { // never empty once made: it holds a NUL
		o.hostScope = o.Host + "\x00" + o.BootID
	}
	return o.hostScope
}

// netScope is the network a loopback address, an abstract Unix name or the
// address of a wildcard socket means something in: the network namespace of
// one running kernel (boot id + namespace inode) when the observer's log
// names it, so that processes of one machine named as different nodes
// (--node) share their loopback; else the node's host (hostScope: older
// logs, packets).
func netScope(o *Observer) string {
	if o == nil {
		return ""
	}
	if o.netScope == "" {
		if o.NetNS != 0 && o.BootID != "" {
			o.netScope = "netns\x00" + o.BootID + "\x00" + strconv.FormatUint(o.NetNS, 10)
		} else {
			o.netScope = hostScope(o)
		}
	}
	return o.netScope
}

// scopeOf is the kernel a Unix socket inode lives in.
func scopeOf(o *Observer) string {
	if o == nil {
		return ""
	}
	if o.BootID != "" {
		return o.BootID
	}
	return o.Host
}

// natTable canonicalises endpoints: every address is mapped to the name the
// receiver of a translated flow sees (step 2 and 6).
type natTable struct {
	exact map[netip.AddrPort]netip.AddrPort
	addr  map[netip.Addr]netip.Addr // port "*": keep the port
	found []*Translation            // learnt or given, in order
	index map[string]*Translation   // kind|proto|before|after
	// ver counts the changes of exact and addr: a key canonicalised
	// at an earlier ver may be out of date (matcher.pre).
	ver uint32
}

// forget drops the canonical name of ap (a translation that cannot
// canonicalise anything: dgram.go's learn).
func (n *natTable) forget(ap netip.AddrPort) {
	if _, ok := n.exact[ap]; ok {
		delete(n.exact, ap)
		n.ver++
	}
}

func (n *natTable) canon(ap netip.AddrPort) netip.AddrPort {
	if len(n.exact) > 0 {
		if to, ok := n.exact[ap]; ok {
			return to
		}
	}
	if len(n.addr) > 0 {
		if to, ok := n.addr[ap.Addr()]; ok {
			return netip.AddrPortFrom(to, ap.Port())
		}
	}
	return ap
}

// add records a translation before → after and counts one flow.
func (n *natTable) add(kind, proto string, before, after netip.AddrPort, learnt bool) *Translation {
	if n.exact == nil {
		n.exact = map[netip.AddrPort]netip.AddrPort{}
		n.index = map[string]*Translation{}
	}
	b, a := before.String(), after.String()
	id := kind + "|" + proto + "|" + b + "|" + a
	tr, ok := n.index[id]
	if !ok {
		tr = &Translation{Kind: kind, Before: b, After: a, Proto: proto}
		n.index[id] = tr
		n.found = append(n.found, tr)
		// Canonical names are the real ends: a DNAT'd destination becomes
		// the server's address (before → after), a SNAT'd source the
		// client's (after → before). Masquerading that rewrites ports says
		// nothing about the next connection, so it canonicalises nothing.
		switch {
		case kind == "dnat":
			n.exact[before] = after
			n.ver++
		case before.Port() == after.Port():
			n.exact[after] = before
			n.ver++
		}
	}
	if learnt {
		tr.Flows++
	}
	return tr
}

// addAddr records a translation of a whole address that keeps ports
// (masquerading that did not need to change the port): before:* → after:*.
func (n *natTable) addAddr(kind, proto string, before, after netip.Addr) *Translation {
	if n.exact == nil {
		n.exact = map[netip.AddrPort]netip.AddrPort{}
		n.index = map[string]*Translation{}
	}
	if n.addr == nil {
		n.addr = map[netip.Addr]netip.Addr{}
	}
	b, a := anyPort(before), anyPort(after)
	id := kind + "|" + proto + "|" + b + "|" + a
	tr, ok := n.index[id]
	if !ok {
		tr = &Translation{Kind: kind, Before: b, After: a, Proto: proto}
		n.index[id] = tr
		n.found = append(n.found, tr)
		if kind == "dnat" {
			n.addr[before] = after
		} else {
			n.addr[after] = before
		}
		n.ver++
	}
	tr.Flows++
	return tr
}

func anyPort(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		return "[" + a.String() + "]:*"
	}
	return a.String() + ":*"
}

// addRule loads a translation from a nat map; ports may be "*".
func (n *natTable) addRule(t Translation) error {
	if n.exact == nil {
		n.exact = map[netip.AddrPort]netip.AddrPort{}
		n.index = map[string]*Translation{}
	}
	if n.addr == nil {
		n.addr = map[netip.Addr]netip.Addr{}
	}
	bAddr, bPort, bAny, err := parseRuleEndpoint(t.Before)
	if err != nil {
		return err
	}
	aAddr, aPort, aAny, err := parseRuleEndpoint(t.After)
	if err != nil {
		return err
	}
	from, to := netip.AddrPortFrom(bAddr, bPort), netip.AddrPortFrom(aAddr, aPort)
	if t.Kind == "snat" {
		from, to = to, from
	}
	if bAny || aAny {
		n.addr[from.Addr()] = to.Addr()
	} else {
		n.exact[from] = to
	}
	n.ver++
	tc := t
	n.index[t.Kind+"|"+t.Proto+"|"+t.Before+"|"+t.After] = &tc
	n.found = append(n.found, &tc)
	return nil
}

// parseRuleEndpoint parses ip:port, [v6]:port, ip:* or [v6]:*.
func parseRuleEndpoint(s string) (netip.Addr, uint16, bool, error) {
	if strings.HasSuffix(s, ":*") {
		h := strings.TrimSuffix(s, ":*")
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		a, err := netip.ParseAddr(h)
		return a, 0, true, err
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}, 0, false, err
	}
	return ap.Addr(), ap.Port(), false, nil
}

// key returns the canonical endpoint key of e as observed by o.
func (m *matcher) epKeyOf(e libsockcap.Endpoint, o *Observer) epKey {
	if e.Unix {
		return epKey{path: m.ks.id(e.Path), inode: e.Inode, scope: m.ks.pathScope(e.Path, o)}
	}
	ap := m.nat.canon(e.Addr)
	k := m.ks.ipEpKey(ap)
	if ap.Addr().IsLoopback() {
		// 127.0.0.1 on two hosts (or network namespaces) is two
		// different places.
		k.scope = m.ks.scopes(o).net
	}
	return k
}

// connKeyOf keys the connection of a stream observation and tells which end
// (0 or 1) the observer is.
func (m *matcher) connKeyOf(ob *Observation) (connKey, int) {
	var l, r epKey
	if ob.Proto == libsockcap.ProtoUnix {
		switch {
		case ob.Local.Inode != 0 && ob.Remote.Inode != 0:
			// Both inodes: exact (socketpair, connected sockets), across
			// the namespaces of one kernel.
			sc := m.ks.scopes(ob.Observer).kernel
			l = epKey{inode: ob.Local.Inode, scope: sc}
			r = epKey{inode: ob.Remote.Inode, scope: sc}
		default:
			// A path and an unnamed end: instances pair in order.
			l = epKey{path: m.ks.id(ob.Local.Path), scope: m.ks.pathScope(ob.Local.Path, ob.Observer)}
			r = epKey{path: m.ks.id(ob.Remote.Path), scope: m.ks.pathScope(ob.Remote.Path, ob.Observer)}
		}
	} else {
		l, r = m.epKeyOf(ob.Local, ob.Observer), m.epKeyOf(ob.Remote, ob.Observer)
	}
	switch {
	case m.ks.less(l, r):
		return connKey{ob.Proto, l, r}, 0
	case m.ks.less(r, l):
		return connKey{ob.Proto, r, l}, 1
	}
	if ob.Role == RoleServer {
		return connKey{ob.Proto, l, r}, 1
	}
	return connKey{ob.Proto, l, r}, 0
}
