package reconcile

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

// untracedPeersSet generates logs of two proxies that talk to untraced
// peers with colliding sizes, next to a client reaching a server through a
// real translation, over span:
//
//   - proxy pa (10.0.0.1) connects to 3 untraced origins (198.51.100.1-3:80)
//     every 50 ms; 4 untraced clients (10.16.0.1-4) connect to proxy pb
//     (10.0.0.2:3128) every 50 ms; first messages of 300 or 301 bytes up,
//     2000 or 2001 down: most lonely ends agree with many of the other
//     role within the window, causality included (the proxies answer in
//     1 ms, the origins in 20–80 ms);
//   - client cl (10.0.1.1) connects to the virtual address 10.0.9.9:80
//     every 500 ms, which DNAT delivers to server sv (10.0.0.3:8080) from
//     the masquerade address 10.0.5.1 (ports kept), with the same sizes;
//   - pb's clock runs 2 s ahead, sv's 1 s behind; with linked, pa, pb, cl
//     and sv also talk directly both ways now and then, so that step 0
//     relates all four clocks.
//
// Sizes are drawn from 100 values each way: today's step 6 found 125
// translations in it (with linked), nearly all by chance.
func untracedPeersSet(seed uint64, span time.Duration, linked bool) []Source {
	r := rand.New(rand.NewPCG(seed, 2))
	const t0 = int64(1_700_000_000_000_000_000)
	proc := func(host string, pid int32) *libsockcap.Process {
		return &libsockcap.Process{Host: host, Node: host, Exe: "/usr/bin/" + host, Pid: pid, BootID: host, File: host + ".sclog"}
	}
	pa, pb, cl, sv := proc("pa", 10), proc("pb", 20), proc("cl", 30), proc("sv", 40)
	skew := map[*libsockcap.Process]int64{pb: int64(2 * time.Second), sv: -int64(time.Second)}
	evs := map[*libsockcap.Process][]libsockcap.Event{}
	fds := map[*libsockcap.Process]int32{}
	ms := int64(time.Millisecond)
	ep := func(s string) libsockcap.Endpoint { return libsockcap.Endpoint{Addr: netip.MustParseAddrPort(s)} }
	// end logs one end of a connection: open at t (true time), its
	// first send of n at ts and first receive of rn at tr (0: none),
	// close at tc.
	end := func(p *libsockcap.Process, op libsockcap.Op, local, remote libsockcap.Endpoint, t, ts, n, tr, rn, tc int64) {
		fds[p]++
		fd := 3 + fds[p]%500
		at := func(t int64) int64 { return t + skew[p] }
		e := func(t int64, op libsockcap.Op, b int64) libsockcap.Event {
			return libsockcap.Event{Proc: p, Time: at(t), Op: op, Fd: fd, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1,
				Local: local, Remote: remote, Bytes: b, Ret: b}
		}
		evs[p] = append(evs[p], e(t, op, 0))
		if n > 0 {
			evs[p] = append(evs[p], e(ts, libsockcap.OpSend, n))
		}
		if rn > 0 {
			evs[p] = append(evs[p], e(tr, libsockcap.OpRecv, rn))
		}
		evs[p] = append(evs[p], e(tc, libsockcap.OpClose, 0))
	}
	// conn logs a connection whose both ends are traced (or only the
	// client's, srv nil; or only the server's, cli nil): request at t+1 ms,
	// received after the delay d, answered after turn.
	port := 20000
	conn := func(cli, srv *libsockcap.Process, cliLocal, cliRemote, srvLocal, srvRemote libsockcap.Endpoint, t, d, turn, up, down int64) {
		req := t + ms
		ans := req + d + turn
		if cli != nil {
			end(cli, libsockcap.OpConnect, cliLocal, cliRemote, t, req, up, ans+d, down, ans+d+ms)
		}
		if srv != nil {
			end(srv, libsockcap.OpAccept, srvLocal, srvRemote, t+d, ans, down, req+d, up, ans+d+ms)
		}
	}
	next := func(ip string) libsockcap.Endpoint {
		port++
		return ep(fmt.Sprintf("%s:%d", ip, 20000+port%40000))
	}
	sizes := func() (int64, int64) { return 300 + r.Int64N(100), 2000 + r.Int64N(100) }
	for t := t0; t < t0+int64(span); t += 50 * ms {
		// pa → an untraced origin, 20–80 ms away.
		up, down := sizes()
		origin := ep(fmt.Sprintf("198.51.100.%d:80", 1+r.IntN(3)))
		conn(pa, nil, next("10.0.0.1"), origin, origin, libsockcap.Endpoint{}, t+r.Int64N(50*ms), 10*ms+r.Int64N(30*ms), ms, up, down)
		// An untraced client → pb.
		up, down = sizes()
		client := next(fmt.Sprintf("10.16.0.%d", 1+r.IntN(4)))
		conn(nil, pb, libsockcap.Endpoint{}, libsockcap.Endpoint{}, ep("10.0.0.2:3128"), client, t+r.Int64N(50*ms), 5*ms, ms, up, down)
	}
	for t := t0; t < t0+int64(span); t += 500 * ms {
		// cl → 10.0.9.9:80, DNAT to sv, masquerade keeping the port.
		up, down := sizes()
		local := next("10.0.1.1")
		snat := libsockcap.Endpoint{Addr: netip.AddrPortFrom(netip.MustParseAddr("10.0.5.1"), local.Addr.Port())}
		conn(cl, sv, local, ep("10.0.9.9:80"), ep("10.0.0.3:8080"), snat, t+r.Int64N(500*ms), 2*ms, ms, up, down)
	}
	for t := t0; linked && t < t0+int64(span); t += 2 * time.Second.Nanoseconds() {
		// Direct connections: step 0's samples.
		l := next("10.0.0.1")
		conn(pa, pb, l, ep("10.0.0.2:3128"), ep("10.0.0.2:3128"), l, t+7*ms, 3*ms, ms, 10, 20)
		l = next("10.0.1.1")
		conn(cl, pa, l, ep("10.0.0.1:3128"), ep("10.0.0.1:3128"), l, t+9*ms, 3*ms, ms, 10, 20)
		l = next("10.0.0.2")
		conn(pb, pa, l, ep("10.0.0.1:3128"), ep("10.0.0.1:3128"), l, t+13*ms, 3*ms, ms, 10, 20)
		l = next("10.0.0.1")
		conn(pa, cl, l, ep("10.0.1.1:3128"), ep("10.0.1.1:3128"), l, t+15*ms, 3*ms, ms, 10, 20)
		l = next("10.0.0.3")
		conn(sv, pa, l, ep("10.0.0.1:3128"), ep("10.0.0.1:3128"), l, t+17*ms, 3*ms, ms, 10, 20)
		l = next("10.0.0.1")
		conn(pa, sv, l, ep("10.0.0.3:8080"), ep("10.0.0.3:8080"), l, t+11*ms, 3*ms, ms, 10, 20)
	}
	var srcs []Source
	for _, p := range []*libsockcap.Process{pa, pb, cl, sv} {
		slices.SortStableFunc(evs[p], func(a, b libsockcap.Event) int {
			return int(min(max(a.Time-b.Time, -1), 1))
		})
		srcs = append(srcs, EventSource(p, evs[p]))
	}
	return srcs
}

