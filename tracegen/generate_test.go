package tracegen

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wap5/trace"
)

func mustParse(t testing.TB, text string) *Config {
	t.Helper()
	cfg, err := ParseConfig(strings.NewReader(text), "test.gen")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return cfg
}

// trueTime inverts a node's clock: observed ns since the epoch → true ns
// since the start.
func trueTime(cfg *Config, n trace.NodeID, obs int64) float64 {
	nd := cfg.Nodes[n]
	x := float64(obs-int64(math.Round(cfg.Start*1e9))) - nd.Offset*1e9
	return x / (1 + nd.DriftPPM*1e-6)
}

const rpcConfig = `
seed 3
messages 3000
node cl client count=4
node S port=80 offset=250ms drift=40
node T port=81 offset=-1.5s drift=-30
node U untraced port=82
link * * delay=2ms
tracelet r from=cl think=uniform(0ms,20ms) parallel=5
  call S reply=normal(3ms,1ms)
    call T wait=normal(5ms,1ms) reply=exp(2ms)
      call U wait=1ms reply=4ms
    par
      call T wait=uniform(1ms,3ms) reply=1ms
      call T wait=uniform(1ms,3ms) reply=1ms
`

const sendConfig = `
seed 4
duration 5s
node a client
node b offset=10ms
node c untraced
node d drift=100
link a b delay=normal(10ms,1ms) back=normal(20ms,2ms)
link * * delay=exp(3ms)
tracelet mail from=a think=uniform(10ms,50ms) parallel=3
  send b wait=1ms
    send c wait=normal(4ms,1ms)
      send d wait=2ms
    send d prob=0.5 wait=uniform(0ms,1ms)
`

func TestGenerateGroundTruth(t *testing.T) {
	tests := []struct {
		name       string
		config     string
		perInst    []int // allowed message counts per instance
		untraced   string
		rpc        bool
		constDelay float64 // one-way delay of every message, seconds (0: not constant)
	}{
		{name: "rpc", config: rpcConfig, perInst: []int{10}, untraced: "U", rpc: true, constDelay: 0.002},
		{name: "send", config: sendConfig, perInst: []int{3, 4}, untraced: "c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, tc.config)
			cfg.Parents = true
			tr, sum, err := GenerateSummary(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Fatal(err)
			}
			if int64(len(tr.Messages)) != sum.Messages || sum.Messages == 0 {
				t.Fatalf("%d messages, summary says %d", len(tr.Messages), sum.Messages)
			}
			ids := map[int64]bool{}
			byTruth := map[int32][]int{}
			for i := range tr.Messages {
				m := &tr.Messages[i]
				if i > 0 && m.Time() < tr.Messages[i-1].Time() {
					t.Fatalf("message %d not time-sorted", i)
				}
				if ids[m.ID] || m.ID == trace.NoRef {
					t.Fatalf("message %d: id %d repeated or missing", i, m.ID)
				}
				ids[m.ID] = true
				if m.Truth == trace.NoRef {
					t.Fatalf("message %d without truth", i)
				}
				byTruth[m.Truth] = append(byTruth[m.Truth], i)
				src, dst := tr.NodeName(m.Src), tr.NodeName(m.Dst)
				if (m.Send == trace.Unknown) != (src == tc.untraced) || (m.Recv == trace.Unknown) != (dst == tc.untraced) {
					t.Fatalf("message %d %s→%s: send %d recv %d; only %s's ends must be -", i, src, dst, m.Send, m.Recv, tc.untraced)
				}
				if m.Send != trace.Unknown && m.Recv != trace.Unknown {
					net := trueTime(cfg, m.Dst, m.Recv) - trueTime(cfg, m.Src, m.Send)
					if net < -1 {
						t.Fatalf("message %d: negative true network delay %g ns", i, net)
					}
					if tc.constDelay > 0 && math.Abs(net-tc.constDelay*1e9) > 2 {
						t.Fatalf("message %d %s→%s: true delay %g ns, configured %g s (offsets applied wrongly?)", i, src, dst, net, tc.constDelay)
					}
				}
			}
			checkParents(t, tr)
			if int64(len(byTruth)) != sum.Instances {
				t.Fatalf("%d truth ids, %d instances", len(byTruth), sum.Instances)
			}
			for id, msgs := range byTruth {
				ok := false
				for _, n := range tc.perInst {
					ok = ok || len(msgs) == n
				}
				if !ok {
					t.Fatalf("instance %d has %d messages, want one of %v", id, len(msgs), tc.perInst)
				}
				if tc.rpc {
					checkRPC(t, cfg, tr, msgs)
				}
				checkCausal(t, cfg, tr, msgs)
			}
		})
	}
}

