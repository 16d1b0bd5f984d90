package linking

import (
	"cmp"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"wap5/trace"
)

// TestPairTable checks the edge-id table against a map through growth, with
// keys that collide in the low bits and the zero key.
func TestPairTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys func(i int) uint64
		n    int
	}{
		{"dense", func(i int) uint64 { return uint64(i) }, 1000},
		{"pairs", func(i int) uint64 { return uint64(i%37)<<32 | uint64(i/37) }, 5000},
		{"high bits only", func(i int) uint64 { return uint64(i) << 40 }, 300},
		{"random", func(i int) uint64 { return rand.New(rand.NewSource(int64(i))).Uint64() }, 2000},
		{"zero and all ones", func(i int) uint64 { return []uint64{0, ^uint64(0), 1, ^uint64(0) - 1}[i%4] }, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newPairTable(4)
			want := map[uint64]int32{}
			for i := 0; i < tc.n; i++ {
				k := tc.keys(i)
				if _, ok := tab.get(k); ok != (want[k] != 0) {
					t.Fatalf("key %x: present %v before insertion", k, ok)
				}
				if want[k] == 0 {
					want[k] = int32(i + 1)
					tab.put(k, int32(i+1))
				}
			}
			for k, v := range want {
				if got, ok := tab.get(k); !ok || got != v {
					t.Fatalf("key %x: got %d %v, want %d", k, got, ok, v)
				}
			}
			if _, ok := tab.get(1 << 62); ok && want[1<<62] == 0 {
				t.Fatal("absent key found")
			}
			if tab.n != len(want) {
				t.Fatalf("n = %d, want %d", tab.n, len(want))
			}
		})
	}
}

// TestInsertionSort: sorted like a full sort within the budget, and a
// permutation of the input (ready for the fallback) when it gives up.
func TestInsertionSort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []recvKey
		budget int
		done   bool
	}{
		{"empty", nil, 0, true},
		{"sorted", []recvKey{{1, 0}, {2, 1}, {3, 2}}, 0, true},
		{"ties by index", []recvKey{{5, 3}, {5, 1}, {4, 2}}, 10, true},
		{"nearly sorted", []recvKey{{1, 0}, {3, 1}, {2, 2}, {4, 3}, {6, 4}, {5, 5}}, 2, true},
		{"late inversion", []recvKey{{1, 0}, {2, 1}, {3, 2}, {7, 3}, {5, 4}, {6, 5}, {4, 6}}, 5, true},
		{"late inversion, small budget", []recvKey{{1, 0}, {2, 1}, {3, 2}, {7, 3}, {5, 4}, {6, 5}, {4, 6}}, 4, false},
		{"reversed, small budget", []recvKey{{4, 0}, {3, 1}, {2, 2}, {1, 3}}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, ts := make([]int32, len(tc.in)), make([]int64, len(tc.in))
			for k, kv := range tc.in {
				ids[k], ts[k] = kv.i, kv.t
			}
			from := 0
			for from+1 < len(ts) && ts[from+1] >= ts[from] && ids[from+1] > ids[from] {
				from++
			}
			done := insertionSort(ids, ts, from, tc.budget)
			a := make([]recvKey, len(tc.in))
			for k := range a {
				a[k] = recvKey{ts[k], ids[k]}
			}
			if done != tc.done {
				t.Fatalf("done = %v, want %v", done, tc.done)
			}
			want := slices.Clone(tc.in)
			slices.SortFunc(want, func(x, y recvKey) int {
				if x.t != y.t {
					return cmp.Compare(x.t, y.t)
				}
				return cmp.Compare(x.i, y.i)
			})
			if done && !slices.Equal(a, want) {
				t.Fatalf("got %v, want %v", a, want)
			}
			got := slices.Clone(a)
			slices.SortFunc(got, func(x, y recvKey) int {
				if x.t != y.t {
					return cmp.Compare(x.t, y.t)
				}
				return cmp.Compare(x.i, y.i)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("not a permutation of the input: %v", a)
			}
		})
	}
}