// TestNATUntracedPeers: on a set of untraced clients and origins whose first
// sizes collide (untracedPeersSet), step 6 reports no translation but the
// real one, pairs every flow through it, and leaves every other flow as
// --no-nat-detect does. With clocks step 0 cannot relate, timing cannot
// help in the set's first window, before any connection was declared
// untraced (a flow of it may still be paired by chance: doc.go, step 6);
// from the second window on, the same holds.
func TestNATUntracedPeers(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("linked/seed=%d", seed), func(t *testing.T) {
			checkUntracedPeers(t, seed, true, 0)
		})
		t.Run(fmt.Sprintf("unlinked/seed=%d", seed), func(t *testing.T) {
			checkUntracedPeers(t, seed, false, 5*time.Second)
		})
	}
}

// checkUntracedPeers reconciles untracedPeersSet(seed, linked) with window
// w (0: the default) and checks messages after the first two windows when
// not linked, all of them when linked.
func checkUntracedPeers(t *testing.T, seed uint64, linked bool, w time.Duration) {
	const t0 = int64(1_700_000_000_000_000_000)
	from := t0 - int64(time.Hour) // every message
	if !linked {
		from = t0 + 2*int64(w)
	}
	tr, err := ReconcileSources(untracedPeersSet(seed, 60*time.Second, linked), Options{Window: w})
	if err != nil {
		t.Fatal(err)
	}
	var nat []string
	for _, w := range tr.Warnings {
		if strings.HasPrefix(w, "nat: ") {
			nat = append(nat, w)
		}
	}
	// The real rules, learnt from the flows of the first window (later
	// ones are keyed by them): first.
	wantNAT := []string{"nat: dnat tcp 10.0.9.9:80 -> 10.0.0.3:8080 (", "nat: snat tcp 10.0.1.1:* -> 10.0.5.1:* ("}
	if len(nat) < 2 || !strings.HasPrefix(nat[0], wantNAT[0]) || !strings.HasPrefix(nat[1], wantNAT[1]) || linked && len(nat) != 2 {
		t.Errorf("translations reported (%d):\n%s\nwant\n%s", len(nat), strings.Join(nat[:min(len(nat), 20)], "\n"), strings.Join(wantNAT, "N flows)\n")+"N flows)")
	}
	// Every message of the translated flows, with both times.
	through := 0
	for _, m := range tr.Messages {
		src, dst := tr.NodeName(m.Src), tr.NodeName(m.Dst)
		if m.Time() < from || !(src == "cl" && dst == "sv" || src == "sv" && dst == "cl") {
			continue
		}
		through++
		if m.Send == trace.Unknown || m.Recv == trace.Unknown {
			t.Errorf("translated flow's message %s→%s %d: send %d recv %d", src, dst, m.Bytes, m.Send, m.Recv)
		}
	}
	if want := 240; linked && through != want {
		t.Errorf("%d messages between cl and sv, want %d", through, want)
	}
	// The rest is what reconciling without step 6 gives.
	off, err := ReconcileSources(untracedPeersSet(seed, 60*time.Second, linked), Options{Window: w, DisableNATDetection: true})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := otherMessages(tr, from), otherMessages(off, from); a != b {
		t.Errorf("messages not through the translation differ from --no-nat-detect's:\n%s", firstDiff(a, b))
	}
}

