package reconcile

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wap5/libsockcap"
)

// bruteForcePair is step 6's search as a scan of every lonely connection of
// the wanted role in creation order (what pairTranslated did before the
// signature index): the reference the index must agree with.
func bruteForcePair(m *matcher, c *conn) *conn {
	var e *end
	for _, x := range c.ends {
		if x != nil {
			e = x
		}
	}
	sig := signature(e)
	want := RoleServer
	if e.role == RoleServer {
		want = RoleClient
	}
	seen := map[*conn]bool{}
	var best *conn
	var bestDT int64
	m.conns.each(func(list []*conn) {
		for _, o := range list {
			if seen[o] {
				continue
			}
			seen[o] = true
			if o.lrole != want || o.gone || o.resolved || o == c || o.key.proto != c.key.proto {
				continue
			}
			var oe *end
			for _, x := range o.ends {
				if x != nil {
					oe = x
				}
			}
			if oe == nil || oe.role == RoleUnknown || oe.role == e.role || oe.role == RolePair {
				continue
			}
			dt := o.first - c.first
			if dt < 0 {
				dt = -dt
			}
			if dt > m.window || !sig.agrees(signature(oe)) || relay(e.obs, oe.obs) || !causal(e, oe) || !m.timely(c, e, o, oe) || m.untracedPeer(oe) {
				continue
			}
			if best == nil || dt < bestDT || dt == bestDT && o.serial < best.serial {
				best, bestDT = o, dt
			}
		}
	})
	return best
}

// crossCheck makes every step-6 search of the test compare its result with
// bruteForcePair's; it returns the number of searches and of disagreements.
func crossCheck(t *testing.T) (searches, bad *int) {
	searches, bad = new(int), new(int)
	natCrossCheck = func(m *matcher, c, best *conn) {
		*searches++
		if want := bruteForcePair(m, c); want != best {
			*bad++
			if *bad <= 5 {
				t.Errorf("connection %d: index chose %v, a full scan %v", c.serial, serialOf(best), serialOf(want))
			}
		}
	}
	t.Cleanup(func() { natCrossCheck = nil })
	return searches, bad
}

func serialOf(c *conn) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprint(c.serial)
}

// loopbackFlows generates n TCP connections between a client process and a
// server process of one machine traced under different node names, with no
// network namespace in their headers (older logs): their loopback addresses
// are scoped apart, so every connection is paired by step 6. Request and
// response sizes are drawn from sizes (few values: many candidates share a
// signature), connections overlap (conc at a time), and with drop > 0 a
// fraction of them has the response missing, or the server's read of the
// request. coarse > 0 rounds connection times to it (ties in time).
func loopbackFlows(n, conc int, sizes []int64, drop float64, seed uint64) []Source {
	return loopbackFlowsCoarse(n, conc, sizes, drop, 0, seed)
}

func loopbackFlowsCoarse(n, conc int, sizes []int64, drop float64, coarse int64, seed uint64) []Source {
	r := rand.New(rand.NewPCG(seed, 1))
	cp := &libsockcap.Process{Host: "box", Node: "front", Exe: "/usr/sbin/nginx", Pid: 10, BootID: "k1", File: "front.sclog"}
	sp := &libsockcap.Process{Host: "box", Node: "app", Exe: "/usr/bin/python3", Pid: 11, BootID: "k1", File: "app.sclog"}
	var ce, se []libsockcap.Event
	srv := netip.MustParseAddrPort("127.0.0.1:8000")
	const t0 = int64(1_700_000_000_000_000_000)
	gap := int64(time.Millisecond) / int64(conc)
	for i := 0; i < n; i++ {
		at := t0 + int64(i)*gap + r.Int64N(gap)
		if coarse > 0 {
			at -= at % coarse
		}
		cli := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(20000+i%40000))
		fd, sfd := int32(3+i%conc), int32(100+i%conc)
		lc, ls := libsockcap.Endpoint{Addr: cli}, libsockcap.Endpoint{Addr: srv}
		ev := func(p *libsockcap.Process, t int64, op libsockcap.Op, fd int32, l, rm libsockcap.Endpoint, b int64) libsockcap.Event {
			return libsockcap.Event{Proc: p, Time: t, Op: op, Fd: fd, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Local: l, Remote: rm, Bytes: b, Ret: b}
		}
		up, down := sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))]
		d := int64(r.IntN(200)) * 1000
		if coarse > 0 {
			d = 0
		}
		lost := drop > 0 && r.Float64() < drop
		noRead := lost && r.IntN(2) == 0
		ce = append(ce, ev(cp, at, libsockcap.OpConnect, fd, lc, ls, 0), ev(cp, at+10_000, libsockcap.OpSend, fd, lc, ls, up))
		se = append(se, ev(sp, at+20_000+d, libsockcap.OpAccept, sfd, ls, lc, 0))
		if !noRead {
			se = append(se, ev(sp, at+30_000+d, libsockcap.OpRecv, sfd, ls, lc, up))
		}
		if !lost || noRead {
			se = append(se, ev(sp, at+200_000+d, libsockcap.OpSend, sfd, ls, lc, down))
			ce = append(ce, ev(cp, at+210_000+d, libsockcap.OpRecv, fd, lc, ls, down))
		}
		ce = append(ce, ev(cp, at+400_000+d, libsockcap.OpClose, fd, lc, ls, 0))
		se = append(se, ev(sp, at+400_000+d, libsockcap.OpClose, sfd, ls, lc, 0))
	}
	sortEvents(ce)
	sortEvents(se)
	return []Source{EventSource(cp, ce), EventSource(sp, se)}
}