// checkParents: a parent= names a message of the same instance received by
// the sender before it sent (on the sender's clock).
func checkParents(t *testing.T, tr *trace.Trace) {
	t.Helper()
	byID := map[int64]*trace.Message{}
	for i := range tr.Messages {
		byID[tr.Messages[i].ID] = &tr.Messages[i]
	}
	roots := 0
	for i := range tr.Messages {
		m := &tr.Messages[i]
		x, ok := tr.Extra[int32(i)]
		if !ok {
			roots++
			continue
		}
		var pid int64
		if _, err := fmt.Sscanf(x, "parent=%d", &pid); err != nil {
			t.Fatalf("message %d: extra %q", m.ID, x)
		}
		p := byID[pid]
		if p == nil || p.Truth != m.Truth || p.Dst != m.Src {
			t.Fatalf("message %d: parent %d is not a message of the instance into its sender", m.ID, pid)
		}
		if p.Recv != trace.Unknown && m.Send != trace.Unknown && p.Recv > m.Send {
			t.Fatalf("message %d sent before its parent %d arrived", m.ID, pid)
		}
	}
	if roots == 0 {
		t.Fatal("no root messages")
	}
}

// checkRPC: every call has one return, from the callee back to the caller,
// sent after the callee received the call (same clock) and received after
// the caller sent it.
func checkRPC(t *testing.T, cfg *Config, tr *trace.Trace, msgs []int) {
	t.Helper()
	calls := map[int32]*trace.Message{}
	for _, i := range msgs {
		if m := &tr.Messages[i]; m.Kind == trace.KindCall {
			calls[m.Call] = m
		}
	}
	returns := 0
	for _, i := range msgs {
		m := &tr.Messages[i]
		if m.Kind != trace.KindReturn {
			continue
		}
		returns++
		c := calls[m.Call]
		if c == nil || c.Src != m.Dst || c.Dst != m.Src || c.SrcEP != m.DstEP || c.DstEP != m.SrcEP {
			t.Fatalf("return %d does not mirror its call", m.ID)
		}
		if c.Recv != trace.Unknown && m.Send < c.Recv || c.Send != trace.Unknown && m.Recv < c.Send {
			t.Fatalf("return %d precedes its call %d", m.ID, c.ID)
		}
	}
	if returns != len(calls) {
		t.Fatalf("%d calls, %d returns", len(calls), returns)
	}
}

// checkCausal: in true time, the instance's first message is sent first and
// no message is received before it is sent.
func checkCausal(t *testing.T, cfg *Config, tr *trace.Trace, msgs []int) {
	t.Helper()
	first := math.Inf(1)
	for _, i := range msgs {
		m := &tr.Messages[i]
		if m.Send != trace.Unknown {
			first = math.Min(first, trueTime(cfg, m.Src, m.Send))
		}
	}
	for _, i := range msgs {
		m := &tr.Messages[i]
		if m.Recv != trace.Unknown && trueTime(cfg, m.Dst, m.Recv) < first {
			t.Fatalf("message %d received before its instance began", m.ID)
		}
	}
}

func TestLoss(t *testing.T) {
	base := `
seed 9
messages 40000
node a client count=3
node b
link * * delay=1ms
tracelet x from=a think=uniform(0ms,10ms) parallel=6
  call b reply=normal(2ms,1ms)
`
	tests := []struct {
		name          string
		extra         string
		lo, hi        float64 // loss fraction bounds
		wantUnmatched bool
	}{
		{"none", "", 0, 0, false},
		{"independent 10%", "loss 0.1", 0.09, 0.11, true},
		{"sniffer fast enough", "sniffer rate=1e9 queue=64", 0, 0, false},
		{"sniffer too slow", "sniffer rate=200 queue=8", 0.2, 0.95, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, base+tc.extra+"\n")
			tr, sum, err := GenerateSummary(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Messages+sum.Lost != sum.Generated {
				t.Fatalf("written %d + lost %d != generated %d", sum.Messages, sum.Lost, sum.Generated)
			}
			frac := float64(sum.Lost) / float64(sum.Generated)
			if frac < tc.lo || frac > tc.hi {
				t.Fatalf("loss fraction %.4f outside [%g,%g]", frac, tc.lo, tc.hi)
			}
			calls := map[int32]int{}
			for _, m := range tr.Messages {
				calls[m.Call]++
			}
			unmatched := false
			for _, n := range calls {
				unmatched = unmatched || n != 2
			}
			if unmatched != tc.wantUnmatched {
				t.Fatalf("calls without returns: %v, want %v", unmatched, tc.wantUnmatched)
			}
		})
	}
}