// otherMessages: the messages from time from on (times, nodes, endpoints,
// size) that do not involve the translated flows' nodes, sorted.
func otherMessages(tr *trace.Trace, from int64) string {
	var lines []string
	for i, m := range tr.Messages {
		skip := m.Time() < from
		for _, n := range []string{tr.NodeName(m.Src), tr.NodeName(m.Dst)} {
			if n == "cl" || n == "sv" || n == "10.0.9.9" || n == "10.0.5.1" {
				skip = true
			}
		}
		if skip {
			continue
		}
		f := strings.Fields(string(trace.AppendTextLine(nil, tr, i)))
		lines = append(lines, strings.Join(f[:7], " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(la), len(lb))
}

// TestClockRelBounds: the intervals step 0 gives for its offsets (clockRel)
// hold the true offsets of the offset scenario (handshakes both ways
// between A and B, one way between C and B and with D by datagrams), and
// are tight where samples of both directions exist.
func TestClockRelBounds(t *testing.T) {
	min := int64(time.Minute)
	srcs, _ := offsetScenario(3*min, 2*min, -4*min, 5)
	rel, _ := estimateClocks(srcs, Options{})
	truth := []int64{0, 3 * min, -2 * min, -4 * min} // as TestEstimateOffsets
	for i := range truth {
		root := rel.tree[i]
		if root != rel.tree[0] {
			t.Fatalf("source %d in tree %d, source 0 in %d: every source is linked", i, root, rel.tree[0])
		}
		// The true offset less the estimate, both against the root.
		e := (truth[i] - truth[root]) - (rel.off[i] - rel.off[root])
		if e < rel.lo[i] || e > rel.hi[i] {
			t.Errorf("source %d: true offset less estimate %d ns, outside [%d, %d]", i, e, rel.lo[i], rel.hi[i])
		}
		if w := rel.hi[i] - rel.lo[i]; w > int64(clockNear)+int64(time.Millisecond) {
			t.Errorf("source %d: interval %d ns wide", i, w)
		}
	}
	// A and B exchange handshakes both ways: their relation is within
	// the handshake delays (100-150 µs), not clockNear.
	a, b := int32(0), int32(1)
	if w := (rel.hi[b] - rel.lo[a]) - (rel.lo[b] - rel.hi[a]); w > int64(time.Millisecond) {
		t.Errorf("A-B: uncertainty %d ns, want under 1 ms", w)
	}
	// No estimate: sources of one host share a clock, others are unrelated.
	one := sameHostClocks([]string{"h1", "h2", "h1", ""})
	if !one.related(0, 2) || one.related(0, 1) || one.related(3, 3) != true || one.related(1, 3) {
		t.Errorf("same-host relation: tree %v", one.tree)
	}
}

// TestPeerTablePrune: entries idle for peerRecent are dropped once the
// table has grown, and dropping them changes no answer.
func TestPeerTablePrune(t *testing.T) {
	m := &matcher{logAddr: map[netip.Addr]string{}}
	cli := func(i int) *end {
		return &end{role: RoleClient, remote: libsockcap.Endpoint{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 80)}}
	}
	// 5000 destinations, 3 lonely connections each, at time 0: all
	// untraced peers.
	for i := range 5000 {
		for range peerFlows {
			m.peers.stat(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 80, true, true).add(m.now, false)
		}
	}
	if !m.untracedPeer(cli(7)) {
		t.Fatal("3 lonely connections: not an untraced peer")
	}
	// Much later, other destinations: the old entries go.
	m.now = 2 * peerRecent
	for i := range 5000 {
		e := &end{role: RoleServer, remote: libsockcap.Endpoint{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 16, byte(i >> 8), byte(i)}), 40000)}}
		c := &conn{ends: [2]*end{e}}
		e.runs = []run{{n: 300, done: true}}
		m.noteLonely(c)
	}
	if n := len(m.peers.v4); n > 5000+peerFlows {
		t.Errorf("%d entries left, want the 5000 recent ones", n)
	}
	if m.untracedPeer(cli(7)) {
		t.Error("an idle entry still counts")
	}
	// A translation through an address outnumbers nothing: 3 lonely
	// connections and 3 translations are no untraced peer, a fourth
	// lonely one makes it one.
	a := netip.MustParseAddr("203.0.113.9")
	st := m.peers.stat(a, 443, true, true)
	for range 3 {
		st.add(m.now, false)
		st.add(m.now, true)
	}
	e := &end{role: RoleClient, remote: libsockcap.Endpoint{Addr: netip.AddrPortFrom(a, 443)}}
	if m.untracedPeer(e) {
		t.Error("as many translations as lonely connections: an untraced peer")
	}
	st.add(m.now, false)
	if !m.untracedPeer(e) {
		t.Error("more lonely connections than translations: not an untraced peer")
	}
	m.logAddr[a] = "h"
	if m.untracedPeer(e) {
		t.Error("a traced host's address: an untraced peer")
	}
}

