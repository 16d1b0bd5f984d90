package reconcile

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

// offsetHost is one host of the offset scenario: its process's log and its
// clock's offset from true time.
type offsetHost struct {
	name string
	addr string
	off  int64
	proc *libsockcap.Process
	ev   []libsockcap.Event
	fd   int32
}

func (h *offsetHost) add(t int64, ev libsockcap.Event) {
	ev.Proc, ev.Time = h.proc, t+h.off
	if ev.Fd2 == 0 {
		ev.Fd2 = -1
	}
	h.ev = append(h.ev, ev)
}

func ep(s string) libsockcap.Endpoint {
	return libsockcap.Endpoint{Addr: netip.MustParseAddrPort(s)}
}

// wantMsgKey is a message as the scenario expects it: raw clock times.
type offsetMsg struct {
	send, recv int64
	src, dst   string
	bytes      int64
}

// offsetScenario: hosts A (true time), B (+offB), C (−offC) and D (+offD)
// exchange, every 15 s for rounds rounds: a TCP call A→B:80 and C→B:80, both
// from the same client port each round (port reuse), a TCP call B→A:8080
// (handshakes the other way), a UDP query A→C:53 with its answer, and a UDP
// query A→D:123 with its answer (D does nothing else: only datagrams tell
// its clock), all with the same contents every round (order matching).
// Returns the sources and every message the workload sent.
func offsetScenario(offB, offC, offD int64, rounds int) ([]Source, []offsetMsg) {
	const base = int64(1_700_000_000_000_000_000)
	hosts := map[string]*offsetHost{
		"A": {name: "hostA", addr: "10.0.0.1", off: 0},
		"B": {name: "hostB", addr: "10.0.0.2", off: offB},
		"C": {name: "hostC", addr: "10.0.0.3", off: -offC},
		"D": {name: "hostD", addr: "10.0.0.4", off: offD},
	}
	for k, h := range hosts {
		h.proc = &libsockcap.Process{Host: h.name, Node: h.name, Exe: "/usr/bin/p" + k, Pid: 100, File: h.name + ".sclog"}
		h.fd = 3
	}
	var want []offsetMsg
	us := int64(time.Microsecond)
	msg := func(t0 int64, from, to *offsetHost, delay, n int64) {
		want = append(want, offsetMsg{t0 + from.off, t0 + delay + to.off, from.name, to.name, n})
	}
	tcp := func(t int64, cl, sv *offsetHost, cport, sport string, req, resp int64) {
		c, s := cl.addr+":"+cport, sv.addr+":"+sport
		cfd, sfd := cl.fd, sv.fd+100
		cl.fd++
		sv.fd++
		cl.add(t, libsockcap.Event{Op: libsockcap.OpConnect, Fd: cfd, Proto: libsockcap.ProtoTCP, SoType: 1, Local: ep(c), Remote: ep(s)})
		sv.add(t+150*us, libsockcap.Event{Op: libsockcap.OpAccept, Fd: sfd, Proto: libsockcap.ProtoTCP, SoType: 1, Local: ep(s), Remote: ep(c)})
		cl.add(t+200*us, libsockcap.Event{Op: libsockcap.OpSend, Fd: cfd, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: req, Ret: req})
		sv.add(t+300*us, libsockcap.Event{Op: libsockcap.OpRecv, Fd: sfd, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: req, Ret: req})
		sv.add(t+900*us, libsockcap.Event{Op: libsockcap.OpSend, Fd: sfd, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: resp, Ret: resp})
		cl.add(t+1000*us, libsockcap.Event{Op: libsockcap.OpRecv, Fd: cfd, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: resp, Ret: resp})
		cl.add(t+1100*us, libsockcap.Event{Op: libsockcap.OpClose, Fd: cfd})
		sv.add(t+1200*us, libsockcap.Event{Op: libsockcap.OpClose, Fd: sfd})
		msg(t+200*us, cl, sv, 100*us, req)
		msg(t+900*us, sv, cl, 100*us, resp)
	}
	A, B, C, D := hosts["A"], hosts["B"], hosts["C"], hosts["D"]
	for r := 0; r < rounds; r++ {
		t := base + int64(r)*int64(15*time.Second)
		tcp(t, A, B, "40000", "80", 100, 2000)
		tcp(t+int64(time.Second), C, B, "41000", "80", 120, 3000)
		tcp(t+2*int64(time.Second), B, A, "42000", "8080", 140, 4000)
		// UDP: the same query and answer every round.
		t += 3 * int64(time.Second)
		a, c := ep("10.0.0.1:5000"), ep("10.0.0.3:53")
		A.add(t, libsockcap.Event{Op: libsockcap.OpSend, Fd: 50, Proto: libsockcap.ProtoUDP, SoType: 2, Local: a, Remote: c, Bytes: 40, Ret: 40, Sum: 77})
		C.add(t+200*us, libsockcap.Event{Op: libsockcap.OpRecv, Fd: 50, Proto: libsockcap.ProtoUDP, SoType: 2, Local: c, Remote: a, Bytes: 40, Ret: 40, Sum: 77})
		C.add(t+500*us, libsockcap.Event{Op: libsockcap.OpSend, Fd: 50, Proto: libsockcap.ProtoUDP, SoType: 2, Local: c, Remote: a, Bytes: 90, Ret: 90, Sum: 88})
		A.add(t+700*us, libsockcap.Event{Op: libsockcap.OpRecv, Fd: 50, Proto: libsockcap.ProtoUDP, SoType: 2, Local: a, Remote: c, Bytes: 90, Ret: 90, Sum: 88})
		msg(t, A, C, 200*us, 40)
		msg(t+500*us, C, A, 200*us, 90)
		t += 2 * int64(time.Second)
		d := ep("10.0.0.4:123")
		A.add(t, libsockcap.Event{Op: libsockcap.OpSend, Fd: 51, Proto: libsockcap.ProtoUDP, SoType: 2, Local: a, Remote: d, Bytes: 48, Ret: 48, Sum: 5})
		D.add(t+300*us, libsockcap.Event{Op: libsockcap.OpRecv, Fd: 60, Proto: libsockcap.ProtoUDP, SoType: 2, Local: d, Remote: a, Bytes: 48, Ret: 48, Sum: 5})
		D.add(t+400*us, libsockcap.Event{Op: libsockcap.OpSend, Fd: 60, Proto: libsockcap.ProtoUDP, SoType: 2, Local: d, Remote: a, Bytes: 48, Ret: 48, Sum: 6})
		A.add(t+700*us, libsockcap.Event{Op: libsockcap.OpRecv, Fd: 51, Proto: libsockcap.ProtoUDP, SoType: 2, Local: a, Remote: d, Bytes: 48, Ret: 48, Sum: 6})
		msg(t, A, D, 300*us, 48)
		msg(t+400*us, D, A, 300*us, 48)
	}
	var srcs []Source
	for _, k := range []string{"A", "B", "C", "D"} {
		h := hosts[k]
		sort.SliceStable(h.ev, func(i, j int) bool { return h.ev[i].Time < h.ev[j].Time })
		srcs = append(srcs, EventSource(h.proc, h.ev))
	}
	return srcs, want
}