// The streaming writer and the in-memory trace agree byte for byte.
func TestWriteMatchesGenerate(t *testing.T) {
	for _, text := range []string{rpcConfig, sendConfig, "parents\n" + rpcConfig} {
		var a, b bytes.Buffer
		if _, err := Write(&a, mustParse(t, text)); err != nil {
			t.Fatal(err)
		}
		tr, err := Generate(mustParse(t, text))
		if err != nil {
			t.Fatal(err)
		}
		if err := trace.WriteText(&b, tr); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			al, bl := strings.Split(a.String(), "\n"), strings.Split(b.String(), "\n")
			for i := range min(len(al), len(bl)) {
				if al[i] != bl[i] {
					t.Fatalf("line %d differs:\nWrite:     %s\nWriteText: %s", i+1, al[i], bl[i])
				}
			}
			t.Fatalf("lengths differ: %d vs %d lines", len(al), len(bl))
		}
		back, err := trace.ReadText(&a, "gen")
		if err != nil || len(back.Warnings) > 0 || len(back.Messages) != len(tr.Messages) {
			t.Fatalf("reading the output back: %v %v (%d vs %d messages)", err, back.Warnings, len(back.Messages), len(tr.Messages))
		}
	}
}

// Same seed, same trace; another seed, another trace.
func TestSeed(t *testing.T) {
	gen := func(seed uint64) string {
		cfg := mustParse(t, rpcConfig)
		cfg.Seed = seed
		var b bytes.Buffer
		if _, err := Write(&b, cfg); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if gen(1) != gen(1) {
		t.Fatal("same seed, different traces")
	}
	if gen(1) == gen(2) {
		t.Fatal("different seeds, same trace")
	}
}

func TestOverrides(t *testing.T) {
	cfg := mustParse(t, rpcConfig)
	for _, tl := range cfg.Tracelets {
		tl.Parallel = 1
	}
	cfg.Messages = 800
	if err := cfg.SetClock("S", ptr(0.0), ptr(0.0)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.SetClock("nope", ptr(1.0), nil); err == nil {
		t.Fatal("SetClock accepted an unknown node")
	}
	_, sum, err := GenerateSummary(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.MeanParallelism > 1.0001 {
		t.Fatalf("one worker, mean parallelism %g", sum.MeanParallelism)
	}
	if sum.Generated < 800 || sum.Generated > 808 {
		t.Fatalf("generated %d messages for a budget of 800", sum.Generated)
	}
	for _, c := range sum.Clocks {
		if c.Node == "S" && (c.OffsetS != 0 || c.DriftPPM != 0) {
			t.Fatalf("S clock %+v after SetClock(0,0)", c)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// The added delay at WS2 shows in WS2's true wait before calling AP.
func TestAddedDelay(t *testing.T) {
	for _, tc := range []struct {
		file string
		lo   float64
	}{{"multitier.gen", 0.02}, {"multitier-delay.gen", 0.2}} {
		cfg, err := ParseConfigFile(filepath.Join("..", "testdata", "gen", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Duration, cfg.Messages = 0, 20000
		tr, err := Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ws2, _ := tr.LookupNode("WS2")
		auth, _ := tr.LookupNode("AUTH")
		lastAuthReturn := map[int32]int64{}
		var sum float64
		n := 0
		for _, m := range tr.Messages {
			switch {
			case m.Dst == ws2 && m.Src == auth && m.Kind == trace.KindReturn:
				lastAuthReturn[m.Truth] = m.Recv
			case m.Src == ws2 && m.Kind == trace.KindCall && strings.HasPrefix(tr.NodeName(m.Dst), "AP"):
				if r, ok := lastAuthReturn[m.Truth]; ok {
					sum += float64(m.Send-r) / 1e9
					n++
				}
			}
		}
		if n == 0 {
			t.Fatalf("%s: no WS2 → AP calls", tc.file)
		}
		mean := sum / float64(n)
		if mean < tc.lo || mean > tc.lo+0.1 {
			t.Fatalf("%s: WS2 waits %.3f s between AUTH and AP, want ≈ %.2f+", tc.file, mean, tc.lo)
		}
	}
}

func TestShippedConfigs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "gen", "*.gen"))
	if len(files) < 7 {
		t.Fatalf("found %d shipped configs", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := ParseConfigFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Duration, cfg.Messages = 0, 3000
			tr, sum, err := GenerateSummary(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil || len(tr.Messages) < 2000 {
				t.Fatalf("%v, %d messages", err, len(tr.Messages))
			}
			if sum.Unobservable != 0 {
				t.Fatalf("%d messages between untraced nodes", sum.Unobservable)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"seed x\n", "test.gen:1: seed"},
		{"node a\nnode a\n", "test.gen:2: node \"a\" declared twice"},
		{"node a\n  call a\n", "test.gen:2: indented"},
		{"node a\ntracelet t from=a\n  call b\n", "test.gen:3: target \"b\""},
		{"node a\ntracelet t from=a\n  call a wait=normal(1ms)\n", "test.gen:3: wait"},
		{"node a\ntracelet t from=a\n  call a wait=weird(1ms)\n", "unknown distribution"},
		{"node a\ntracelet t from=a\n  par\n", "test.gen:3: par without"},
		{"node a\nlink a zz delay=1ms\n", "test.gen:2: link: no node"},
		{"node a\nlink a a\n", "test.gen:2: link wants"},
		{"node a port=99999\n", "test.gen:1: port"},
		{"node a offset=1x\n", "test.gen:1: offset"},
		{"loss 2\n", "test.gen:1: loss"},
		{"bogus 1\n", "test.gen:1: unknown keyword"},
		{"node a\n", "no tracelets"},
		{"node a\ntracelet t from=a\n  send a wait=1ms reply=2ms\n", "test.gen:3: send does not take reply="},
		{"node a\ntracelet t from=a think=uniform(2s,1s)\n  send a\n", "test.gen:2: think"},
	}
	for _, tc := range tests {
		_, err := ParseConfig(strings.NewReader(tc.text), "test.gen")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.text, err, tc.want)
		}
	}
}

func TestNoStop(t *testing.T) {
	cfg := mustParse(t, "node a\ntracelet t from=a\n  send a\n")
	if _, err := Generate(cfg); err == nil {
		t.Fatal("generated without duration or message budget")
	}
	cfg = mustParse(t, "duration 1s\nnode a untraced\nnode b untraced\ntracelet t from=a\n  send b\n")
	if _, err := Generate(cfg); err == nil {
		t.Fatal("generated with only untraced nodes")
	}
}

func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "gen", "*.gen"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil {
			f.Add(string(b))
		}
	}
	f.Add(rpcConfig)
	f.Add(sendConfig)
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := ParseConfig(strings.NewReader(text), "fuzz.gen")
		if err != nil {
			return
		}
		workers := 0
		for _, tl := range cfg.Tracelets {
			workers += tl.Parallel
		}
		if workers > 2000 || len(cfg.Nodes) > 5000 {
			return
		}
		cfg.Messages, cfg.Duration = 300, 1
		tr, err := Generate(cfg)
		if err != nil {
			return
		}
		if err := tr.CheckValid(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTargetsAndLinks(t *testing.T) {
	const cfgText = `
seed 7
messages 20000
node c client count=4 region=eu,us
node s count=4 port=80 region=eu,us
node w port=81
node v port=82
link * * delay=1ms
link c s delay=10ms back=30ms
link @eu @eu delay=2ms
tracelet a from=c think=uniform(0ms,5ms) parallel=4
  call s@same
tracelet b from=c think=uniform(0ms,5ms) parallel=4
  call w:3|v:1
`
	cfg := mustParse(t, cfgText)
	tr, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	region := map[string]string{}
	for _, n := range cfg.Nodes {
		region[n.Name] = n.Region
	}
	count := map[string]int{}
	for _, m := range tr.Messages {
		src, dst := tr.NodeName(m.Src), tr.NodeName(m.Dst)
		net := float64(m.Recv-m.Send) / 1e6
		switch {
		case strings.HasPrefix(dst, "s"):
			if region[src] != region[dst] {
				t.Fatalf("@same: %s (%s) called %s (%s)", src, region[src], dst, region[dst])
			}
			// Node/group rules (c s) beat region rules (@eu @eu).
			if math.Abs(net-10) > 1e-6 {
				t.Fatalf("%s→%s took %g ms, want 10 (link c s)", src, dst, net)
			}
		case strings.HasPrefix(src, "s"):
			if math.Abs(net-30) > 1e-6 {
				t.Fatalf("%s→%s took %g ms, want 30 (back=)", src, dst, net)
			}
		case m.Kind == trace.KindCall:
			count[dst]++
			if math.Abs(net-1) > 1e-6 {
				t.Fatalf("%s→%s took %g ms, want 1 (link * *)", src, dst, net)
			}
		}
	}
	if r := float64(count["w"]) / float64(count["v"]); r < 2.6 || r > 3.4 {
		t.Fatalf("weights 3:1 gave %d:%d", count["w"], count["v"])
	}
}

// TestConnections: calls reuse persistent connections from random ephemeral
// ports, never two calls at once on one connection; uses=1 opens a new
// connection per call; the ports do not follow each other in call order
// (they would leak which calls belong together).
func TestConnections(t *testing.T) {
	for _, tc := range []struct {
		name     string
		line     string
		maxReuse float64 // distinct connections / calls at most
		minReuse float64 // at least
		bad      string  // a parse error instead
	}{
		{name: "pool", line: "", maxReuse: 0.2},
		{name: "short idle", line: "connections idle=1ms", minReuse: 0.9},
		{name: "one use", line: "connections uses=1", minReuse: 1},
		{name: "ten uses", line: "connections uses=10 idle=10s", minReuse: 0.1, maxReuse: 0.3},
		{name: "bad key", line: "connections max=3", bad: `unknown key "max"`},
		{name: "bad uses", line: "connections uses=0", bad: "uses"},
		{name: "bad idle", line: "connections idle=-1s", bad: "idle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig(strings.NewReader(tc.line+"\n"+rpcConfig), "test.gen")
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err = %v, want %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tr, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			type conn struct{ a, b trace.EndpointID }
			type use struct{ from, to float64 } // true times at the caller
			calls := map[int32]int{}
			for i, m := range tr.Messages {
				if m.Kind == trace.KindCall {
					calls[m.Call] = i
				}
			}
			uses := map[conn][]use{}
			var ports []int // caller ports in call order, per caller node
			byNode := map[trace.NodeID][]int{}
			for _, m := range tr.Messages {
				if m.Kind != trace.KindReturn {
					continue
				}
				c := tr.Messages[calls[m.Call]]
				if c.Send == trace.Unknown {
					continue
				}
				from := trueTime(cfg, c.Src, c.Send)
				to := from
				if m.Recv != trace.Unknown {
					to = trueTime(cfg, m.Dst, m.Recv)
				}
				k := conn{c.SrcEP, c.DstEP}
				uses[k] = append(uses[k], use{from, to})
				name := tr.EndpointName(c.SrcEP)
				var p int
				fmt.Sscanf(name[strings.LastIndexByte(name, ':')+1:], "%d", &p)
				byNode[c.Src] = append(byNode[c.Src], p)
			}
			n := 0
			for k, us := range uses {
				n += len(us)
				for i := 1; i < len(us); i++ {
					// Uses are in call-id order, which is instance order,
					// not time order: check every pair nearby.
					for j := 0; j < i; j++ {
						if us[i].from < us[j].to && us[j].from < us[i].to {
							t.Fatalf("connection %s→%s carries two calls at once: %v and %v",
								tr.EndpointName(k.a), tr.EndpointName(k.b), us[j], us[i])
						}
					}
				}
			}
			r := float64(len(uses)) / float64(n)
			if tc.maxReuse > 0 && r > tc.maxReuse || r < tc.minReuse {
				t.Errorf("%d connections for %d calls (%.2f), want in [%.2f, %.2f]", len(uses), n, r, tc.minReuse, tc.maxReuse)
			}
			seq, pairs := 0, 0
			for _, ps := range byNode {
				ports = ps
				for i := 1; i < len(ports); i++ {
					if ports[i] != ports[i-1] {
						pairs++
						if ports[i] == ports[i-1]+1 {
							seq++
						}
					}
				}
			}
			if pairs > 20 && float64(seq) > 0.01*float64(pairs) {
				t.Errorf("%d of %d changes of port are to the next port: ports are sequential", seq, pairs)
			}
		})
	}
}
