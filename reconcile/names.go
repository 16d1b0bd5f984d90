package reconcile

import (
	"encoding/binary"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"unsafe"

	"wap5/internal/prefetch"
	"wap5/libsockcap"
	"wap5/trace"
)

// namer interns node, actor and endpoint names (step 7) into tables of
// its own, in the order the matcher decides (internal ids): nodes and
// actors in a private trace (t), endpoints in eps. Messages carry these
// ids until step 9 writes them out in the canonical order, renumbered by
// first use (canon.go).
//
// IP endpoints (without a zone) are not interned at all: a message carries
// the endpoint itself as a negative id, −1 − ipEpKey (its address's index
// and the port, which fit in 31 bits for up to 32,767 addresses; the rest
// are interned), and it is named only when the output's tables are
// written. The millions of ephemeral ports of a large set thus cost no
// table probe while matching; step 9 maps each to its output id once, in
// batches (outCanon.remap).
type namer struct {
	t    *trace.Trace
	gran Granularity
	// eps: each interned endpoint's key by internal id (0: unknown, "-"):
	// an IP endpoint's ipEpKey (of an address index too large to pack),
	// or epStrBit | its index in strs (a name made when interned: Unix
	// endpoints, zoned addresses). ips: the addresses by index
	// (ipEpKey's upper bits); strIdx indexes strs by name.
	eps    []uint64
	strs   []string
	strIdx map[string]trace.EndpointID
	ips    []netip.Addr
	nodes  map[*Observer]trace.NodeID
	addrs  map[string]trace.NodeID
	// epIdx: endpoints other than plain IP ones by value.
	epIdx map[libsockcap.Endpoint]trace.EndpointID
	// ipPeers: untraced peers named by their IP address, by address
	// (IPv4 ones in ipPeers4).
	ipPeers map[netip.Addr]trace.NodeID
	// ipOver: interned IP endpoints whose key does not pack (ipEpKey).
	ipOver map[uint64]trace.EndpointID
	// ips: the index of each address (in the order first seen): IPv4
	// addresses by their 4 bytes in ips4 (a map of 4-byte keys, hashed
	// and compared as one word), others in ips6; nips counts both.
	ips4 map[uint32]uint32
	ips6 map[ipAddrKey]uint32
	nips uint32
	// ipPeers4 is ipPeers for IPv4 addresses.
	ipPeers4 map[uint32]trace.NodeID
	// last: the address looked up last, and its index.
	last    ipAddrKey
	lastIdx uint32
	hasLast bool
}

// epStrBit marks an endpoint key that indexes strs.
const epStrBit = 1 << 63

// epPacked bounds the ipEpKeys a message carries as they are (as −1 −
// key: an EndpointID below 0).
const epPacked = 1<<31 - 1

// packedKey is the ipEpKey of a packed endpoint id (id < 0).
func packedKey(id trace.EndpointID) uint64 { return uint64(-1 - int64(id)) }

// appendEndpoint appends the name of internal endpoint id: an IP
// endpoint's as libsockcap.Endpoint.String writes it.
func (n *namer) appendEndpoint(b []byte, id trace.EndpointID) []byte {
	if id == trace.NoEndpoint {
		return append(b, '-')
	}
	if id < 0 {
		k := packedKey(id)
		return netip.AddrPortFrom(n.ips[k>>16], uint16(k)).AppendTo(b)
	}
	k := n.eps[id]
	if k&epStrBit != 0 {
		return append(b, n.strs[k&^epStrBit]...)
	}
	return netip.AddrPortFrom(n.ips[k>>16], uint16(k)).AppendTo(b)
}

// endpointCount is the number of interned endpoint ids (with 0, "-").
func (n *namer) endpointCount() int { return len(n.eps) }

// newEndpoint hands out the next internal endpoint id for key k.
func (n *namer) newEndpoint(k uint64) trace.EndpointID {
	n.eps = append(n.eps, k)
	return trace.EndpointID(len(n.eps) - 1)
}

// ipAddrKey is an IP address as plain bytes (its 16-byte form and whether
// it is IPv4, which prints differently from its mapped IPv6 form).
type ipAddrKey struct {
	a  [16]byte
	v4 bool
}

// ipEpKey is the ipEps key of an address and port.
func (n *namer) ipEpKey(a netip.Addr, port uint16) uint64 {
	k := ipAddrKey{a: a.As16(), v4: a.Is4()}
	if !n.hasLast || k != n.last {
		idx, ok := n.addrIndex(k)
		if !ok {
			idx = n.nips
			n.nips++
			if k.v4 {
				if n.ips4 == nil {
					n.ips4 = map[uint32]uint32{}
				}
				n.ips4[k.four()] = idx
			} else {
				if n.ips6 == nil {
					n.ips6 = map[ipAddrKey]uint32{}
				}
				n.ips6[k] = idx
			}
		}
		if !ok {
			n.ips = append(n.ips, a)
		}
		n.last, n.lastIdx, n.hasLast = k, idx, true
	}
	return uint64(n.lastIdx)<<16 | uint64(port)
}