func sortEvents(ev []libsockcap.Event) {
	// Stable: one connection's events keep their order on equal times.
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].Time < ev[j-1].Time; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
}

// TestNATIndexMatchesFullScan: step 6 through the signature index chooses
// exactly what a scan of every lonely connection chooses, on generated
// loopback flows and on every scenario.
func TestNATIndexMatchesFullScan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		conc   int
		sizes  []int64
		drop   float64
		win    time.Duration
		coarse int64
	}{
		{name: "one-size", n: 400, conc: 4, sizes: []int64{120}},
		{name: "few-sizes", n: 600, conc: 8, sizes: []int64{100, 120, 300}},
		{name: "many-sizes", n: 600, conc: 16, sizes: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{name: "half-answered", n: 500, conc: 8, sizes: []int64{100, 300}, drop: 0.5},
		{name: "short-window", n: 500, conc: 32, sizes: []int64{100, 300}, drop: 0.2, win: 300 * time.Microsecond},
		{name: "ties", n: 500, conc: 16, sizes: []int64{100, 300}, drop: 0.3, coarse: 200_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			searches, bad := crossCheck(t)
			tr, err := ReconcileSources(loopbackFlowsCoarse(tc.n, tc.conc, tc.sizes, tc.drop, tc.coarse, 7), Options{Window: tc.win, SyncedClocks: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Fatal(err)
			}
			if *searches < tc.n/2 {
				t.Errorf("%d step-6 searches for %d connections", *searches, tc.n)
			}
			if *bad != 0 {
				t.Errorf("%d of %d searches disagree", *bad, *searches)
			}
		})
	}
	files, _ := filepath.Glob("testdata/scenarios/*.txtar")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc := parseTxtar(string(data))
			_, bad := crossCheck(t)
			if _, err := ReconcileSources(buildSources(t, sc.sections["events"]), parseOptions(t, sc.sections["options"])); err != nil {
				t.Fatal(err)
			}
			if *bad != 0 {
				t.Errorf("%d searches disagree", *bad)
			}
		})
	}
}

// TestNATIndexPairsLoopback: with one size everywhere and overlapping
// connections, every message is matched both ways (the closest in time wins,
// which may swap overlapping connections: only the times' presence is
// checked).
func TestNATIndexPairsLoopback(t *testing.T) {
	tr, err := ReconcileSources(loopbackFlows(300, 4, []int64{120}, 0, 3), Options{SyncedClocks: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 600 {
		t.Fatalf("%d messages, want 600", len(tr.Messages))
	}
	for i, m := range tr.Messages {
		if m.Send < 0 || m.Recv < 0 {
			t.Fatalf("message %d: send %d recv %d", i, m.Send, m.Recv)
		}
	}
}

// BenchmarkNATPairing reconciles loopback flows that all go through step 6
// (processes named as different nodes, logs without a network namespace),
// one request and one response each, requests and responses of 3 sizes;
// 8k and 80k connections (16k and 160k messages): the cost per message
// should stay flat.
func BenchmarkNATPairing(b *testing.B) {
	for _, n := range []int{8_000, 80_000} {
		b.Run(fmt.Sprintf("msgs=%d", 2*n), func(b *testing.B) {
			srcs := loopbackFlows(n, 8, []int64{100, 120, 300}, 0, 1)
			var evs [][]libsockcap.Event
			var procs []*libsockcap.Process
			for _, s := range srcs {
				ls := s.(*logSource)
				sl := ls.sc.(*sliceScanner)
				procs, evs = append(procs, sl.p), append(evs, sl.ev)
			}
			b.ResetTimer()
			var msgs int
			for i := 0; i < b.N; i++ {
				var in []Source
				for j := range procs {
					in = append(in, EventSource(procs[j], evs[j]))
				}
				tr, err := ReconcileSources(in, Options{SyncedClocks: true})
				if err != nil {
					b.Fatal(err)
				}
				msgs = len(tr.Messages)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(msgs), "ns/msg")
		})
	}
}
