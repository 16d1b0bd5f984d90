package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"wap5/trace"
)

// The testbed's size: per client process, conns connections of reqs requests
// to each TCP service (forking s1, threaded s2, front s1 → s2) and udp
// datagram exchanges with s1; every server spends uniform(0.5, 1.5)·workMS
// before each send.
const (
	conns  = 3
	reqs   = 6
	udp    = 12
	workMS = 3
)

// system is one testbed run: the reconciled trace and the servers' own
// timing records.
type system struct {
	clients int
	dir     string
	trace   string // reconciled text trace, as wap5 reconcile wrote it
	timings []timing
	err     error
}

// timing is a server's record of its own intervals (testbed_workload.py).
type timing struct {
	Timing bool   `json:"timing"`
	Server string `json:"server"` // fork, udp, thread, helper, front
	Caller string `json:"caller"` // thread and helper: "client" or "front"
	Recv   int64  `json:"recv_ns"`
	Call   int64  `json:"call_ns"` // thread, front: just before calling downstream
	Ret    int64  `json:"ret_ns"`  // thread, front: downstream reply received
	Send   int64  `json:"send_ns"`
}

var (
	mu      sync.Mutex
	systems = map[int]*system{}
)

// wap5Bin is $WAP5_BIN; the tests skip without it or without root.
func wap5Bin(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("e2e: needs root for network namespaces (make test runs it as root)")
	}
	dir := os.Getenv("WAP5_BIN")
	if dir == "" {
		t.Skip("e2e: WAP5_BIN unset (the directory of the built wap5 and libsockcap.so; make test sets it)")
	}
	for _, f := range []string{"wap5", "libsockcap.so"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("e2e: %v (WAP5_BIN=%s)", err, dir)
		}
	}
	for _, p := range []string{"ip", "iptables", "python3"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("e2e: %s not installed (scripts/install-deps.sh)", p)
		}
	}
	return dir
}

// testbed runs scripts/testbed.sh --front with the given number of
// concurrent client processes once per test binary and reconciles its logs.
func testbed(t *testing.T, clients int) *system {
	t.Helper()
	bin := wap5Bin(t)
	mu.Lock()
	defer mu.Unlock()
	if s, ok := systems[clients]; ok {
		if s.err != nil {
			t.Fatal(s.err)
		}
		return s
	}
	s := &system{clients: clients}
	systems[clients] = s
	// Every message end must be paired: a run that leaves some unpaired is a
	// reconcile failure (TestForkCloseRace guards the fork/close race that
	// once caused it), not noise to retry.
	s.err = s.run(bin, "--front", "--clients", fmt.Sprint(clients), "--work", fmt.Sprint(workMS),
		"--conns", fmt.Sprint(conns), "--reqs", fmt.Sprint(reqs), "--udp", fmt.Sprint(udp))
	if s.err != nil {
		t.Fatal(s.err)
	}
	if n, err := unpaired(s.trace); err != nil || n > 0 {
		s.err = fmt.Errorf("wap5 reconcile left %d message ends unpaired (%v); testbed in %s", n, err, s.dir)
		t.Fatal(s.err)
	}
	s.timings, s.err = readTimings(filepath.Join(s.dir, "truth"))
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s
}

// run runs scripts/testbed.sh with args in a new directory and reconciles
// its logs into s.trace.
func (s *system) run(bin string, args ...string) error {
	if s.dir != "" && os.Getenv("WAP5_E2E_KEEP") == "" {
		os.RemoveAll(s.dir)
	}
	// A temporary directory that outlives the test that started it (other
	// tests use the same run); removed by TestMain.
	dir, err := os.MkdirTemp("", "wap5-e2e-")
	if err != nil {
		return err
	}
	s.dir = dir
	cmd := exec.Command("bash", append([]string{"../scripts/testbed.sh", "-o", dir}, args...)...)
	cmd.Env = append(os.Environ(), "WAP5_BIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testbed: %v\n%s", err, out)
	}
	s.trace = filepath.Join(dir, "trace.txt")
	if out, err := exec.Command(filepath.Join(bin, "wap5"), "reconcile", "-o", s.trace, filepath.Join(dir, "logs")).CombinedOutput(); err != nil {
		return fmt.Errorf("wap5 reconcile: %v\n%s", err, out)
	}
	return nil
}