// TestLogCover: the peers of the logs' unpaired connections, as step 6's
// table keeps them (destinations with their port, clients without, IPv4
// packed in a key), come back as plain addresses; coverage is by address or
// host name.
func TestLogCover(t *testing.T) {
	m := &matcher{logAddr: map[netip.Addr]string{netip.MustParseAddr("10.0.0.1"): "c"}, logged: map[string]bool{"c": true}}
	peers := []netip.Addr{netip.MustParseAddr("10.200.3.2"), netip.MustParseAddr("255.1.0.254"), netip.MustParseAddr("2001:db8::7")}
	m.peers.stat(peers[0], 9000, true, true).add(0, false)
	m.peers.stat(peers[1], 0, false, true).add(0, false)
	m.peers.stat(peers[2], 443, true, true).add(0, false)
	lc := newLogCover(m)
	if len(lc.peers) != len(peers) {
		t.Errorf("%d peers, want %d: %v", len(lc.peers), len(peers), lc.peers)
	}
	for _, a := range peers {
		if !lc.peers[a] {
			t.Errorf("peer %v lost: %v", a, lc.peers)
		}
	}
	if !lc.covers(netip.MustParseAddr("10.0.0.1"), "x") || !lc.covers(netip.MustParseAddr("10.0.0.9"), "c") || lc.covers(peers[0], "s2") {
		t.Error("coverage by address or host name wrong")
	}
	var none *logCover
	if none.covers(peers[0], "c") {
		t.Error("no logs cover something")
	}
	for ttl, want := range map[uint8]bool{64: true, 128: true, 255: true, 63: false, 127: false, 1: false} {
		if initialTTL(ttl) != want {
			t.Errorf("initialTTL(%d) = %v", ttl, !want)
		}
	}
}
