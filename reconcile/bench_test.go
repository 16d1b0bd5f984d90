package reconcile

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"syscall"
	"testing"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

// BenchmarkReconcileLogs reconciles real libsockcap logs: the directory in
// $WAP5_BENCH_LOGS (bench/reconcile.sh makes one: ~1M messages between two
// processes over 16 loopback connections), else the small fixture.
func BenchmarkReconcileLogs(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		dir = "testdata/logs/loopback"
	}
	var n int
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		t, err := Reconcile(Inputs{Logs: []string{dir}}, Options{})
		cpu += cpuTime() - c0
		if err != nil {
			b.Fatal(err)
		}
		n = len(t.Messages)
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "msgs/cpu-s")
}

// BenchmarkReconcileWrite is BenchmarkReconcileLogs plus writing the binary
// trace.
func BenchmarkReconcileWrite(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		dir = "testdata/logs/loopback"
	}
	var n int
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		t, err := Reconcile(Inputs{Logs: []string{dir}}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := trace.WriteBinary(io.Discard, t); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
		n = len(t.Messages)
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "msgs/cpu-s")
}

// synthSource generates the observations of one host of a CoDeeN-like
// system on the fly: every tick, every connection carries one request and
// one response, in its own time slot (so each host's observations are in
// time order without sorting). Nothing is stored, so the benchmark measures
// the matcher, not a log decoder.
type synthSource struct {
	obs   *Observer
	conns []synthConn // this host's connections, by slot
	ticks int
	tick  int
	i     int // index into conns
	step  int // 0..3: the events of one exchange seen by this host
	open  bool
	slots int
}

type synthConn struct {
	slot          int
	client        bool
	local, remote libsockcap.Endpoint
	socket        uint64
	req, resp     int64
}

const (
	synthSlot = 100_000 // ns per connection slot
	synthLat  = 20_000  // one-way network delay
	synthProc = 30_000  // server time
)

func (s *synthSource) Name() string       { return s.obs.Host }
func (s *synthSource) Err() error         { return nil }
func (s *synthSource) Warnings() []string { return nil }

func (s *synthSource) Next(o *Observation) bool {
	for {
		if s.tick >= s.ticks {
			return false
		}
		if s.i >= len(s.conns) {
			s.i, s.tick = 0, s.tick+1
			continue
		}
		c := &s.conns[s.i]
		base := int64(1.7e18) + int64(s.tick*s.slots+c.slot)*synthSlot
		*o = Observation{Proto: libsockcap.ProtoTCP, Stream: true, Observer: s.obs, Socket: c.socket,
			Local: c.local, Remote: c.remote, Offset: -1, Origin: OriginLog}
		if s.tick == 0 && s.step == 0 && !s.open {
			s.open = true
			o.Op, o.Time = OpOpen, base-1
			o.Role = RoleServer
			if c.client {
				o.Role = RoleClient
			}
			return true
		}
		switch {
		case c.client && s.step == 0:
			o.Op, o.Time, o.Bytes = OpSend, base, c.req
		case c.client:
			o.Op, o.Time, o.Bytes = OpRecv, base+2*synthLat+synthProc, c.resp
		case s.step == 0:
			o.Op, o.Time, o.Bytes = OpRecv, base+synthLat, c.req
		default:
			o.Op, o.Time, o.Bytes = OpSend, base+synthLat+synthProc, c.resp
		}
		if s.step == 0 {
			s.step = 1
		} else {
			s.step, s.open = 0, false
			s.i++
		}
		return true
	}
}

// codeenSources: hosts × perHost client connections to random other hosts,
// messages in all (two per exchange).
func codeenSources(hosts, perHost, messages int) []Source {
	nconn := hosts * perHost
	ticks := messages / (2 * nconn)
	srcs := make([]*synthSource, hosts)
	for h := range srcs {
		srcs[h] = &synthSource{obs: &Observer{Host: fmt.Sprintf("node%03d", h), Exe: "/usr/bin/proxy", Pid: int32(1000 + h)},
			ticks: ticks, slots: nconn}
	}
	addr := func(h, port int) libsockcap.Endpoint {
		return libsockcap.Endpoint{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(h >> 8), byte(h), 1}), uint16(port))}
	}
	seed := uint32(1)
	for slot := 0; slot < nconn; slot++ {
		cl := slot / perHost
		seed = seed*1664525 + 1013904223
		sv := (cl + 1 + int(seed>>8)%(hosts-1)) % hosts
		ce, se := addr(cl, 40000+slot), addr(sv, 3128)
		req, resp := int64(200+slot%300), int64(1000+slot%5000)
		srcs[cl].conns = append(srcs[cl].conns, synthConn{slot: slot, client: true, local: ce, remote: se, socket: uint64(slot + 1), req: req, resp: resp})
		srcs[sv].conns = append(srcs[sv].conns, synthConn{slot: slot, local: se, remote: ce, socket: uint64(slot + 1), req: req, resp: resp})
	}
	out := make([]Source, hosts)
	for h, s := range srcs {
		sort.Slice(s.conns, func(i, j int) bool { return s.conns[i].slot < s.conns[j].slot })
		out[h] = s
	}
	return out
}