// four is an IPv4 key's address as one word.
func (k *ipAddrKey) four() uint32 { return binary.BigEndian.Uint32(k.a[12:]) }

// addrIndex is the index of an address in ips, if it has one.
func (n *namer) addrIndex(k ipAddrKey) (uint32, bool) {
	if k.v4 {
		idx, ok := n.ips4[k.four()]
		return idx, ok
	}
	idx, ok := n.ips6[k]
	return idx, ok
}

func newNamer(g Granularity) *namer {
	return &namer{t: trace.New(), gran: g, nodes: map[*Observer]trace.NodeID{},
		addrs: map[string]trace.NodeID{}, epIdx: map[libsockcap.Endpoint]trace.EndpointID{},
		eps: []uint64{0}, strIdx: map[string]trace.EndpointID{"-": trace.NoEndpoint}}
}

// clean makes a name component safe for the text format: no spaces, no
// control characters, no '/' inside a component.
func clean(s string) string {
	if s == "" {
		return "?"
	}
	ok := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '/' || c == 0x7f {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == '/' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// NodeName is the node name of an observer at granularity g: HOST, HOST/EXE
// or HOST/EXE/PID (EXE is the base name of the program). Observers without a
// program (packet captures) are named by their host at every granularity.
func NodeName(o *Observer, g Granularity) string {
	host := clean(o.Host)
	if g == ByHost || o.Exe == "" {
		return host
	}
	exe := clean(path.Base(o.Exe))
	if g == ByProgram {
		return host + "/" + exe
	}
	return host + "/" + exe + "/" + strconv.FormatInt(int64(o.Pid), 10)
}

func (n *namer) node(o *Observer) trace.NodeID {
	if o.namedBy == n {
		return o.node
	}
	return n.nodeOf(o)
}

// nodeOf is node for an observer not named by n yet (node is inlined).
func (n *namer) nodeOf(o *Observer) trace.NodeID {
	id, ok := n.nodes[o]
	if !ok {
		id = n.t.Node(NodeName(o, n.gran))
		n.nodes[o] = id
	}
	o.namedBy, o.node = n, id
	return id
}

// actor interns the actor ("PID/TID") of an observer's thread on the
// observer's node; NoActor when the pid or the thread is unknown (packets,
// events without a thread). Each observer caches its threads' ids.
func (n *namer) actor(o *Observer, tid int32) trace.ActorID {
	if o.actBy == n && o.actTid == tid {
		return o.actID // the thread looked up last (actBy is n only past actorOf's checks, so tid > 0)
	}
	return n.actorOf(o, tid)
}

// actorOf is actor past its inlined case.
func (n *namer) actorOf(o *Observer, tid int32) trace.ActorID {
	if tid <= 0 || o.Pid <= 0 {
		return trace.NoActor
	}
	if o.actBy == n {
		if o.actTid == tid {
			return o.actID
		}
		if a, ok := o.acts[tid]; ok {
			o.actTid, o.actID = tid, a
			return a
		}
	} else {
		o.actBy, o.acts = n, nil
	}
	a := n.t.Actor(n.node(o), strconv.FormatInt(int64(o.Pid), 10)+"/"+strconv.FormatInt(int64(tid), 10))
	if o.acts == nil {
		o.acts = map[int32]trace.ActorID{}
	}
	o.acts[tid] = a
	o.actTid, o.actID = tid, a
	return a
}

// peer names an untraced peer by its address: the IP address, or the Unix
// endpoint.
func (n *namer) peer(e libsockcap.Endpoint) trace.NodeID {
	if !e.Unix && e.Addr.IsValid() {
		// By address first: no name to format for a peer seen before.
		a := e.Addr.Addr()
		if a.Is4() {
			b := a.As4()
			k := binary.BigEndian.Uint32(b[:])
			if id, ok := n.ipPeers4[k]; ok {
				return id
			}
			id := n.peerByName(e)
			if n.ipPeers4 == nil {
				n.ipPeers4 = map[uint32]trace.NodeID{}
			}
			n.ipPeers4[k] = id
			return id
		}
		if id, ok := n.ipPeers[a]; ok {
			return id
		}
		id := n.peerByName(e)
		if n.ipPeers == nil {
			n.ipPeers = map[netip.Addr]trace.NodeID{}
		}
		n.ipPeers[a] = id
		return id
	}
	return n.peerByName(e)
}

func (n *namer) peerByName(e libsockcap.Endpoint) trace.NodeID {
	var name string
	switch {
	case e.Unix:
		name = clean(e.String())
	case e.Addr.IsValid():
		name = e.Addr.Addr().String()
	default:
		name = "unknown"
	}
	if id, ok := n.addrs[name]; ok {
		return id
	}
	id, known := n.t.LookupNode(name)
	if !known {
		id = n.t.Node(name)
		n.t.Nodes[id].Untraced = true
	}
	n.addrs[name] = id
	return id
}

func (n *namer) endpoint(e libsockcap.Endpoint) trace.EndpointID {
	if e.IsZero() {
		return trace.NoEndpoint
	}
	if a := e.Addr.Addr(); !e.Unix && a.IsValid() && a.Zone() == "" {
		// An IP endpoint: keyed by its address and port alone (cheaper to
		// hash than the whole Endpoint with its path string; its name is
		// the address's, whatever else it holds). No other name has
		// their form (unix:..., a zone), so a new one is a new name too:
		// no lookup by name, and no name made until written.
		k := n.ipEpKey(a, e.Addr.Port())
		if k < epPacked {
			return trace.EndpointID(-1 - int64(k))
		}
		if id, ok := n.ipOver[k]; ok {
			return id
		}
		id := n.newEndpoint(k)
		if n.ipOver == nil {
			n.ipOver = map[uint64]trace.EndpointID{}
		}
		n.ipOver[k] = id
		return id
	}
	if id, ok := n.epIdx[e]; ok {
		return id
	}
	s := e.String()
	if e.Unix {
		switch {
		case e.Path != "":
			s = "unix:" + strings.Map(func(r rune) rune {
				if r <= ' ' || r == 0x7f {
					return '_'
				}
				return r
			}, e.Path)
		case e.Inode == 0:
			return trace.NoEndpoint // unnamed, and no inode to tell it by
		}
	}
	id, ok := n.strIdx[s]
	if !ok {
		id = n.newEndpoint(epStrBit | uint64(len(n.strs)))
		n.strs = append(n.strs, s)
		n.strIdx[s] = id
	}
	n.epIdx[e] = id
	return id
}

// epTable maps ipEpKeys to endpoint ids (step 9: packed ones to output
// ids): each key and its id packed in one
// 8-byte slot of an open-addressing table (linear probing), split into
// segments by the key's hash that grow one at a time. A Go map of the same
// entries takes about twice the memory (16-byte slots, control bytes,
// emptier tables), and all of a segment's probes for a key are in one or
// two cache lines. Keys or ids too large to pack (an address index of 2^26
// or more, an id of 2^22 − 1 or more) go to a map.
type epTable struct {
	segs [epSegs]epSeg
	over map[uint64]trace.EndpointID
}

type epSeg struct {
	slots []uint64 // 0: empty; else key<<epIDBits | id+1
	n     int
}

const (
	epSegs    = 64
	epIDBits  = 22
	epIDMask  = 1<<epIDBits - 1
	epKeyBits = 64 - epIDBits
)

func epHash(k uint64) uint64 { return mix(k, 0x9e3779b97f4a7c15) }

func (t *epTable) get(k uint64) (trace.EndpointID, bool) {
	if k < 1<<epKeyBits {
		h := epHash(k)
		s := &t.segs[h>>58]
		if len(s.slots) > 0 {
			mask := uint64(len(s.slots) - 1)
			for i := h & mask; ; i = (i + 1) & mask {
				v := s.slots[i]
				if v == 0 {
					break
				}
				if v>>epIDBits == k {
					return trace.EndpointID(v&epIDMask) - 1, true
				}
			}
		}
	}
	if len(t.over) > 0 {
		id, ok := t.over[k]
		return id, ok
	}
	return 0, false
}

// prefetch asks for the line where a lookup of k begins.
func (t *epTable) prefetch(k uint64) {
	h := epHash(k)
	if s := &t.segs[h>>58]; len(s.slots) > 0 {
		prefetch.Lines(uintptr(unsafe.Pointer(&s.slots[h&uint64(len(s.slots)-1)])), 8)
	}
}

// put adds k (not in the table) with id.
func (t *epTable) put(k uint64, id trace.EndpointID) {
	if k >= 1<<epKeyBits || id < 0 || int64(id)+1 > epIDMask {
		if t.over == nil {
			t.over = map[uint64]trace.EndpointID{}
		}
		t.over[k] = id
		return
	}
	h := epHash(k)
	s := &t.segs[h>>58]
	if (s.n+1)*4 > len(s.slots)*3 { // at most 3/4 full
		s.grow()
	}
	s.insert(h, k<<epIDBits|uint64(id+1))
	s.n++
}

func (s *epSeg) insert(h, v uint64) {
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for s.slots[i] != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = v
}

func (s *epSeg) grow() {
	old := s.slots
	s.slots = make([]uint64, max(64, 2*len(old)))
	for _, v := range old {
		if v != 0 {
			s.insert(epHash(v>>epIDBits), v)
		}
	}
}