func offsetLines(tr *trace.Trace) []string {
	var out []string
	for i := range tr.Messages {
		m := &tr.Messages[i]
		out = append(out, fmt.Sprintf("%d %s %d %s %d", m.Send, tr.NodeName(m.Src), m.Recv, tr.NodeName(m.Dst), m.Bytes))
	}
	slices.Sort(out)
	return out
}

// TestClockOffsets: hosts minutes apart are matched as if their clocks
// agreed (step 0), the messages keep the times their hosts recorded, calls
// pair with their returns, and reused ports and same-content datagrams still
// pair instance by instance.
func TestClockOffsets(t *testing.T) {
	min := int64(time.Minute)
	sec := int64(time.Second)
	for _, c := range []struct {
		name             string
		offB, offC, offD int64
		window           time.Duration
	}{
		{"3min", 3 * min, 3 * min, 3 * min, 0},
		{"3min-5s-window", 3 * min, 3 * min, -3 * min, 5 * time.Second},
		{"B-behind", -3 * min, -2 * min, 2 * min, 0},
		{"5s", 5 * sec, 5 * sec, 5 * sec, 5 * time.Second},
		{"synced", 0, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srcs, want := offsetScenario(c.offB, c.offC, c.offD, 12)
			tr, err := ReconcileSources(srcs, Options{Window: c.window})
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Fatal(err)
			}
			var wl []string
			for _, m := range want {
				wl = append(wl, fmt.Sprintf("%d %s %d %s %d", m.send, m.src, m.recv, m.dst, m.bytes))
			}
			slices.Sort(wl)
			got := offsetLines(tr)
			if strings.Join(got, "\n") != strings.Join(wl, "\n") {
				t.Fatalf("messages differ (%d, want %d)\n--- got\n%s\n--- want\n%s\nwarnings: %q", len(got), len(wl),
					strings.Join(got, "\n"), strings.Join(wl, "\n"), tr.Warnings)
			}
			calls, rets := 0, 0
			for i := range tr.Messages {
				switch tr.Messages[i].Kind {
				case trace.KindCall:
					calls++
				case trace.KindReturn:
					rets++
				}
			}
			if calls != 36 || rets != 36 {
				t.Errorf("%d calls, %d returns; want 36 each", calls, rets)
			}
			for _, w := range tr.Warnings {
				if !strings.HasPrefix(w, "clocks: ") {
					t.Errorf("unexpected warning %q", w)
				}
			}
		})
	}
}

