package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wap5/trace"
)

// Nesting with actors. The trace names the thread that sent and received
// every message (sa=, da=); the forking servers serve each connection in a
// process of its own and the threaded server each connection in a thread, so
// their calls to the back-ends leave from the thread that received the
// request, and wap5 nest (step 2b, nesting/actors.go) learns that from the
// calls with a single candidate parent and keeps only same-thread
// candidates. With three concurrent clients the call trees must then be
// exact, as with one client.

// nestRun runs wap5 nest on a trace with kind= and call= removed and
// returns its patterns, its stderr, and the share of its instances that are
// exactly their request's path.
func nestRun(t *testing.T, in string, args ...string) (pats []pattern, stderr string, share float64, bad []string) {
	t.Helper()
	nk := filepath.Join(t.TempDir(), "nokinds.txt")
	stripCalls(t, in, nk)
	inst := filepath.Join(t.TempDir(), "instances.jsonl")
	cmd := exec.Command(filepath.Join(os.Getenv("WAP5_BIN"), "wap5"), append(append([]string{"nest", "--json", "--instances", inst}, args...), nk)...)
	var eb bytes.Buffer
	cmd.Stderr = &eb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wap5 nest: %v\n%s", err, eb.Bytes())
	}
	pats = parsePaths(t, out)
	share, _, bad = instanceAccuracy(t, nk, inst)
	return pats, eb.String(), share, bad
}

// checkNestExact: every call paired, every instance exactly its request's
// path, the true call trees and nothing else with their true counts, and the
// call delays within 10% of what the callers measured.
func checkNestExact(t *testing.T, s *system, in string, delays bool) {
	t.Helper()
	if !hasActors(t, in) {
		t.Fatalf("%s has no sa=/da= actors", in)
	}
	pats, stderr, share, bad := nestRun(t, in)
	t.Logf("wap5 nest: %s", stderr)
	if !strings.Contains(stderr, " 0 unpaired") {
		t.Errorf("wap5 nest left calls unpaired: %s", stderr)
	}
	if !strings.Contains(stderr, "used:") {
		t.Errorf("wap5 nest used the actors at no node: %s", stderr)
	}
	t.Logf("clients=%d: %.1f%% of the instances exactly their request's path", s.clients, 100*share)
	if share < 1 {
		t.Errorf("wap5 nest with actors: %.1f%% of the instances are not their request's path, e.g.\n%s", 100*(1-share), strings.Join(bad, "\n"))
	}
	// Shapes by host: at process granularity each forked child is a node
	// of its own, so one call tree is several patterns.
	counts := map[string]int{}
	var got []string
	for _, p := range pats {
		counts[shape(p.Root)] += p.Count
		got = append(got, fmt.Sprintf("#%d %s count %d", p.Rank, shape(p.Root), p.Count))
	}
	if len(counts) != len(trueTrees) {
		t.Errorf("%d call tree shapes, want %d:\n%s", len(counts), len(trueTrees), strings.Join(got, "\n"))
	}
	for _, tt := range trueTrees {
		if n := counts[tt.tree]; n != tt.count(s.clients) {
			t.Errorf("%s: %s found %d times, the workload made %d; patterns:\n%s", tt.name, tt.tree, n, tt.count(s.clients), strings.Join(got, "\n"))
		}
		if !delays {
			continue
		}
		for _, p := range pats {
			if shape(p.Root) != tt.tree {
				continue
			}
			st := steps(p.Root)[1:]
			for i, iv := range tt.delays {
				want, n := iv.mean(s.timings)
				if n == 0 {
					t.Fatalf("%s: no server timing records for %s", tt.name, iv.what)
				}
				if st[i].CallDelay == nil {
					t.Errorf("%s: call %d has no call_delay_s", tt.name, i+1)
					continue
				}
				rel := (*st[i].CallDelay - want) / want
				t.Logf("%-38s %-40s wap5 nest %.3f ms, servers %.3f ms, %+.1f%%", tt.name, iv.what, *st[i].CallDelay*1e3, want*1e3, rel*100)
				if math.Abs(rel) > 0.10 {
					t.Errorf("%s: %s: call_delay_s %.6f s, the servers measured %.6f s (%+.1f%%, limit ±10%%)", tt.name, iv.what, *st[i].CallDelay, want, rel*100)
				}
			}
		}
	}
	// What the same trace gives without the actors (Project 5's nesting).
	_, _, plain, _ := nestRun(t, in, "--actor-min", "2")
	t.Logf("clients=%d: without actors (--actor-min 2) %.1f%% of the instances exact", s.clients, 100*plain)
}

func hasActors(t *testing.T, path string) bool {
	tr, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Messages {
		if tr.Messages[i].SrcActor != trace.NoActor || tr.Messages[i].DstActor != trace.NoActor {
			return true
		}
	}
	return false
}