// TestIndexCounted checks the counts indexEdges makes in its read of the
// messages (counted) against index and J1 counting for themselves: the same
// groupings, candidates and RPC pairs, for both methods, on scenarios with
// untraced senders (cdn's origins, codeen's clients), loss, and RPCs paired
// by connection (no kind=/call=, or IgnoreKinds).
func TestIndexCounted(t *testing.T) {
	conn, err := trace.Read(strings.NewReader("1.0 a x:1 1.1 b y:80 10\n1.2 b y:80 1.3 a x:1 10\n1.4 a x:2 1.5 b y:80 10\n"+
		"- c z:5 1.6 b y:81 10\n1.7 b y:81 - c z:5 10\n1.8 b y:9 1.9 d w:53 10\n"), "conn")
	if err != nil {
		t.Fatal(err)
	}
	// Calls with ids, and calls with a kind but no id, which only the
	// connection pairs.
	mixed, err := trace.Read(strings.NewReader("1.0 a x:1 1.1 b y:80 10 kind=call call=1\n1.2 b y:80 1.3 a x:1 10 kind=return call=1\n"+
		"1.4 a x:2 1.5 b y:80 10 kind=call\n1.6 b y:80 1.7 a x:2 10 kind=return\n"), "mixed")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tr     *trace.Trace
		ignore bool
	}{
		{"cdn", genScenario(t, "cdn", 20), false},
		{"codeen", genScenario(t, "codeen", 2), false},
		{"multitier", genScenario(t, "multitier", 10), false},
		{"multitier, kinds ignored", genScenario(t, "multitier", 10), true},
		{"children-d-cc", genScenario(t, "children-d-cc", 10), false},
		{"by connection", conn, false},
		{"ids, and kinds without ids", mixed, false},
	} {
		for _, method := range []string{MethodJoint, MethodWAP5} {
			t.Run(tc.name+", "+method, func(t *testing.T) {
				o := Options{Method: method, IgnoreKinds: tc.ignore}.Defaults()
				l := newLinker(tc.tr, o, nil)
				if !l.counted {
					t.Fatal("not counted")
				}
				// Counted by index and J1 themselves, every edge's sends.
				u := &linker{t: tc.tr, o: o, msgs: tc.tr.Messages, x: int64(o.Window)}
				u.indexEdges()
				u.counted = false
				u.index()
				for _, c := range []struct {
					what      string
					got, want []int32
				}{
					{"inStart", l.inStart, u.inStart}, {"ins", l.ins, u.ins}, {"outStart", l.outStart, u.outStart}, {"outs", l.outs, u.outs},
				} {
					if !slices.Equal(c.got, c.want) {
						t.Fatalf("%s differs", c.what)
					}
				}
				if !slices.Equal(l.insRecv, u.insRecv) {
					t.Fatal("insRecv differs")
				}
				if method == MethodWAP5 && (!slices.Equal(l.edgeStart, u.edgeStart) || !slices.Equal(l.byEdge, u.byEdge) ||
					!slices.Equal(l.byEdgeSend, u.byEdgeSend) || !slices.Equal(l.lastPos, u.lastPos)) {
					t.Fatal("the sends per edge differ (WAP5 indexes every edge's)")
				}
				// Every message's candidates, latest first.
				rev := l.reverseEdges()
				untraced := 0
				for i := range tc.tr.Messages {
					m := &tc.tr.Messages[i]
					if m.Send == trace.Unknown {
						untraced++
					}
					var got, want []int32
					l.candidatesOf(i, m.Send, m.Recv, m.Src, rev, func(p int32, _ float64) bool { got = append(got, p); return true })
					u.candidatesOf(i, m.Send, m.Recv, m.Src, rev, func(p int32, _ float64) bool { want = append(want, p); return true })
					if !slices.Equal(got, want) {
						t.Fatalf("message %d: candidates %v, want %v", i, got, want)
					}
				}
				if tc.name == "cdn" && untraced == 0 {
					t.Fatal("no untraced sender: the case tests nothing of the sends per edge")
				}
				rl, ru := l.pairRPCs(), u.pairRPCs()
				if !slices.Equal(rl.peer, ru.peer) || !slices.Equal(rl.role, ru.role) {
					t.Fatal("J1's pairs differ")
				}
				if (tc.tr == conn || tc.tr == mixed) && slices.Index(rl.role, roleReply) < 0 {
					t.Fatal("nothing paired by connection: the case tests nothing")
				}
			})
		}
	}
}

// TestStep1FromIndex: step 1's d per edge, summed by index as it finds
// each message's latest candidate parent, is bit for bit the mean of step
// 1's delays read back from the indexes message by message (the step as
// it was), for both methods, with untraced senders, windows that cut
// delays off, and a window wider than the trace.
func TestStep1FromIndex(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tr     *trace.Trace
		window time.Duration
	}{
		{"cdn", genScenario(t, "cdn", 20), 0},
		{"codeen", genScenario(t, "codeen", 2), 0},
		{"codeen, 5 ms window", genScenario(t, "codeen", 2), 5 * time.Millisecond},
		{"multitier", genScenario(t, "multitier", 10), 0},
		{"multitier, 1 h window", genScenario(t, "multitier", 10), time.Hour},
		{"children-d-cc", genScenario(t, "children-d-cc", 10), 0},
	} {
		for _, method := range []string{MethodJoint, MethodWAP5} {
			o := Options{Method: method, Window: tc.window}.Defaults()
			l := newLinker(tc.tr, o, nil)
			sum, cnt := make([]float64, len(l.edgeSrc)), make([]float64, len(l.edgeSrc))
			untraced, kept := 0, 0
			for i := range int32(l.count()) {
				send, recv := l.times(i)
				dt := int64(-1)
				if p := l.lastPos[i]; p >= 0 {
					if send != trace.Unknown {
						dt = send - l.insRecv[p]
					} else {
						dt, untraced = recv-l.byEdgeSend[p], untraced+1
					}
				}
				if dt >= 0 && dt <= l.x {
					sum[l.edge[i]] += float64(dt) / 1e9
					cnt[l.edge[i]]++
					kept++
				}
			}
			if kept == 0 || untraced == 0 && tc.name == "codeen" {
				t.Fatalf("%s, %s: %d delays, %d from untraced senders: the case tests little", tc.name, method, kept, untraced)
			}
			l.step1()
			for e := range l.d {
				want := 0.0
				if cnt[e] > 0 {
					want = sum[e] / cnt[e]
				}
				if want = l.floorDelay(want); math.Float64bits(l.d[e]) != math.Float64bits(want) {
					t.Errorf("%s, %s: edge %d: d %v, want %v", tc.name, method, e, l.d[e], want)
				}
			}
		}
	}
}