// TestEstimateOffsets checks the estimates themselves: within the
// handshake delay of the true offsets.
func TestEstimateOffsets(t *testing.T) {
	min := int64(time.Minute)
	srcs, _ := offsetScenario(3*min, 2*min, -4*min, 5)
	off, warns := estimateOffsets(srcs, Options{})
	if len(off) != 4 {
		t.Fatalf("offsets %v", off)
	}
	want := []int64{0, 3 * min, -2 * min, -4 * min}
	for i := range want {
		if d := (off[i] - off[0]) - want[i]; d < -int64(time.Millisecond) || d > int64(time.Millisecond) {
			t.Errorf("source %d: offset %d, want %d (±1 ms)", i, off[i]-off[0], want[i])
		}
	}
	if len(warns) != 3 {
		t.Errorf("warnings %q, want one per shifted host", warns)
	}
	// One host: no pass at all.
	one, _ := offsetScenario(0, 0, 0, 1)
	for _, s := range one {
		s.(*logSource).obs.Host = "same"
	}
	if off, _ := estimateOffsets(one, Options{}); off != nil {
		t.Errorf("one host: offsets %v, want none", off)
	}
}

// BenchmarkClockOffsets: what step 0 costs on multi-host logs (the offset
// scenario, 10 messages and 3 connections per round, events in memory):
// reconciliation with and without the offset pass, on synchronised clocks
// so that both produce the same trace.
func BenchmarkClockOffsets(b *testing.B) {
	for _, v := range []struct {
		name string
		opts Options
	}{{"estimate", Options{}}, {"synced-clocks", Options{SyncedClocks: true}}} {
		b.Run(v.name, func(b *testing.B) {
			var n int
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				srcs, _ := offsetScenario(0, 0, 0, 20000)
				c0 := cpuTime()
				tr, err := ReconcileSources(srcs, v.opts)
				cpu += cpuTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				n = len(tr.Messages)
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "msgs/cpu-s")
		})
	}
}

