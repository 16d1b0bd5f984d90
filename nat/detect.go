package nat

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
)

// Options tune Detect. The zero value is the default.
type Options struct {
	// MinTCP and MinUDP are the matched packets a rule needs before it counts
	// as translation rather than coincidence (defaults 2 and 3, step 4).
	MinTCP, MinUDP int
	// Offsets are capture clock offsets in ns (capture clock = reference +
	// offset), used to compare timestamps when TTLs tie (step 2).
	Offsets map[int32]int64
	// MaxGroups is the most address pairs one fingerprint may show before it
	// is treated as non-discriminating (default 16).
	MaxGroups int
}

func (o Options) withDefaults() Options {
	if o.MinTCP <= 0 {
		o.MinTCP = 2
	}
	if o.MinUDP <= 0 {
		o.MinUDP = 3
	}
	if o.MaxGroups <= 0 {
		o.MaxGroups = 16
	}
	return o
}

// flow is one direction of a flow: protocol and the two endpoints.
type flow struct {
	src, dst netip.AddrPort
	proto    uint8
}

func (f flow) reverse() flow { return flow{f.dst, f.src, f.proto} }

// conv identifies a conversation (both directions) at one capture point.
type conv struct {
	lo, hi  netip.AddrPort
	capture int32
	proto   uint8
}

func convOf(p *Packet) conv {
	lo, hi := p.Src, p.Dst
	if hi.Compare(lo) < 0 {
		lo, hi = hi, lo
	}
	return conv{lo, hi, p.Capture, p.Proto}
}

type origin struct {
	ep   netip.AddrPort
	time int64
	syn  bool
}

// flowPair is a flow as sent (before) and as received (after), in the flow's
// original direction.
type flowPair struct{ before, after flow }

// Detect finds address translation in packets captured at several points
// (or at one point that sees both sides of a router) and returns the
// canonicalisation map. Packets may come in any order.
func Detect(pkts []Packet, opt Options) *Map {
	return DetectSets([][]Packet{pkts}, opt)
}

// pref locates a packet in DetectSets' input: set index and position.
type pref struct{ set, i int32 }

