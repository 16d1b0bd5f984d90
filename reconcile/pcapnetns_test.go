package reconcile

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"wap5/nat"
	"wap5/trace"
)

// TestNATTestbed runs scripts/nat-testbed.sh: a client reaching a server
// through iptables DNAT and masquerade in network namespaces, captured with
// tcpdump on both sides of the router (and traced with libsockcap when
// WAP5_BIN points at bin/). It needs root; WAP5_NETNS=0 skips it.
func TestNATTestbed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces (run as root, e.g. under make test)")
	}
	if os.Getenv("WAP5_NETNS") == "0" {
		t.Skip("skipped: WAP5_NETNS=0")
	}
	for _, tool := range []string{"ip", "iptables", "tcpdump", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s not installed (scripts/install-deps.sh installs it)", tool)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("../scripts/nat-testbed.sh", dir)
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nat-testbed.sh: %v\n%s", err, out)
	}
	pcaps := []string{filepath.Join(dir, "client-side.pcap"), filepath.Join(dir, "server-side.pcap")}
	hosts, _, err := ReadHostsFile(filepath.Join(dir, "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	want := expectedMessages(t, filepath.Join(dir, "expected"))

	// The map is exactly the configured translation.
	var pkts []nat.Packet
	for i, p := range pcaps {
		c, err := ReadCaptureFile(p, int32(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Warnings) > 0 {
			t.Errorf("capture warnings: %q", c.Warnings)
		}
		pkts = append(pkts, c.Packets...)
	}
	m := nat.Detect(pkts, nat.Options{})
	var got []string
	for _, tr := range m.Translations {
		got = append(got, fmt.Sprintf("%s %s %s %s flows=%d", tr.Kind, tr.Proto, tr.Before, tr.After, tr.Flows))
	}
	wantMap := []string{
		"dnat tcp 10.201.1.100:80 10.201.2.2:8080 flows=8",
		"dnat udp 10.201.1.100:53 10.201.2.2:5353 flows=1",
		"snat tcp 10.201.1.2:* 10.201.2.1:* flows=8",
		"snat udp 10.201.1.2:* 10.201.2.1:* flows=1",
	}
	if strings.Join(got, "\n") != strings.Join(wantMap, "\n") {
		t.Errorf("nat map:\n%s\nwant:\n%s\nwarnings %q", strings.Join(got, "\n"), strings.Join(wantMap, "\n"), m.Warnings)
	}

	// One capture of the whole router (-i any) sees both sides: the same map.
	any, err := ReadCaptureFile(filepath.Join(dir, "router-any.pcap"), 0)
	if err != nil {
		t.Fatal(err)
	}
	m = nat.Detect(any.Packets, nat.Options{})
	got = got[:0]
	for _, tr := range m.Translations {
		got = append(got, fmt.Sprintf("%s %s %s %s flows=%d", tr.Kind, tr.Proto, tr.Before, tr.After, tr.Flows))
	}
	if strings.Join(got, "\n") != strings.Join(wantMap, "\n") {
		t.Errorf("nat map from the router's own capture:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantMap, "\n"))
	}
	// Reconciled alone it gives the messages once each, up to what tcpdump
	// -i any itself missed (it occasionally drops a connection's first
	// segments; the gaps are reported).
	fromRouter, err := Reconcile(Inputs{Pcaps: []string{filepath.Join(dir, "router-any.pcap")}, Hosts: hosts}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, matched := len(fromRouter.Messages), countMatched(fromRouter, want); matched < len(want)*9/10 || n > len(want)*11/10 {
		drops, _ := os.ReadFile(filepath.Join(dir, "tcpdump-router-any.log"))
		t.Errorf("router capture: %d messages, %d of %d workload messages matched; tcpdump said:\n%s", n, matched, len(want), drops)
	}

	// The pcaps alone give the workload's messages, each once, with both
	// times, between the right hosts, through the translation.
	fromPcaps, err := Reconcile(Inputs{Pcaps: pcaps, Hosts: hosts}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, "pcaps", fromPcaps, want, 1.0)

	logs := filepath.Join(dir, "logs")
	if _, err := os.Stat(logs); err != nil {
		t.Logf("no libsockcap logs (WAP5_BIN unset); the log comparisons are skipped")
		return
	}
	fromLogs, err := Reconcile(Inputs{Logs: []string{logs}, Hosts: hosts}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, "logs", fromLogs, want, 0.99)
	mixed, err := Reconcile(Inputs{Logs: []string{logs}, Pcaps: pcaps, Hosts: hosts}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, "logs+pcaps", mixed, want, 0.99)
	if len(mixed.Messages) != len(fromLogs.Messages) {
		t.Errorf("logs+pcaps: %d messages, logs alone %d (duplicates?)", len(mixed.Messages), len(fromLogs.Messages))
	}
	// Traced ends keep the logs' timestamps.
	logTimes := map[int64]bool{}
	for _, msg := range fromLogs.Messages {
		logTimes[msg.Send] = true
	}
	kept := 0
	for _, msg := range mixed.Messages {
		if logTimes[msg.Send] {
			kept++
		}
	}
	if kept < len(mixed.Messages)*99/100 {
		t.Errorf("logs+pcaps: only %d of %d send times come from the logs", kept, len(mixed.Messages))
	}
}

type wantMsg struct {
	from, to string
	bytes    int64
}

func expectedMessages(t *testing.T, path string) []wantMsg {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []wantMsg
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var proto, what string
		var n int64
		if _, err := fmt.Sscan(sc.Text(), &proto, &what, &n); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		if what == "request" {
			out = append(out, wantMsg{"client", "server", n})
		} else {
			out = append(out, wantMsg{"server", "client", n})
		}
	}
	return out
}

// countMatched counts the trace's messages that are workload messages with
// both times.
func countMatched(tr *trace.Trace, want []wantMsg) int {
	count := map[wantMsg]int{}
	for _, w := range want {
		count[w]++
	}
	n := 0
	for _, msg := range tr.Messages {
		k := wantMsg{tr.NodeName(msg.Src), tr.NodeName(msg.Dst), msg.Bytes}
		if count[k] > 0 && msg.Send != trace.Unknown && msg.Recv != trace.Unknown {
			count[k]--
			n++
		}
	}
	return n
}

// checkMessages compares a trace's messages with the workload's as
// multisets of (from, to, bytes); at least frac of them must be there with
// both timestamps, and none may be extra.
func checkMessages(t *testing.T, name string, tr *trace.Trace, want []wantMsg, frac float64) {
	t.Helper()
	if err := tr.CheckValid(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	count := map[wantMsg]int{}
	for _, w := range want {
		count[w]++
	}
	matched, extra := 0, []string{}
	for _, msg := range tr.Messages {
		k := wantMsg{tr.NodeName(msg.Src), tr.NodeName(msg.Dst), msg.Bytes}
		if count[k] > 0 && msg.Send != trace.Unknown && msg.Recv != trace.Unknown {
			count[k]--
			matched++
			continue
		}
		extra = append(extra, fmt.Sprintf("%s %s→%s %s→%s %d send=%d recv=%d", name, k.from, k.to,
			tr.EndpointName(msg.SrcEP), tr.EndpointName(msg.DstEP), k.bytes, msg.Send, msg.Recv))
	}
	sort.Strings(extra)
	if float64(matched) < frac*float64(len(want)) || len(extra) > 0 {
		t.Errorf("%s: %d of %d messages matched with both times (need %.0f%%); %d unexpected:\n%s\nwarnings %q",
			name, matched, len(want), 100*frac, len(extra), strings.Join(extra[:min(len(extra), 20)], "\n"), tr.Warnings)
	}
}