// TestClockOffsetsMissingEnds: an early connect that never reaches the
// server (EINPROGRESS, then refused) on the reused client port, and an early
// lost datagram of the same content as all later ones, must not shift the
// pairing of every later instance and with it the offsets.
func TestClockOffsetsMissingEnds(t *testing.T) {
	min := int64(time.Minute)
	srcs, want := offsetScenario(3*min, 2*min, -3*min, 12)
	// Source 0 is host A (offset 0): a refused non-blocking connect to B:80
	// from the reused port, and a lost query to D, before round 0.
	a := srcs[0].(*logSource).sc.(*sliceScanner)
	t0 := a.ev[0].Time - int64(time.Second)
	extra := []libsockcap.Event{
		{Proc: a.p, Time: t0, Op: libsockcap.OpConnect, Fd: 90, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1,
			Local: ep("10.0.0.1:40000"), Remote: ep("10.0.0.2:80"), Ret: -1, Errno: 115},
		{Proc: a.p, Time: t0 + 1000, Op: libsockcap.OpClose, Fd: 90, Fd2: -1},
		{Proc: a.p, Time: t0 + 2000, Op: libsockcap.OpSend, Fd: 51, Fd2: -1, Proto: libsockcap.ProtoUDP, SoType: 2,
			Local: ep("10.0.0.1:5000"), Remote: ep("10.0.0.4:123"), Bytes: 48, Ret: 48, Sum: 5},
	}
	a.ev = append(extra, a.ev...)
	off, _ := estimateOffsets(srcs, Options{})
	wantOff := []int64{0, 3 * min, -2 * min, -3 * min}
	for i := range wantOff {
		if d := (off[i] - off[0]) - wantOff[i]; d < -int64(time.Millisecond) || d > int64(time.Millisecond) {
			t.Errorf("source %d: offset %.6f s, want %.6f s (±1 ms)", i, float64(off[i]-off[0])/1e9, float64(wantOff[i])/1e9)
		}
	}
	tr, err := ReconcileSources(srcs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Every message of the workload is there, with both times; the lost
	// datagram keeps "-".
	got := offsetLines(tr)
	var wl []string
	for _, m := range want {
		wl = append(wl, fmt.Sprintf("%d %s %d %s %d", m.send, m.src, m.recv, m.dst, m.bytes))
	}
	wl = append(wl, fmt.Sprintf("%d hostA %d hostD 48", t0+2000, trace.Unknown))
	slices.Sort(wl)
	if strings.Join(got, "\n") != strings.Join(wl, "\n") {
		t.Errorf("messages differ (%d, want %d)\n--- got\n%s\n--- want\n%s", len(got), len(wl), strings.Join(got, "\n"), strings.Join(wl, "\n"))
	}
}

// TestClockOffsetLoopbackNodes: two processes of one kernel named as
// different nodes (wap5 run --node) talk over loopback, one of them under
// libfaketime 3 minutes ahead; step 0 pairs their handshakes by kernel, so
// matching (step 6 joins the two loopback ends, which node names keep apart)
// sees them at the same corrected time.
func TestClockOffsetLoopbackNodes(t *testing.T) {
	const base = int64(1_700_000_000_000_000_000)
	off := int64(3 * time.Minute)
	cliP := &libsockcap.Process{Host: "cli", Node: "cli", Exe: "/usr/bin/python3", Pid: 10, BootID: "k1", File: "cli.sclog"}
	srvP := &libsockcap.Process{Host: "srv", Node: "srv", Exe: "/usr/bin/python3", Pid: 11, BootID: "k1", File: "srv.sclog"}
	c, s := ep("127.0.0.1:40000"), ep("127.0.0.1:5000")
	var ce, se []libsockcap.Event
	ms := int64(time.Millisecond)
	ce = append(ce, libsockcap.Event{Proc: cliP, Time: base + off, Op: libsockcap.OpConnect, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Local: c, Remote: s})
	se = append(se, libsockcap.Event{Proc: srvP, Time: base + ms/10, Op: libsockcap.OpAccept, Fd: 4, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Local: s, Remote: c})
	for i := int64(0); i < 5; i++ {
		t0 := base + (i+1)*10*ms
		ce = append(ce, libsockcap.Event{Proc: cliP, Time: t0 + off, Op: libsockcap.OpSend, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: 10, Ret: 10})
		se = append(se, libsockcap.Event{Proc: srvP, Time: t0 + ms/10, Op: libsockcap.OpRecv, Fd: 4, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: 10, Ret: 10})
		se = append(se, libsockcap.Event{Proc: srvP, Time: t0 + ms, Op: libsockcap.OpSend, Fd: 4, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: 20, Ret: 20})
		ce = append(ce, libsockcap.Event{Proc: cliP, Time: t0 + ms + ms/10 + off, Op: libsockcap.OpRecv, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: 20, Ret: 20})
	}
	tr, err := ReconcileSources([]Source{EventSource(cliP, ce), EventSource(srvP, se)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 10 {
		t.Fatalf("%d messages, want 10: %q", len(tr.Messages), offsetLines(tr))
	}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if m.Send == trace.Unknown || m.Recv == trace.Unknown || tr.Nodes[m.Src].Untraced || tr.Nodes[m.Dst].Untraced {
			t.Errorf("unmatched: %s", trace.AppendTextLine(nil, tr, i))
		}
	}
}

// TestClockEnough: step 0 stops reading once every source it reads is tied
// to the others by pairs with clockEnough samples, or by a shared host.
func TestClockEnough(t *testing.T) {
	many := make([]int64, clockEnough)
	half := make([]int64, clockEnough/2)
	for _, tc := range []struct {
		name    string
		hosts   []string
		idx     []int
		samples map[srcPair][]int64
		want    bool
	}{
		{"no samples", []string{"a", "b"}, []int{0, 1}, nil, false},
		{"one pair, enough", []string{"a", "b"}, []int{0, 1}, map[srcPair][]int64{{0, 1}: many}, true},
		{"both directions add up", []string{"a", "b"}, []int{0, 1}, map[srcPair][]int64{{0, 1}: half, {1, 0}: half}, true},
		{"too few", []string{"a", "b"}, []int{0, 1}, map[srcPair][]int64{{0, 1}: half}, false},
		{"third source untied", []string{"a", "b", "c"}, []int{0, 1, 2}, map[srcPair][]int64{{0, 1}: many}, false},
		{"third source on a tied host", []string{"a", "b", "b"}, []int{0, 1, 2}, map[srcPair][]int64{{0, 1}: many}, true},
		{"a source not read does not count", []string{"a", "b", "c"}, []int{0, 1}, map[srcPair][]int64{{1, 0}: many}, true},
	} {
		p := &clockPass{samples: map[srcPair]*[]int64{}}
		for k, v := range tc.samples {
			p.samples[k] = &v
		}
		if got := p.enough(len(tc.hosts), tc.hosts, tc.idx); got != tc.want {
			t.Errorf("%s: enough = %v, want %v", tc.name, got, tc.want)
		}
	}
}
