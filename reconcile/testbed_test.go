package reconcile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"wap5/trace"
)

// testbedBin finds bin/wap5 and bin/libsockcap.so: $WAP5_BIN (set by make
// test), else the repository's bin/.
func testbedBin(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testbed: needs root for network namespaces (make test runs it as root)")
	}
	dir := os.Getenv("WAP5_BIN")
	if dir == "" {
		dir, _ = filepath.Abs("../bin")
	}
	for _, f := range []string{"wap5", "libsockcap.so"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			if os.Getenv("WAP5_BIN") != "" {
				t.Fatalf("testbed: %v", err)
			}
			t.Skipf("testbed: %s missing (run make, or make test)", filepath.Join(dir, f))
		}
	}
	for _, p := range []string{"ip", "iptables", "python3"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("testbed: %s not installed (scripts/install-deps.sh)", p)
		}
	}
	return dir
}

type sentRecord struct {
	Src, Dst, Proto string
	Bytes           int64
	Timing          bool
}

// readTruth reads what the workload's programs say they sent.
func readTruth(t *testing.T, dir string) []sentRecord {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var out []sentRecord
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var s sentRecord
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if !s.Timing {
				out = append(out, s)
			}
		}
		r.Close()
	}
	return out
}

// runTestbed runs scripts/testbed.sh once per test binary run.
func runTestbed(t *testing.T, pcap bool) string {
	bin := testbedBin(t)
	out := t.TempDir()
	args := []string{"../scripts/testbed.sh", "-o", out, "--conns", "3", "--reqs", "6", "--udp", "12"}
	if pcap {
		args = append(args, "--pcap")
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = append(os.Environ(), "WAP5_BIN="+bin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testbed: %v\n%s", err, b)
	}
	return out
}

func key(src, dst string, n int64) string { return fmt.Sprintf("%s->%s %d", src, dst, n) }

// clientLogsWith reconciles the client's logs of a testbed run with one
// server's capture (skipped without tcpdump).
func clientLogsWith(t *testing.T, dir string, pcapErr error, pcap string) *trace.Trace {
	t.Helper()
	if pcapErr != nil {
		t.Skip("tcpdump not installed")
	}
	hosts, _, err := ReadHostsFile(filepath.Join(dir, "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Reconcile(Inputs{
		Logs:  []string{filepath.Join(dir, "logs", "c")},
		Pcaps: []string{filepath.Join(dir, "pcap", pcap)},
		Hosts: hosts,
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// checkCounts compares the messages per key in a trace with what the workload
// sent, and names every key that differs.
func checkCounts(t *testing.T, want, got map[string]int) {
	t.Helper()
	var diffs []string
	for k, n := range want {
		if got[k] != n {
			diffs = append(diffs, fmt.Sprintf("%s: %d in the trace, %d sent", k, got[k], n))
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %d in the trace, never sent", k, n))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%d differences:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
}

// TestTestbed: every message the workload sent appears once, with both
// timestamps, through the DNAT virtual IP and the masquerade, at the right
// nodes and sizes; forked and threaded servers and Unix sockets included.
// Mixing in the hosts' captures adds no duplicates.
func TestTestbed(t *testing.T) {
	_, pcapErr := exec.LookPath("tcpdump")
	dir := runTestbed(t, pcapErr == nil)
	truth := readTruth(t, filepath.Join(dir, "truth"))
	want := map[string]int{}
	for _, s := range truth {
		want[key(s.Src, s.Dst, s.Bytes)]++
	}
	// 3 TCP connections × 6 requests to each of two services, with a Unix
	// call per request at the threaded server, and 12 UDP exchanges.
	if n := len(truth); n != 2*3*6*2+3*6*2+12*2 {
		t.Fatalf("workload sent %d messages by its own account, want %d", n, 2*3*6*2+3*6*2+12*2)
	}
	check := func(t *testing.T, tr *trace.Trace) {
		if err := tr.CheckValid(); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for i := range tr.Messages {
			m := &tr.Messages[i]
			if m.Send == trace.Unknown || m.Recv == trace.Unknown {
				t.Errorf("message %s lacks a timestamp", trace.AppendTextLine(nil, tr, i))
			}
			got[key(tr.NodeName(m.Src), tr.NodeName(m.Dst), m.Bytes)]++
		}
		checkCounts(t, want, got)
		// Through the virtual IP the client's messages reach s1's real address.
		for i := range tr.Messages {
			m := &tr.Messages[i]
			if tr.NodeName(m.Src) == "c" && tr.NodeName(m.Dst) == "s1" {
				if ep := tr.EndpointName(m.DstEP); ep != "10.200.2.2:8080" && ep != "10.200.2.2:5353" {
					t.Errorf("c -> s1 message to %s, want s1's own address", ep)
				}
			}
		}
		ws := strings.Join(tr.Warnings, "\n")
		for _, w := range []string{"nat: dnat tcp 10.200.9.9:80 -> 10.200.2.2:8080", "nat: dnat udp 10.200.9.9:53 -> 10.200.2.2:5353"} {
			if !strings.Contains(ws, w) {
				t.Errorf("warnings lack %q:\n%s", w, ws)
			}
		}
	}
	t.Run("logs", func(t *testing.T) {
		tr, err := Reconcile(Inputs{Logs: []string{filepath.Join(dir, "logs")}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, tr)
		if !strings.Contains(strings.Join(tr.Warnings, "\n"), "nat: snat tcp 10.200.1.2:* -> 10.200.3.1:*") {
			t.Errorf("masquerade not reported:\n%s", strings.Join(tr.Warnings, "\n"))
		}
	})
	t.Run("process granularity", func(t *testing.T) {
		tr, err := Reconcile(Inputs{Logs: []string{filepath.Join(dir, "logs")}}, Options{Granularity: ByProcess})
		if err != nil {
			t.Fatal(err)
		}
		// The forking server answers from one child per connection.
		children := map[string]bool{}
		for i := range tr.Messages {
			m := &tr.Messages[i]
			if strings.HasPrefix(tr.NodeName(m.Src), "s1/") && tr.EndpointName(m.SrcEP) == "10.200.2.2:8080" {
				children[tr.NodeName(m.Src)] = true
			}
		}
		if len(children) != 3 {
			t.Errorf("replies of the forking server come from %d processes, want 3 (one child per connection): %v", len(children), children)
		}
	})
	t.Run("logs and captures", func(t *testing.T) {
		if pcapErr != nil {
			t.Skip("tcpdump not installed")
		}
		if OpenPcap == nil {
			t.Skip("capture reading not built")
		}
		pcaps, _ := filepath.Glob(filepath.Join(dir, "pcap", "*.pcap"))
		hosts, _, err := ReadHostsFile(filepath.Join(dir, "hosts"))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Reconcile(Inputs{Logs: []string{filepath.Join(dir, "logs")}, Pcaps: pcaps, Hosts: hosts}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, tr)
	})
	// The client traced, s1 only captured: every message between them pairs
	// the client's log with s1's capture through the DNAT virtual IP — UDP
	// datagrams by the checksum the library records, which the capture
	// reader must compute the same way (it did not: 12 of 12 datagrams
	// each way stayed unpaired).
	t.Run("client logs, server capture", func(t *testing.T) {
		tr := clientLogsWith(t, dir, pcapErr, "s1.pcap")
		between := func(a, b string) bool { return a == "c" && b == "s1" || a == "s1" && b == "c" }
		wantC := map[string]int{}
		for _, s := range truth {
			if between(s.Src, s.Dst) {
				wantC[key(s.Src+"/"+s.Proto, s.Dst, s.Bytes)]++
			}
		}
		got := map[string]int{}
		for i := range tr.Messages {
			m := &tr.Messages[i]
			src, dst := tr.NodeName(m.Src), tr.NodeName(m.Dst)
			if !between(src, dst) {
				continue
			}
			if m.Send == trace.Unknown || m.Recv == trace.Unknown {
				t.Errorf("message %s lacks a timestamp", trace.AppendTextLine(nil, tr, i))
				continue
			}
			proto := "tcp" // the UDP service's port, 53 behind the virtual IP
			for _, ep := range []string{tr.EndpointName(m.SrcEP), tr.EndpointName(m.DstEP)} {
				if strings.HasSuffix(ep, ":5353") || strings.HasSuffix(ep, ":53") {
					proto = "udp"
				}
			}
			got[key(src+"/"+proto, dst, m.Bytes)]++
		}
		checkCounts(t, wantC, got)
	})
	// The client traced, s2 only captured, through the masquerade: s2's
	// capture sees the router's address, below the client's TTL, which no
	// log covers; it gets no sends of its own (P3), so step 6 pairs s2's
	// captured ends with the client's logged ones (it gave every message
	// twice: the router's to s2, and the client's unpaired).
	t.Run("client logs, masqueraded server capture", func(t *testing.T) {
		tr := clientLogsWith(t, dir, pcapErr, "s2.pcap")
		wantC := map[string]int{}
		for _, s := range truth {
			if s.Src == "c" && s.Dst == "s2" || s.Src == "s2" && s.Dst == "c" {
				wantC[key(s.Src, s.Dst, s.Bytes)]++
			}
		}
		got := map[string]int{}
		for i := range tr.Messages {
			m := &tr.Messages[i]
			// Everything but the client's unpaired flows to s1 (whose
			// capture is not given): the router or s2's unpaired ends would
			// show as never sent.
			s1 := false
			for _, ep := range []string{tr.EndpointName(m.SrcEP), tr.EndpointName(m.DstEP)} {
				s1 = s1 || strings.HasPrefix(ep, "10.200.9.9:") || strings.HasPrefix(ep, "10.200.2.2:")
			}
			if s1 {
				continue
			}
			if m.Send == trace.Unknown || m.Recv == trace.Unknown {
				t.Errorf("message %s lacks a timestamp", trace.AppendTextLine(nil, tr, i))
			}
			got[key(tr.NodeName(m.Src), tr.NodeName(m.Dst), m.Bytes)]++
		}
		checkCounts(t, wantC, got)
		if !strings.Contains(strings.Join(tr.Warnings, "\n"), "nat: snat tcp 10.200.1.2:* -> 10.200.3.1:*") {
			t.Errorf("masquerade not reported:\n%s", strings.Join(tr.Warnings, "\n"))
		}
	})
}