// TestNestActors: live testbed runs (root) with three concurrent clients at
// host and process granularity; the call trees must be exact.
func TestNestActors(t *testing.T) {
	for _, gran := range []string{"host", "process"} {
		t.Run("clients=3/"+gran, func(t *testing.T) {
			s := testbed(t, 3)
			in := s.trace
			if gran != "host" {
				in = filepath.Join(t.TempDir(), "trace.txt")
				wap5(t, "reconcile", "--granularity", gran, "-o", in, filepath.Join(s.dir, "logs"))
			}
			checkNestExact(t, s, in, gran == "host")
			if gran == "host" {
				linkActorGain(t, s)
			}
		})
	}
}

// TestNestRecorded: the checks of TestNestActors on testbed runs kept in
// testdata/nest-recorded (trace.txt at host granularity, trace-process.txt
// at process granularity, the servers' timing records in truth/, the number
// of client processes in clients). Needs WAP5_BIN, not root.
func TestNestRecorded(t *testing.T) {
	recordedRuns(t, "testdata/nest-recorded", func(t *testing.T, s *system) {
		for _, f := range []string{"trace.txt", "trace-process.txt"} {
			in := filepath.Join(s.dir, f)
			if _, err := os.Stat(in); err != nil {
				continue
			}
			t.Run(f, func(t *testing.T) { checkNestExact(t, s, in, f == "trace.txt") })
		}
	})
}

// linkActorGain checks that wap5 link, which learns the same-thread hint
// per node (linking/actors.go), gets every instance exactly its request's
// path with concurrent clients, and logs what is left: the wrong instances
// and how many of them the hint alone would reject, because a message of
// theirs leaves a node from a thread that received none of the instance's
// messages there (before the hint was used, all 30 wrong instances over 15
// live runs were such).
func linkActorGain(t *testing.T, s *system) {
	t.Helper()
	inst := filepath.Join(t.TempDir(), "link.jsonl")
	wap5(t, "link", "--json", "--instances", inst, s.trace)
	share, n, bad := instanceAccuracy(t, s.trace, inst)
	tr, byID := traceByID(t, s.trace)
	b, err := os.ReadFile(inst)
	if err != nil {
		t.Fatal(err)
	}
	var wrong, rejected, wrongP, rejectedP float64
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var in instanceLine
		if err := json.Unmarshal(line, &in); err != nil {
			t.Fatal(err)
		}
		var ms []int
		for _, id := range in.IDs {
			ms = append(ms, byID[id])
		}
		if instanceRight(tr, ms) {
			continue
		}
		wrong++
		wrongP += in.Prob
		if !actorConsistent(tr, ms) {
			rejected++
			rejectedP += in.Prob
		}
	}
	t.Logf("wap5 link, clients=%d: %d instances, %.1f%% (probability-weighted) exactly their request's path; "+
		"%.0f wrong (weight %.2f), of which the same-thread hint rejects %.0f (weight %.2f)", s.clients, n, 100*share, wrong, wrongP, rejected, rejectedP)
	if wrong > 0 {
		t.Errorf("wap5 link with actors, clients=%d: %.0f instances are not their request's path (%.0f of them against the same-thread hint), e.g.\n%s",
			s.clients, wrong, rejected, strings.Join(bad, "\n"))
	}
}

// TestLinkActorsRecorded: linkActorGain's check on the testbed runs kept in
// testdata/nest-recorded (host granularity). Needs WAP5_BIN, not root.
func TestLinkActorsRecorded(t *testing.T) {
	recordedRuns(t, "testdata/nest-recorded", linkActorGain)
}

// instanceRight: the messages are exactly the path their first client
// request implies (as instanceAccuracy decides).
func instanceRight(tr *trace.Trace, ms []int) bool {
	var got []string
	root := -1
	for _, i := range ms {
		m := &tr.Messages[i]
		got = append(got, fmt.Sprintf("%s>%s %d", hostOf(tr.NodeName(m.Src)), hostOf(tr.NodeName(m.Dst)), m.Bytes))
		if hostOf(tr.NodeName(m.Src)) == "c" && (root < 0 || m.Send < tr.Messages[root].Send) {
			root = i
		}
	}
	if root < 0 {
		return false
	}
	want, ok := trueSizes(tr.EndpointName(tr.Messages[root].DstEP), tr.Messages[root].Bytes)
	slices.Sort(got)
	return ok && slices.Equal(want, got)
}

// actorConsistent: every message of the instance but its earliest leaves
// its node from the thread that received its parent there, taken as the
// instance's latest message received at that node before it was sent (the
// parent a linker picks); unknown actors pass.
func actorConsistent(tr *trace.Trace, ms []int) bool {
	for _, i := range ms {
		m := &tr.Messages[i]
		if m.SrcActor == trace.NoActor || m.Send == trace.Unknown {
			continue
		}
		parent := -1
		for _, j := range ms {
			p := &tr.Messages[j]
			if p.Dst == m.Src && p.Recv != trace.Unknown && p.Recv <= m.Send && (parent < 0 || p.Recv > tr.Messages[parent].Recv) {
				parent = j
			}
		}
		if parent >= 0 && tr.Messages[parent].DstActor != trace.NoActor && tr.Messages[parent].DstActor != m.SrcActor {
			return false
		}
	}
	return true
}
