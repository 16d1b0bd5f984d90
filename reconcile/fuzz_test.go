package reconcile

import (
	"net/netip"
	"testing"

	"wap5/libsockcap"
)

// eventsFromBytes decodes fuzz input into the events of up to three
// processes: every 8 bytes make one event (process, op, fd, proto/type,
// endpoints, size, time step), so the matcher sees arbitrary orders,
// sizes, reuses, forks and NATs.
func eventsFromBytes(data []byte) []Source {
	procs := []*libsockcap.Process{
		{Host: "h1", Node: "h1", Exe: "/bin/a", Pid: 1, File: "a"},
		{Host: "h2", Node: "h2", Exe: "/bin/b", Pid: 2, File: "b"},
		{Host: "h1", Node: "h1", Exe: "/bin/c", Pid: 3, File: "c"},
	}
	addrs := []libsockcap.Endpoint{
		{Addr: netip.MustParseAddrPort("10.0.0.1:40000")},
		{Addr: netip.MustParseAddrPort("10.0.0.2:80")},
		{Addr: netip.MustParseAddrPort("10.0.9.9:80")},
		{Addr: netip.MustParseAddrPort("0.0.0.0:53")},
		{Addr: netip.MustParseAddrPort("127.0.0.1:6379")},
		{Unix: true, Path: "/run/s"},
		{Unix: true, Inode: 7},
		{},
	}
	ops := []libsockcap.Op{libsockcap.OpConnect, libsockcap.OpAccept, libsockcap.OpSend, libsockcap.OpRecv,
		libsockcap.OpSend, libsockcap.OpRecv, libsockcap.OpClose, libsockcap.OpDup, libsockcap.OpSocketpair,
		libsockcap.OpExit, libsockcap.OpGap, libsockcap.OpSocket, libsockcap.OpFork}
	events := make([][]libsockcap.Event, len(procs))
	times := make([]int64, len(procs))
	for len(data) >= 8 {
		b := data[:8]
		data = data[8:]
		p := int(b[0]) % len(procs)
		times[p] += int64(b[7]) * 1e6
		ev := libsockcap.Event{Proc: procs[p], Time: times[p], Op: ops[int(b[1])%len(ops)],
			Fd: int32(b[2] % 6), Fd2: int32(b[2]/6%6) - 1, Proto: libsockcap.Proto(b[3] % 4),
			SoType: int32(b[3] / 4 % 3), Local: addrs[int(b[4])%len(addrs)], Remote: addrs[int(b[4]/8)%len(addrs)],
			Bytes: int64(b[5]) * int64(b[6]%4+1), Sum: uint32(b[6]), Tid: int32(b[7] % 3)} // tid 0 = unknown
		ev.Ret = ev.Bytes
		if ev.Op == libsockcap.OpFork {
			ev.Child = int32(b[5] % 4) // 1..3: a logged process (same host or not), 0: none
		}
		if b[6]&0x80 != 0 {
			ev.Ret, ev.Errno = -1, 11
		}
		events[p] = append(events[p], ev)
	}
	var srcs []Source
	for i, p := range procs {
		srcs = append(srcs, EventSource(p, events[i]))
	}
	return srcs
}

// FuzzReconcileEvents: any sequence of socket events reconciles without a
// panic into a valid trace, in canonical order with its tables numbered by
// first use (without aggregation, which renames after).
func FuzzReconcileEvents(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 8, 0, 0, 1, 1, 1, 2, 1, 1, 0, 0, 1, 0, 2, 1, 1, 0, 10, 0, 1, 1, 3, 2, 1, 1, 10, 0, 1})
	f.Add([]byte{0, 2, 1, 2, 3, 40, 7, 1, 1, 3, 1, 2, 3, 40, 7, 1, 1, 3, 1, 2, 3, 40, 7, 1})
	f.Add([]byte{0, 8, 6, 3, 54, 5, 0, 1, 0, 2, 1, 3, 54, 5, 0, 1, 2, 3, 2, 3, 54, 5, 0, 1})
	// A fork of pid 3 (same host) after an accept, the parent's close, the
	// child's use and exit.
	f.Add([]byte{0, 1, 1, 1, 8, 0, 0, 1, 0, 12, 0, 0, 0, 3, 0, 1, 0, 6, 1, 1, 0, 0, 0, 1,
		2, 3, 1, 1, 8, 9, 0, 1, 2, 9, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8*150 {
			return
		}
		for _, opts := range []Options{{}, {Granularity: ByProcess, AggregateClients: true, RecvAt: RecvLast, SplitGap: 1e6, Window: 1e8}} {
			tr, err := ReconcileSources(eventsFromBytes(data), opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Fatalf("invalid trace: %v", err)
			}
			if !opts.AggregateClients {
				checkCanonical(t, "fuzz", tr)
			}
		}
	})
}

// FuzzNATRule: any translation rule loads or is refused, never panics, and
// a loaded rule canonicalises without panicking.
func FuzzNATRule(f *testing.F) {
	f.Add("dnat", "10.0.9.9:80", "10.0.0.2:8080")
	f.Add("snat", "10.0.0.1:*", "10.0.5.1:*")
	f.Add("dnat", "[fe80::1]:53", "[fe80::2]:*")
	f.Add("snat", ":*", "x")
	f.Fuzz(func(t *testing.T, kind, before, after string) {
		var n natTable
		if err := n.addRule(Translation{Kind: kind, Before: before, After: after, Proto: "tcp"}); err != nil {
			return
		}
		for _, s := range []string{"10.0.9.9:80", "10.0.5.1:1", "[fe80::2]:53"} {
			n.canon(netip.MustParseAddrPort(s))
		}
	})
}
