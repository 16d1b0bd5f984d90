package reconcile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wap5/libsockcap"
	"wap5/trace"
)

// TestPcapNATAppliesToLogs: the translations detected in the captures
// (PcapSet.NAT) canonicalise the logs' endpoints too. The client's log
// starts mid-connection (no connect: its end has no role, so step 6 cannot
// pair it by its first messages): only the captures' DNAT and masquerade
// rules name its peer, the VIP 10.201.1.100:80, as the real server end the
// server-side capture saw (10.201.2.2:8080, client seen as 10.201.2.1).
func TestPcapNATAppliesToLogs(t *testing.T) {
	a, b := sideCaptures(t, [2]string{cli, "10.201.1.100:80"}, [2]string{"10.201.2.1:40000", srv})
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "client-side.pcap"), filepath.Join(dir, "server-side.pcapng")
	if err := os.WriteFile(pa, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const t0 = 1700000000_000000000
	proc := &libsockcap.Process{Host: "client", Node: "client", Exe: "/usr/bin/curl", Pid: 7, File: "client.sclog"}
	local, vip := ep(cli), ep("10.201.1.100:80")
	evs := []libsockcap.Event{
		{Proc: proc, Time: t0 + 300_000, Op: libsockcap.OpSend, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Local: local, Remote: vip, Bytes: 100, Ret: 100},
		{Proc: proc, Time: t0 + 1_030_000, Op: libsockcap.OpRecv, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Local: local, Remote: vip, Bytes: 300, Ret: 300},
		{Proc: proc, Time: t0 + 2_000_000, Op: libsockcap.OpClose, Fd: 3, Fd2: -1},
	}
	tr, err := Reconcile(Inputs{Sources: []Source{EventSource(proc, evs)}, Pcaps: []string{pa, pb}, Hosts: names}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range tr.Messages {
		got = append(got, string(trace.AppendTextLine(nil, tr, i)))
	}
	// The server's sniffer is 2 s ahead (sideCaptures): its times show it.
	want := []string{
		"1700000000.000300000 client 10.201.1.2:40000 1700000002.000350000 server 10.201.2.2:8080 100 id=0",
		"1700000002.001000000 server 10.201.2.2:8080 1700000000.001030000 client 10.201.1.2:40000 300 id=1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages\n%s\nwant\n%s\nwarnings %q", strings.Join(got, "\n"), strings.Join(want, "\n"), tr.Warnings)
	}
	var nat []string
	for _, w := range tr.Warnings {
		if strings.HasPrefix(w, "nat: ") {
			nat = append(nat, w)
		}
	}
	wantNAT := []string{"nat: dnat tcp 10.201.1.100:80 -> 10.201.2.2:8080 (1 flows)", "nat: snat tcp 10.201.1.2:* -> 10.201.2.1:* (1 flows)"}
	if strings.Join(nat, "\n") != strings.Join(wantNAT, "\n") {
		t.Errorf("translations reported\n%s\nwant\n%s", strings.Join(nat, "\n"), strings.Join(wantNAT, "\n"))
	}
}

// TestClockOffsetLogsAndCaptures: a client's log whose clock is 3 minutes
// behind the sniffers' is matched with the server side a capture saw (step 0
// reads the captures too: each has its sniffer's clock); the times stay as
// recorded.
func TestClockOffsetLogsAndCaptures(t *testing.T) {
	a, b := sideCaptures(t, [2]string{cli, srv}, [2]string{cli, srv})
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "client-side.pcap"), filepath.Join(dir, "server-side.pcapng")
	if err := os.WriteFile(pa, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const t0 = 1700000000_000000000 - 180_000_000_000 // the log's clock: 3 min behind
	proc := &libsockcap.Process{Host: "client", Node: "client", Exe: "/usr/bin/curl", Pid: 7, File: "client.sclog"}
	local, remote := ep(cli), ep(srv)
	evs := []libsockcap.Event{
		{Proc: proc, Time: t0, Op: libsockcap.OpConnect, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Local: local, Remote: remote},
		{Proc: proc, Time: t0 + 300_000, Op: libsockcap.OpSend, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: 100, Ret: 100},
		{Proc: proc, Time: t0 + 1_030_000, Op: libsockcap.OpRecv, Fd: 3, Fd2: -1, Proto: libsockcap.ProtoTCP, SoType: 1, Bytes: 300, Ret: 300},
		{Proc: proc, Time: t0 + 2_000_000, Op: libsockcap.OpClose, Fd: 3, Fd2: -1},
	}
	for _, synced := range []bool{false, true} {
		tr, err := Reconcile(Inputs{Sources: []Source{EventSource(proc, evs)}, Pcaps: []string{pa, pb}, Hosts: names},
			Options{SyncedClocks: synced})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := range tr.Messages {
			got = append(got, string(trace.AppendTextLine(nil, tr, i)))
		}
		want := []string{
			"1699999820.000300000 client 10.201.1.2:40000 1700000002.000350000 server 10.201.2.2:8080 100 id=0 kind=call call=0",
			"1700000002.001000000 server 10.201.2.2:8080 1699999820.001030000 client 10.201.1.2:40000 300 id=1 kind=return call=0",
		}
		same := strings.Join(got, "\n") == strings.Join(want, "\n")
		if synced && same {
			t.Errorf("with SyncedClocks the 3 min apart ends were paired within the window")
		}
		if !synced && !same {
			t.Errorf("messages\n%s\nwant\n%s\nwarnings %q", strings.Join(got, "\n"), strings.Join(want, "\n"), tr.Warnings)
		}
	}
}