// DetectSets is Detect over several slices of packets (one per capture,
// say), without copying them into one.
func DetectSets(sets [][]Packet, opt Options) *Map {
	opt = opt.withDefaults()
	m := &Map{}
	at := func(r pref) *Packet { return &sets[r.set][r.i] }
	var all []pref
	n := 0
	for _, s := range sets {
		n += len(s)
	}
	all = make([]pref, 0, n)
	for si, s := range sets {
		for i := range s {
			all = append(all, pref{int32(si), int32(i)})
		}
	}

	// Originators, for step 3: the SYN's sender, else the first sender.
	orig := make(map[conv]origin)
	for _, r := range all {
		p := at(r)
		c := convOf(p)
		o, seen := orig[c]
		syn := p.Proto == ProtoTCP && p.Flags&FlagSYN != 0
		switch {
		case syn && p.Flags&FlagACK == 0:
			if !o.syn || p.Time < o.time {
				orig[c] = origin{p.Src, p.Time, true}
			}
		case syn: // SYN-ACK: the receiver opened the connection
			if !o.syn {
				orig[c] = origin{p.Dst, p.Time, true}
			}
		case !seen || (!o.syn && p.Time < o.time):
			orig[c] = origin{p.Src, p.Time, false}
		}
	}

	// 1. Bucket by fingerprint.
	buckets := make(map[uint64][]pref, n/2)
	for _, r := range all {
		p := at(r)
		if p.Proto != ProtoTCP && p.Proto != ProtoUDP {
			continue
		}
		buckets[p.Key] = append(buckets[p.Key], r)
	}
	all = nil
	type group struct {
		f      flow
		count  int
		ttl    uint8
		time   int64
		sample pref
	}
	matches := make(map[flowPair]int)
	crowded := 0
	var groups []group
	for _, idx := range buckets {
		if len(idx) < 2 {
			continue
		}
		groups = groups[:0]
		for _, i := range idx {
			p := at(i)
			f := flow{p.Src, p.Dst, p.Proto}
			t := p.Time - opt.Offsets[p.Capture]
			found := false
			for g := range groups {
				if groups[g].f == f {
					groups[g].count++
					groups[g].ttl = max(groups[g].ttl, p.TTL)
					groups[g].time = min(groups[g].time, t)
					found = true
					break
				}
			}
			if !found {
				groups = append(groups, group{f, 1, p.TTL, t, i})
			}
			if len(groups) > opt.MaxGroups {
				break
			}
		}
		if len(groups) > opt.MaxGroups {
			crowded++
			continue
		}
		for a := 0; a < len(groups); a++ {
			for b := a + 1; b < len(groups); b++ {
				// 2. Orient: higher TTL, else earlier, is before.
				bef, aft := groups[a], groups[b]
				if aft.ttl > bef.ttl || (aft.ttl == bef.ttl && aft.time < bef.time) {
					bef, aft = aft, bef
				}
				// 3. The flow's original direction.
				fp := flowPair{bef.f, aft.f}
				if o, ok := orig[convOf(at(bef.sample))]; ok && o.ep != bef.f.src {
					fp = flowPair{aft.f.reverse(), bef.f.reverse()}
				}
				matches[fp] += min(bef.count, aft.count)
			}
		}
	}
	if crowded > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d packet fingerprints shared by more than %d address pairs were ignored as non-discriminating", crowded, opt.MaxGroups))
	}

	// 4. Consistency: keep the dominant pairing in both directions.
	bestAfter := make(map[flow]flowPair)
	bestBefore := make(map[flow]flowPair)
	better := func(cur flowPair, curOK bool, cand flowPair) bool {
		if !curOK {
			return true
		}
		if matches[cand] != matches[cur] {
			return matches[cand] > matches[cur]
		}
		return pairLess(cand, cur)
	}
	for fp := range matches {
		if cur, ok := bestAfter[fp.before]; better(cur, ok, fp) {
			bestAfter[fp.before] = fp
		}
		if cur, ok := bestBefore[fp.after]; better(cur, ok, fp) {
			bestBefore[fp.after] = fp
		}
	}
	accidental := 0
	var accepted []flowPair
	for fp, n := range matches {
		if bestAfter[fp.before] == fp && bestBefore[fp.after] == fp {
			accepted = append(accepted, fp)
		} else {
			accidental += n
		}
	}
	sort.Slice(accepted, func(i, j int) bool { return pairLess(accepted[i], accepted[j]) })

	// 5. Classify.
	type obs struct {
		before, after netip.AddrPort
		flow          flow
		packets       int
		pair          flowPair
	}
	var dnat, snat []obs
	for _, fp := range accepted {
		n := matches[fp]
		if fp.before.dst != fp.after.dst {
			dnat = append(dnat, obs{fp.before.dst, fp.after.dst, fp.before, n, fp})
		}
		if fp.before.src != fp.after.src {
			snat = append(snat, obs{fp.before.src, fp.after.src, fp.before, n, fp})
		}
	}

	// 6. Aggregate into rules.
	type ruleKey struct {
		kind          string
		proto         uint8
		before, after netip.Addr
	}
	type portPair struct{ before, after uint16 }
	type ruleAcc struct {
		ports   map[portPair]*[2]int // flows, packets
		flows   map[flow]bool
		pairs   []flowPair
		packets int
	}
	rules := make(map[ruleKey]*ruleAcc)
	var keys []ruleKey
	for _, set := range []struct {
		kind string
		obs  []obs
	}{{"dnat", dnat}, {"snat", snat}} {
		for _, o := range set.obs {
			k := ruleKey{set.kind, o.flow.proto, o.before.Addr(), o.after.Addr()}
			r := rules[k]
			if r == nil {
				r = &ruleAcc{ports: map[portPair]*[2]int{}, flows: map[flow]bool{}}
				rules[k] = r
				keys = append(keys, k)
			}
			pp := portPair{o.before.Port(), o.after.Port()}
			if r.ports[pp] == nil {
				r.ports[pp] = &[2]int{}
			}
			r.ports[pp][0]++
			r.ports[pp][1] += o.packets
			r.flows[o.flow] = true
			r.pairs = append(r.pairs, o.pair)
			r.packets += o.packets
		}
	}
	// SNAT sources sharing one translated address need per-port rules.
	shared := make(map[ruleKey]int)
	for _, k := range keys {
		if k.kind == "snat" {
			shared[ruleKey{"snat", k.proto, netip.Addr{}, k.after}]++
		}
	}
	dnatTargets := make(map[string]int)
	kept := make(map[flowPair]bool)
	var rejected []flowPair
	for _, k := range keys {
		r := rules[k]
		proto := "tcp"
		need := opt.MinTCP
		if k.proto == ProtoUDP {
			proto, need = "udp", opt.MinUDP
		}
		if r.packets < need {
			rejected = append(rejected, r.pairs...)
			continue
		}
		for _, fp := range r.pairs {
			kept[fp] = true
		}
		allKept := true
		for pp := range r.ports {
			if pp.before != pp.after {
				allKept = false
			}
		}
		wildcard := allKept && (k.kind == "snat" || len(r.ports) > 1)
		if k.kind == "snat" && shared[ruleKey{"snat", k.proto, netip.Addr{}, k.after}] > 1 {
			wildcard = false
		}
		if wildcard {
			m.Translations = append(m.Translations, Translation{k.kind,
				joinEndpoint(k.before, "*"), joinEndpoint(k.after, "*"), proto, len(r.flows), r.packets})
			continue
		}
		for pp, c := range r.ports {
			t := Translation{k.kind, joinEndpoint(k.before, strconv.Itoa(int(pp.before))),
				joinEndpoint(k.after, strconv.Itoa(int(pp.after))), proto, c[0], c[1]}
			if k.kind == "dnat" {
				dnatTargets[proto+" "+t.Before]++
			}
			m.Translations = append(m.Translations, t)
		}
	}
	for _, fp := range rejected {
		if !kept[fp] {
			accidental += matches[fp]
			kept[fp] = true // count once
		}
	}
	m.sort()
	for _, t := range m.Translations {
		if t.Kind == "dnat" && dnatTargets[t.Proto+" "+t.Before] > 1 {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s %s is translated to several servers (load balancing); it canonicalises to %s",
				t.Proto, t.Before, m.CanonicalProto(t.Proto, t.Before)))
			dnatTargets[t.Proto+" "+t.Before] = 0
		}
	}
	if accidental > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d packet matches across different addresses were too rare or inconsistent to be translation, and were ignored", accidental))
	}
	return m
}

func pairLess(a, b flowPair) bool {
	for _, c := range [...]int{
		a.before.src.Compare(b.before.src), a.before.dst.Compare(b.before.dst),
		a.after.src.Compare(b.after.src), a.after.dst.Compare(b.after.dst),
		int(a.before.proto) - int(b.before.proto),
	} {
		if c != 0 {
			return c < 0
		}
	}
	return false
}
