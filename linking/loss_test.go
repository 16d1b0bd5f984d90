package linking

import (
	"slices"
	"strings"
	"testing"

	"wap5/trace"
	"wap5/tracegen"
)

// lossConfig has one path shape of 8 messages, so an instance is intact
// when all 8 of its messages are in the trace.
const lossConfig = `
seed 21
duration 40s
node client client
node W port=80
node A port=81
node D port=82
link * * delay=normal(0.3ms,0.05ms)
tracelet t from=client think=uniform(0ms,300ms) parallel=6
  call W reply=normal(10ms,2ms)
    call A wait=normal(30ms,5ms) reply=normal(10ms,2ms)
      call D wait=normal(20ms,4ms) reply=normal(5ms,1ms)
    call D wait=normal(30ms,5ms) reply=normal(5ms,1ms)
`

// intactFound is the share of the instances with none of their messages
// lost that the linker recovers exactly.
func intactFound(t *testing.T, loss float64) float64 {
	t.Helper()
	cfg, err := tracegen.ParseConfig(strings.NewReader(lossConfig), "loss.gen")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loss = loss
	tr, err := tracegen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Link(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := func(ms []int32) string {
		s := slices.Clone(ms)
		slices.Sort(s)
		b := make([]byte, 0, 8*len(s))
		for _, x := range s {
			b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		}
		return string(b)
	}
	byTruth := map[int32][]int32{}
	for i := range tr.Messages {
		byTruth[tr.Messages[i].Truth] = append(byTruth[tr.Messages[i].Truth], int32(i))
	}
	found := map[string]bool{}
	for _, in := range res.Instances {
		found[key(in.Messages)] = true
	}
	n, ok := 0, 0
	for _, ms := range byTruth {
		if len(ms) != 8 {
			continue
		}
		n++
		if found[key(ms)] {
			ok++
		}
	}
	if n == 0 {
		t.Fatal("no intact instance")
	}
	return float64(ok) / float64(n)
}

// TestLossBreaksOnlyItsOwn: a lost request or return breaks the path it
// belongs to, not its neighbours (Project 5 Figure 21): the instances with
// nothing lost are recovered about as often as without any loss. (Before
// half spans and the end of orphan replies' paths, 3% loss cut that share
// from 0.87 to 0.50 on gen's multitier.)
func TestLossBreaksOnlyItsOwn(t *testing.T) {
	base := intactFound(t, 0)
	for _, loss := range []float64{0.01, 0.05} {
		got := intactFound(t, loss)
		t.Logf("loss %.2f: %.3f of the intact instances found exactly (%.3f without loss)", loss, got, base)
		if got < base-0.05 {
			t.Errorf("loss %.2f: %.3f of the intact instances found exactly, want ≥ %.3f (no loss) − 0.05", loss, got, base)
		}
	}
}

// TestHalfSpans: which unpaired messages stand for half spans.
func TestHalfSpans(t *testing.T) {
	tr := &trace.Trace{}
	c, w := tr.Node("c"), tr.Node("w")
	ce, we := tr.Endpoint("10.0.0.1:40000"), tr.Endpoint("10.0.0.2:80")
	for i, k := range []trace.Kind{trace.KindCall, trace.KindReturn, trace.KindCall, trace.KindReturn} {
		m := trace.Message{Send: int64(i+1) * 1e6, Recv: int64(i+1)*1e6 + 1e5, ID: int64(i + 1), Kind: k, Call: int32(10 + i), Truth: trace.NoRef}
		if k == trace.KindCall {
			m.Src, m.Dst, m.SrcEP, m.DstEP = c, w, ce, we
		} else {
			m.Src, m.Dst, m.SrcEP, m.DstEP = w, c, we, ce
		}
		tr.Messages = append(tr.Messages, m)
	}
	// Calls 10 and 12 and returns 11 and 13: no id pairs, and the
	// connection must not pair them either (each lost its peer).
	l := newLinker(tr, Options{}.Defaults(), nil)
	j := &joint{linker: l, r: l.pairRPCs()}
	j.markHalves()
	want := []uint8{halfOpen, halfHead, halfOpen, halfHead}
	for i := range want {
		if j.r.peer[i] >= 0 {
			t.Errorf("message %d paired with %d", i, j.r.peer[i])
		}
		if j.half[i] != want[i] {
			t.Errorf("message %d: half %d, want %d", i, j.half[i], want[i])
		}
	}
}