// BenchmarkReconcileCoDeeN: a CoDeeN-sized reconciliation (WAP5 Table 5:
// 4.7M messages, 115 hosts) on synthetic observations; reports CPU seconds
// per run. WAP5_LONG=1 for the full size, else 470k messages.
func BenchmarkReconcileCoDeeN(b *testing.B) {
	msgs := 470_000
	if os.Getenv("WAP5_LONG") != "" {
		msgs = 4_700_000
	}
	for _, v := range []struct {
		name string
		opts Options
	}{{"plain", Options{}}, {"return-memory", Options{ReturnMemory: true}}} {
		b.Run(v.name, func(b *testing.B) {
			var n int
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				srcs := codeenSources(115, 4, msgs)
				c0 := cpuTime()
				t, err := ReconcileSources(srcs, v.opts)
				cpu += cpuTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				n = len(t.Messages)
				if n < msgs*99/100 {
					b.Fatalf("%d messages, want about %d", n, msgs)
				}
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "msgs/cpu-s")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSyntheticCoDeeN checks the benchmark's workload reconciles exactly:
// every exchange gives a call and its return, both ends timed, with the
// generator's network delay, between the right hosts.
func TestSyntheticCoDeeN(t *testing.T) {
	const hosts, per, msgs = 20, 3, 6000
	tr, err := ReconcileSources(codeenSources(hosts, per, msgs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != msgs {
		t.Fatalf("%d messages, want %d", len(tr.Messages), msgs)
	}
	calls := 0
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if m.Send == trace.Unknown || m.Recv == trace.Unknown || m.Recv-m.Send != synthLat {
			t.Fatalf("message %s: want both times %d ns apart", trace.AppendTextLine(nil, tr, i), synthLat)
		}
		if m.Kind == trace.KindCall {
			calls++
		}
		if i > 0 && m.Time() < tr.Messages[i-1].Time() {
			t.Fatalf("message %d out of time order", i)
		}
	}
	if calls != msgs/2 || len(tr.Nodes) != hosts {
		t.Fatalf("%d calls, %d nodes; want %d, %d", calls, len(tr.Nodes), msgs/2, hosts)
	}
}

// BenchmarkDecodeLogs only decodes the logs of BenchmarkReconcileLogs (the
// libsockcap reader's share of the work), reporting CPU seconds.
func BenchmarkDecodeLogs(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		dir = "testdata/logs/loopback"
	}
	files, err := libsockcap.FindLogs(dir)
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		for _, f := range files {
			sc, err := libsockcap.Open(f)
			if err != nil {
				b.Fatal(err)
			}
			for sc.Scan() {
			}
			sc.Close()
		}
		cpu += cpuTime() - c0
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkIngestLogs is the log side of reconcile alone: every log read
// twice as step 0 and the matcher read it (logSource.reread, then the
// source itself), observations made and dropped, reporting CPU seconds.
// $WAP5_BENCH_STEP0 (a fraction, default 0.6) is how much of each log the
// step-0 reading takes (on the CoDeeN-sized set its stop rule fires after
// ≈ 60 % of the events).
func BenchmarkIngestLogs(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		dir = "testdata/logs/loopback"
	}
	frac := 0.6
	if f := os.Getenv("WAP5_BENCH_STEP0"); f != "" {
		fmt.Sscan(f, &frac)
	}
	if os.Getenv("WAP5_BENCH_REREAD") == "tee" {
		defer func(v bool) { rereadByPath = v }(rereadByPath)
		rereadByPath = false
	}
	files, err := libsockcap.FindLogs(dir)
	if err != nil {
		b.Fatal(err)
	}
	// events per log, for the step-0 share
	counts := make([]int, len(files))
	for i, f := range files {
		sc, err := libsockcap.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		for sc.Scan() {
			counts[i]++
		}
		sc.Close()
	}
	var cpu time.Duration
	var obs int
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		srcs := make([]*logSource, len(files))
		var o Observation
		for j, f := range files {
			s, err := NewLogSource(f)
			if err != nil {
				b.Fatal(err)
			}
			srcs[j] = s.(*logSource)
			c, err := srcs[j].reread()
			if err != nil {
				b.Fatal(err)
			}
			// step 0's reading: the first frac of the log's observations
			n := int(frac * float64(counts[j]))
			for k := 0; k < n && c.Next(&o); k++ {
			}
			c.(*logSource).stop()
		}
		obs = 0
		for _, s := range srcs {
			for s.Next(&o) {
				obs++
			}
		}
		cpu += cpuTime() - c0
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(obs), "obs")
}

// BenchmarkStep0Logs is step 0 alone on real logs (estimateClocks: the
// offset pass over every log of $WAP5_BENCH_LOGS, read until its stop
// rule), reporting CPU seconds and how many sources got an offset.
func BenchmarkStep0Logs(b *testing.B) {
	dir := os.Getenv("WAP5_BENCH_LOGS")
	if dir == "" {
		dir = "testdata/logs/testbed"
	}
	files, err := libsockcap.FindLogs(dir)
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	var off int
	for i := 0; i < b.N; i++ {
		srcs := make([]Source, len(files))
		for j, f := range files {
			if srcs[j], err = NewLogSource(f); err != nil {
				b.Fatal(err)
			}
		}
		c0 := cpuTime()
		rel, _ := estimateClocks(srcs, Options{})
		cpu += cpuTime() - c0
		off = 0
		for _, o := range rel.off {
			if o != 0 {
				off++
			}
		}
		for _, s := range srcs {
			s.(*logSource).stop()
		}
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(off), "offsets")
}