// unpaired counts the messages of a trace with an end missing (every
// process of the testbed is traced, so there should be none).
func unpaired(path string) (int, error) {
	tr, err := trace.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range tr.Messages {
		if m.Send == trace.Unknown || m.Recv == trace.Unknown {
			n++
		}
	}
	return n, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("WAP5_E2E_KEEP") == "" {
		for _, s := range systems {
			if s.dir != "" {
				os.RemoveAll(s.dir)
			}
		}
	}
	os.Exit(code)
}

func readTimings(dir string) ([]timing, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var out []timing
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for line := 1; sc.Scan(); line++ {
			var r timing
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", f, line, err)
			}
			if r.Timing {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// wap5 runs the built CLI and returns its stdout; stderr goes to the log.
func wap5(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(os.Getenv("WAP5_BIN"), "wap5"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wap5 %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	t.Logf("wap5 %s: stderr:\n%s", args[0], stderr.Bytes())
	return out
}

// node is a step of either algorithm's JSON tree.
type node struct {
	From      string   `json:"from"`
	To        string   `json:"to"`
	Count     float64  `json:"count"`
	Wait      *float64 `json:"wait_s"`       // linking
	CallDelay *float64 `json:"call_delay_s"` // nesting
	Children  []*node  `json:"children"`
}

type pattern struct {
	Rank     int     `json:"rank"`
	Count    int     `json:"count"`
	Expected float64 `json:"expected"`
	Root     *node   `json:"root"`
}

func parsePaths(t *testing.T, b []byte) []pattern {
	t.Helper()
	var p struct {
		Patterns []pattern `json:"patterns"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	return p.Patterns
}

// shape writes a tree as from>to[children...].
// Node names are cut to their host (process granularity: HOST/EXE/PID).
func shape(n *node) string {
	s := hostOf(n.From) + ">" + hostOf(n.To)
	if len(n.Children) == 0 {
		return s
	}
	var cs []string
	for _, c := range n.Children {
		cs = append(cs, shape(c))
	}
	return s + "[" + strings.Join(cs, " ") + "]"
}

func hostOf(name string) string {
	h, _, _ := strings.Cut(name, "/")
	return h
}

// steps lists a tree's nodes depth first (for linking's chains, in order).
func steps(n *node) []*node {
	out := []*node{n}
	for _, c := range n.Children {
		out = append(out, steps(c)...)
	}
	return out
}

// interval selects what a server measured for one pattern node.
type interval struct {
	what   string
	server []string // servers whose records count
	caller string   // "" any
	from   func(timing) int64
	to     func(timing) int64
}

func recvT(r timing) int64 { return r.Recv }
func callT(r timing) int64 { return r.Call }
func retT(r timing) int64  { return r.Ret }
func sendT(r timing) int64 { return r.Send }

// mean of to−from over the matching records, in seconds.
func (iv interval) mean(rs []timing) (float64, int) {
	var sum float64
	n := 0
	for _, r := range rs {
		ok := false
		for _, s := range iv.server {
			ok = ok || r.Server == s
		}
		if !ok || (iv.caller != "" && r.Caller != iv.caller) {
			continue
		}
		sum += float64(iv.to(r)-iv.from(r)) / 1e9
		n++
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}

// truePath is one real request path of the testbed: its linking chain, the
// instances the workload made of it, and what the servers measured at each
// step after the root (linking's node delays, in chain order).
type truePath struct {
	name  string
	chain string
	count func(clients int) int
	waits []interval
}

var truePaths = []truePath{
	{
		name:  "forking and UDP server (c → s1 → c)",
		chain: "c>s1[s1>c]",
		count: func(k int) int { return k * (conns*reqs + udp) },
		waits: []interval{
			{"s1: request received → reply sent", []string{"fork", "udp"}, "", recvT, sendT},
		},
	},
	{
		name:  "front s1 → threaded s2 → Unix helper",
		chain: "c>s1[s1>s2[s2>s2[s2>s2[s2>s1[s1>c]]]]]",
		count: func(k int) int { return k * conns * reqs },
		waits: []interval{
			{"s1 front: request → call to s2", []string{"front"}, "", recvT, callT},
			{"s2 thread: request → call to helper", []string{"thread"}, "front", recvT, callT},
			{"s2 helper: request → reply", []string{"helper"}, "front", recvT, sendT},
			{"s2 thread: helper's reply → reply", []string{"thread"}, "front", retT, sendT},
			{"s1 front: s2's reply → reply", []string{"front"}, "", retT, sendT},
		},
	},
	{
		name:  "threaded s2 → Unix helper",
		chain: "c>s2[s2>s2[s2>s2[s2>c]]]",
		count: func(k int) int { return k * conns * reqs },
		waits: []interval{
			{"s2 thread: request → call to helper", []string{"thread"}, "client", recvT, callT},
			{"s2 helper: request → reply", []string{"helper"}, "client", recvT, sendT},
			{"s2 thread: helper's reply → reply", []string{"thread"}, "client", retT, sendT},
		},
	},
}

// TestLink: on the real system, wap5 link's top patterns are the real
// request paths with their true counts, every node delay agrees within 10%
// with the servers' own mean, and its instances are their requests' paths.
func TestLink(t *testing.T) {
	for _, clients := range []int{1, 3} {
		t.Run(fmt.Sprintf("clients=%d", clients), func(t *testing.T) {
			// One client: everything exact. Three: calls at s2 have
			// concurrent candidate spans whose delays look alike, and the
			// linker swaps a few of them (docs/e2e.md): counts within 5%,
			// at least 85% of the instances exact.
			tol, floor := 0.0, 1.0
			if clients > 1 {
				tol, floor = 0.05, 0.85
			}
			checkLink(t, testbed(t, clients), tol, floor)
		})
	}
}

// TestLinkRecorded: the checks of TestLink on testbed runs recorded in
// testdata/recorded (each: trace.txt as wap5 reconcile wrote it, the
// servers' timing records in truth/, the number of client processes in
// clients), kept because wap5 link got them wrong. Needs WAP5_BIN, not root.
func TestLinkRecorded(t *testing.T) {
	recordedRuns(t, "testdata/recorded", func(t *testing.T, s *system) {
		// Exact counts: every real request has one helper call; these
		// runs were kept because the linker built paths no request had.
		checkLink(t, s, 0, 0.90)
	})
}

// recordedRuns runs f as a subtest for every testbed run kept under dir
// (each: trace.txt as wap5 reconcile wrote it, the servers' timing records
// in truth/, the number of client processes in clients). Needs WAP5_BIN, not
// root.
func recordedRuns(t *testing.T, dir string, f func(t *testing.T, s *system)) {
	if os.Getenv("WAP5_BIN") == "" {
		t.Skip("e2e: WAP5_BIN unset (the directory of the built wap5; make test sets it)")
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(runs) == 0 {
		t.Fatalf("no recorded runs in %s", dir)
	}
	for _, run := range runs {
		t.Run(filepath.Base(run), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(run, "clients"))
			if err != nil {
				t.Fatal(err)
			}
			s := &system{dir: run, trace: filepath.Join(run, "trace.txt")}
			if _, err := fmt.Sscan(string(b), &s.clients); err != nil {
				t.Fatalf("%s: %v", filepath.Join(run, "clients"), err)
			}
			if s.timings, err = readTimings(filepath.Join(run, "truth")); err != nil {
				t.Fatal(err)
			}
			f(t, s)
		})
	}
}

// checkLink runs wap5 link on a testbed run: the top patterns are the real
// request paths with their true counts (within countTol, relative), every
// node delay agrees within 10% with the servers' own mean, and at least
// instFloor of the instances (probability-weighted) are exactly their
// request's path.
func checkLink(t *testing.T, s *system, countTol, instFloor float64) {
	t.Helper()
	clients := s.clients
	inst := filepath.Join(t.TempDir(), "instances.jsonl")
	pats := parsePaths(t, wap5(t, "link", "--json", "--instances", inst, s.trace))
	// Instances against their root request's real path (sizes follow from
	// the request's; a swapped message changes them).
	share, n, bad := instanceAccuracy(t, s.trace, inst)
	t.Logf("wap5 link: %d instances, %.1f%% (probability-weighted) exactly their request's path; e.g. not:\n%s", n, 100*share, strings.Join(bad, "\n"))
	if share < instFloor {
		t.Errorf("wap5 link: %.1f%% of the instances are their request's path, want ≥ %.0f%%; e.g. not:\n%s", 100*share, 100*instFloor, strings.Join(bad, "\n"))
	}
	if len(pats) < len(truePaths) {
		t.Fatalf("%d patterns, want at least %d", len(pats), len(truePaths))
	}
	top := map[string]pattern{}
	for _, p := range pats[:len(truePaths)] {
		top[shape(p.Root)] = p
	}
	var all []string
	for _, p := range pats {
		all = append(all, fmt.Sprintf("#%d %s count %d expected %.2f", p.Rank, shape(p.Root), p.Count, p.Expected))
	}
	t.Logf("wap5 link patterns:\n%s", strings.Join(all, "\n"))
	for _, tp := range truePaths {
		p, ok := top[tp.chain]
		if !ok {
			t.Errorf("%s: %s not among the top %d patterns", tp.name, tp.chain, len(truePaths))
			continue
		}
		if want := float64(tp.count(clients)); math.Abs(float64(p.Count)-want) > countTol*want ||
			math.Abs(p.Expected-want) > (countTol+0.01)*want {
			t.Errorf("%s: count %d, expected %.2f; the workload made %.0f (tolerance %.0f%%)", tp.name, p.Count, p.Expected, want, 100*countTol)
		}
		st := steps(p.Root)[1:]
		for i, iv := range tp.waits {
			want, n := iv.mean(s.timings)
			if n == 0 {
				t.Fatalf("%s: no server timing records for %s", tp.name, iv.what)
			}
			if st[i].Wait == nil {
				t.Errorf("%s: step %d (%s→%s) has no wait_s", tp.name, i+1, st[i].From, st[i].To)
				continue
			}
			got := *st[i].Wait
			rel := (got - want) / want
			t.Logf("%-38s %-40s wap5 link %.3f ms, servers %.3f ms (%d records), %+.1f%%",
				tp.name, iv.what, got*1e3, want*1e3, n, rel*100)
			if math.Abs(rel) > 0.10 {
				t.Errorf("%s: %s: wait_s %.6f s, the servers measured %.6f s on average (%+.1f%%, limit ±10%%)",
					tp.name, iv.what, got, want, rel*100)
			}
		}
	}
}

// stripCalls writes the trace without kind= and call=, so that wap5 nest must
// pair calls from the connections.
func stripCalls(t *testing.T, in, out string) {
	t.Helper()
	tr, err := trace.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Messages {
		tr.Messages[i].Kind = trace.KindNone
		tr.Messages[i].Call = trace.NoRef
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.WriteText(f, tr); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if bytes.Contains(b, []byte("kind=")) || bytes.Contains(b, []byte("call=")) {
		t.Fatalf("%s still has kind= or call=", out)
	}
}

// trueTrees are the real call trees as wap5 nest shows them (calls only).
// Their call delays (parent call received → this call sent, depth first
// after the root) are what the callers measured between request and call.
var trueTrees = []struct {
	name   string
	tree   string
	count  func(clients int) int
	delays []interval
}{
	{"forking and UDP server", "c>s1", truePaths[0].count, nil},
	{"front s1 → threaded s2 → Unix helper", "c>s1[s1>s2[s2>s2]]", truePaths[1].count,
		[]interval{truePaths[1].waits[0], truePaths[1].waits[1]}},
	{"threaded s2 → Unix helper", "c>s2[s2>s2]", truePaths[2].count,
		[]interval{truePaths[2].waits[0]}},
}

func isTrueTree(sh string) bool {
	for _, tt := range trueTrees {
		if tt.tree == sh {
			return true
		}
	}
	return false
}

// TestNest: wap5 nest with call pairs derived from the connections (no
// kind=/call= in its input). With one client process at a time the call
// trees are recovered exactly. With three concurrent clients the test turns
// the same-thread hint off (--actor-min 2; TestNestActors checks that with
// it the trees are exact) to check Project 5's nesting alone: calls at s2
// have several open candidate parents whose delays look alike, and one parent
// per call chosen from the delay scoreboard misassigns some; every true tree
// must still be the most frequent pattern of its root call (more frequent
// than every false tree under it), all calls paired, and the share of paths
// in true trees is logged (docs/e2e.md).
func TestNest(t *testing.T) {
	for _, tc := range []struct {
		clients     int
		granularity string
	}{{1, "host"}, {3, "host"}, {3, "process"}} {
		clients := tc.clients
		t.Run(fmt.Sprintf("clients=%d/%s", clients, tc.granularity), func(t *testing.T) {
			s := testbed(t, clients)
			in := s.trace
			if tc.granularity != "host" {
				// Forked children and the helper become nodes of their own.
				in = filepath.Join(t.TempDir(), "trace.txt")
				wap5(t, "reconcile", "--granularity", tc.granularity, "-o", in, filepath.Join(s.dir, "logs"))
			}
			nk := filepath.Join(t.TempDir(), "nokinds.txt")
			stripCalls(t, in, nk)
			inst := filepath.Join(t.TempDir(), "instances.jsonl")
			args := []string{"nest", "--json", "--instances", inst}
			if clients > 1 {
				args = append(args, "--actor-min", "2") // Project 5's nesting alone
			}
			cmd := exec.Command(filepath.Join(os.Getenv("WAP5_BIN"), "wap5"), append(args, nk)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("wap5 nest: %v\n%s", err, stderr.Bytes())
			}
			t.Logf("wap5 nest: %s", stderr.Bytes())
			if !strings.Contains(stderr.String(), " 0 unpaired") {
				t.Errorf("wap5 nest left calls unpaired: %s", stderr.Bytes())
			}
			pats := parsePaths(t, out)
			counts := map[string]int{}
			total := 0
			for _, p := range pats {
				counts[shape(p.Root)] += p.Count
				total += p.Count
			}
			want, inTrue := 0, 0
			for _, tt := range trueTrees {
				want += tt.count(clients)
				inTrue += counts[tt.tree]
			}
			if total != want {
				t.Errorf("%d paths, the workload made %d requests", total, want)
			}
			t.Logf("clients=%d, %s granularity: %d of %d paths (%.1f%%) in the true call trees", clients, tc.granularity, inTrue, total, 100*float64(inTrue)/float64(total))
			share, n, bad := instanceAccuracy(t, nk, inst)
			t.Logf("clients=%d, %s granularity: %d instances, %.1f%% exactly their request's path", clients, tc.granularity, n, 100*share)
			if clients == 1 && share < 1 {
				t.Errorf("wap5 nest: %.1f%% of the instances are not their request's path, e.g.\n%s", 100*(1-share), strings.Join(bad, "\n"))
			}
			var got []string
			for _, p := range pats {
				got = append(got, fmt.Sprintf("#%d %s count %d", p.Rank, shape(p.Root), p.Count))
			}
			for _, tt := range trueTrees {
				// Call delays of the true trees: within 10% of the callers'
				// own mean when every path is assembled right (one client);
				// logged otherwise (host granularity only).
				for _, p := range pats {
					if tc.granularity != "host" || shape(p.Root) != tt.tree {
						continue
					}
					st := steps(p.Root)[1:]
					for i, iv := range tt.delays {
						want, _ := iv.mean(s.timings)
						if st[i].CallDelay == nil {
							t.Errorf("%s: call %d has no call_delay_s", tt.name, i+1)
							continue
						}
						got := *st[i].CallDelay
						rel := (got - want) / want
						t.Logf("%-38s %-40s wap5 nest %.3f ms, servers %.3f ms, %+.1f%%", tt.name, iv.what, got*1e3, want*1e3, rel*100)
						if clients == 1 && math.Abs(rel) > 0.10 {
							t.Errorf("%s: %s: call_delay_s %.6f s, the servers measured %.6f s on average (%+.1f%%, limit ±10%%)",
								tt.name, iv.what, got, want, rel*100)
						}
					}
				}
				n := counts[tt.tree]
				if clients == 1 {
					if n != tt.count(clients) {
						t.Errorf("%s: %s found %d times, the workload made %d; patterns:\n%s",
							tt.name, tt.tree, n, tt.count(clients), strings.Join(got, "\n"))
					}
					continue
				}
				// The most frequent pattern of its root call.
				root := tt.tree
				if i := strings.IndexByte(root, '['); i >= 0 {
					root = root[:i]
				}
				for sh, m := range counts {
					if isTrueTree(sh) {
						continue
					}
					if (sh == root || strings.HasPrefix(sh, root+"[")) && m >= n {
						t.Errorf("%s: %s (%d) is not more frequent than %s (%d); patterns:\n%s",
							tt.name, tt.tree, n, sh, m, strings.Join(got, "\n"))
					}
				}
			}
			if clients == 1 && len(pats) != len(trueTrees) {
				t.Errorf("%d patterns, want %d:\n%s", len(pats), len(trueTrees), strings.Join(got, "\n"))
			}
		})
	}
}

// TestTimingsCover: the servers recorded a timing for every request (the
// comparison above averages over all of them).
func TestTimingsCover(t *testing.T) {
	s := testbed(t, 3)
	got := map[string]int{}
	for _, r := range s.timings {
		got[r.Server+"/"+r.Caller]++
	}
	n := s.clients * conns * reqs
	want := map[string]int{"fork/": n, "udp/": s.clients * udp, "front/": n,
		"thread/front": n, "thread/client": n, "helper/front": n, "helper/client": n}
	var diffs []string
	for k, v := range want {
		if got[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: %d records, want %d", k, got[k], v))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Error(strings.Join(diffs, "\n"))
	}
}

// TestForkCloseRace checks a wap5 reconcile bug once seen on this testbed: the
// forking server's parent closes its copy of an accepted connection after its
// child has read the first request's 4-byte length and before it reads the
// body (testbed.sh --fork-race forces that interleaving). reconcile used to
// split the request into two messages at s1 (4 bytes, then the rest), the
// first-message sizes then disagreed with the client's end, the DNAT pairing
// failed, and both ends stayed unpaired ("-" times); the child's inherited
// copy now keeps the connection open (reconcile/holders.go). Every message
// must have both ends and its true size.
func TestForkCloseRace(t *testing.T) {
	bin := wap5Bin(t)
	s := &system{clients: 1}
	err := s.run(bin, "--fork-race", "--conns", "2", "--reqs", "2", "--udp", "0")
	if s.dir != "" && os.Getenv("WAP5_E2E_KEEP") == "" {
		defer os.RemoveAll(s.dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadFile(s.trace)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[int64]int{}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if m.Send == trace.Unknown || m.Recv == trace.Unknown {
			t.Errorf("unpaired: %s", trace.AppendTextLine(nil, tr, i))
		}
		if tr.NodeName(m.Dst) == "s1" {
			sizes[m.Bytes]++
		}
	}
	if sizes[4] > 0 {
		t.Errorf("%d requests to s1 of 4 bytes (only their length prefix): the request was split", sizes[4])
	}
}

// instanceLine is one line of --instances output.
type instanceLine struct {
	Pattern int      `json:"pattern"`
	Prob    float64  `json:"prob"`
	IDs     []string `json:"ids"`
}

// trueSizes is the multiset "src>dst bytes" of the messages of the request
// path that starts with a request of the given size to the given endpoint:
// every size after the request follows from it (testbed_workload.py: reply_for,
// the front's call, the threaded server's helper call, the helper's reply).
// ok is false for a root that is not a client's request.
func trueSizes(dstEP string, n int64) (out []string, ok bool) {
	add := func(src, dst string, bytes int64) { out = append(out, fmt.Sprintf("%s>%s %d", src, dst, bytes)) }
	reply := func(body int64) int64 { return body*3%900 + 10 + 4 }
	thread := func(from string, body int64) { // s2's helper call, the helper's reply, s2's reply
		h := body%200 + 5
		add("s2", "s2", h+4)
		add("s2", "s2", h+4+7)
		add("s2", from, reply(body))
	}
	switch dstEP {
	case "10.200.2.2:8080":
		add("c", "s1", n)
		add("s1", "c", reply(n-4))
	case "10.200.2.2:5353":
		add("c", "s1", n)
		add("s1", "c", n*2%700+3)
	case "10.200.3.2:9000":
		add("c", "s2", n)
		thread("c", n-4)
	case "10.200.2.2:8081":
		add("c", "s1", n)
		f := (n-4)*7%1500 + 20
		add("s1", "s2", f+4)
		thread("s1", f)
		add("s1", "c", reply(n-4))
	default:
		return nil, false
	}
	sort.Strings(out)
	return out, true
}

// traceByID reads a trace and indexes its messages by the ids --instances
// files name them by.
func traceByID(t *testing.T, path string) (*trace.Trace, map[string]int) {
	t.Helper()
	tr, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]int, len(tr.Messages))
	for i := range tr.Messages {
		byID[tr.RefString(tr.Messages[i].ID)] = i
	}
	return tr, byID
}

// instanceAccuracy compares the instances an algorithm wrote (--instances)
// with the paths the request sizes imply: the probability-weighted share of
// instances whose messages are exactly their root request's path, and a few
// that are not.
func instanceAccuracy(t *testing.T, tracePath, instPath string) (share float64, n int, bad []string) {
	t.Helper()
	tr, byID := traceByID(t, tracePath)
	b, err := os.ReadFile(instPath)
	if err != nil {
		t.Fatal(err)
	}
	var right, total float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		var in instanceLine
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			t.Fatalf("%s:%d: %v", instPath, line, err)
		}
		var got []string
		root := -1
		for _, id := range in.IDs {
			i, ok := byID[id]
			if !ok {
				t.Fatalf("%s:%d: no message id=%s in %s", instPath, line, id, tracePath)
			}
			m := &tr.Messages[i]
			got = append(got, fmt.Sprintf("%s>%s %d", hostOf(tr.NodeName(m.Src)), hostOf(tr.NodeName(m.Dst)), m.Bytes))
			if hostOf(tr.NodeName(m.Src)) == "c" && (root < 0 || m.Send < tr.Messages[root].Send) {
				root = i
			}
		}
		sort.Strings(got)
		n++
		total += in.Prob
		var want []string
		ok := root >= 0
		if ok {
			want, ok = trueSizes(tr.EndpointName(tr.Messages[root].DstEP), tr.Messages[root].Bytes)
		}
		if ok && strings.Join(want, ",") == strings.Join(got, ",") {
			right += in.Prob
		} else if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("line %d ids %v: %v, want %v", line, in.IDs, got, want))
		}
	}
	if total == 0 {
		t.Fatalf("%s: no instances", instPath)
	}
	return right / total, n, bad
}
