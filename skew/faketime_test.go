package skew

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"wap5/trace"
)

// The faketime test: a client process whose clock libfaketime shifts by a
// few seconds (and speeds up) talks over loopback TCP to a server on the
// true clock. The client also reads the real time with the clock_gettime
// system call, which libfaketime does not intercept, so the true error of
// its clock is known at every message. Two ways to get a trace:
//
//   - selflog: both programs log their own send and receive times, which
//     are turned into a trace directly (no capture involved);
//   - libsockcap: both run under `wap5 run` and `wap5 reconcile` builds the
//     trace from libsockcap's logs. libsockcap reads CLOCK_REALTIME through
//     libc's clock_gettime, which libfaketime interposes when both are
//     preloaded, so its timestamps carry the faked clock like the
//     program's own.
//
// Every client timestamp converted with the estimate must land within 1 ms
// (offset only) or 5 ms (with drift) of the real time. The drift case is
// time-compressed: 6000 ppm for 10 s gives the 60 ms of 100 ppm over 10
// minutes; WAP5_LONG=1 runs the real thing (+5 s, 100 ppm, 10 minutes).

type faketimeCase struct {
	name     string
	spec     string  // faketime -f argument
	trips    int     // round trips
	interval float64 // s between them
	limit    float64 // s, allowed error at every message
}

func faketimeCases() []faketimeCase {
	cs := []faketimeCase{
		{name: "offset", spec: "+5s", trips: 100, interval: 0.01, limit: 0.001},
		{name: "drift", spec: "+5s x1.006", trips: 200, interval: 0.05, limit: 0.005},
	}
	if os.Getenv("WAP5_LONG") != "" {
		cs = append(cs, faketimeCase{name: "drift-10min", spec: "+5s x1.0001", trips: 1200, interval: 0.5, limit: 0.005})
	}
	return cs
}

func needFaketime(t *testing.T) (python, faketime string) {
	t.Helper()
	python = "/usr/bin/python3" // not a pyenv shim: one process, libc's clock
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			t.Skip("python3 missing (scripts/install-deps.sh installs it)")
		}
	}
	faketime, err := exec.LookPath("faketime")
	if err != nil {
		t.Skip("faketime missing (Debian packages faketime and libfaketime; scripts/install-deps.sh installs them)")
	}
	return python, faketime
}

// clientEvent is one client log line: faked and real time of a send or
// receive.
type clientEvent struct {
	send       bool
	id         int
	fake, real int64
}

func readLog(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fl := strings.Fields(sc.Text()); len(fl) > 0 {
			out = append(out, fl)
		}
	}
	return out
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func clientEvents(t *testing.T, path string) []clientEvent {
	var evs []clientEvent
	for _, f := range readLog(t, path) {
		if len(f) != 4 {
			t.Fatalf("%s: bad line %q", path, f)
		}
		evs = append(evs, clientEvent{send: f[0] == "send", id: int(atoi(t, f[1])), fake: atoi(t, f[2]), real: atoi(t, f[3])})
	}
	return evs
}

// selfLogTrace turns the programs' own logs into a trace: request i goes
// from cli (its send time) to srv (its receive time), the reply back.
func selfLogTrace(t *testing.T, cliLog, srvLog string) *trace.Trace {
	tr := trace.New()
	cli, srv := tr.Node("cli"), tr.Node("srv")
	srvAt := map[string]int64{}
	for _, f := range readLog(t, srvLog) {
		srvAt[f[0]+" "+f[1]] = atoi(t, f[2])
	}
	for _, e := range clientEvents(t, cliLog) {
		m := trace.Message{ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef, Bytes: 8}
		if e.send {
			m.Src, m.Dst, m.Send = cli, srv, e.fake
			m.Recv = srvAt[fmt.Sprintf("recv %d", e.id)]
		} else {
			m.Src, m.Dst, m.Recv = srv, cli, e.fake
			m.Send = srvAt[fmt.Sprintf("send %d", e.id)]
		}
		if m.Send == 0 || m.Recv == 0 {
			t.Fatalf("server log lacks message %d", e.id)
		}
		tr.Add(m)
	}
	tr.Sort()
	return tr
}

// checkClock estimates the clocks of tr against srv and checks every client
// event's corrected time against the real time.
func checkClock(t *testing.T, tr *trace.Trace, evs []clientEvent, limit float64) {
	t.Helper()
	res, err := Estimate(tr, Options{Reference: "srv"})
	if err != nil {
		t.Fatal(err)
	}
	cli, ok := tr.LookupNode("cli")
	if !ok {
		t.Fatalf("no node cli in the trace (nodes %v)", tr.Nodes)
	}
	ne := res.Nodes[cli]
	if ne.Status != Corrected {
		t.Fatalf("cli: %v; warnings %q", ne.Status, res.Warnings)
	}
	cr := NewCorrector(res.Corrections())
	// The truth: the client's clock error against real time is a line
	// (libfaketime's offset and rate); fit it, leaving out the few events
	// where the process was preempted between reading the two clocks.
	truth := fitTruth(evs)
	worst, worstAt := 0.0, 0.0
	for _, e := range evs {
		est := float64(e.fake-cr.ToReference(cli, e.fake)) / 1e9
		if d := math.Abs(est - truth.at(float64(e.real-evs[0].real))/1e9); d > worst {
			worst, worstAt = d, float64(e.real-evs[0].real)/1e9
		}
	}
	first, last := truth.at(0)/1e9, truth.at(float64(evs[len(evs)-1].real-evs[0].real))/1e9
	t.Logf("%s: true clock error %.6f s → %.6f s (%.1f ppm); estimate %.6f s at T0, drift %.1f ppm, bound %.6f s; worst error %.6f s (at %.1f s) over %d timestamps",
		t.Name(), first, last, truth.b*1e6, float64(ne.Offset)/1e9, ne.DriftPPM, float64(ne.Error)/1e9, worst, worstAt, len(evs))
	if worst > limit {
		t.Errorf("worst error %.6f s > %.3f s", worst, limit)
		if math.Abs(float64(ne.Offset)/1e9) < 1 && math.Abs(first) > 4.9 {
			t.Errorf("the trace shows no offset although the client's clock was %.3f s off: its timestamps do not "+
				"carry libfaketime's clock (does the capture read the vDSO or the clock_gettime system call directly?)", first)
		}
	}
	if math.Abs(first) < 4.9 {
		t.Errorf("the client's clock was off by only %.6f s: libfaketime did not take", first)
	}
}

// fitTruth fits fake − real against real − real₀ (ns) robustly (Theil–Sen:
// the median of pairwise slopes, then the median intercept), so that the
// events where the process was preempted between reading the two clocks,
// common on a loaded machine, do not bend the truth.
func fitTruth(evs []clientEvent) line {
	step := max(1, len(evs)/400)
	var xs, ys []float64
	for k := 0; k < len(evs); k += step {
		xs = append(xs, float64(evs[k].real-evs[0].real))
		ys = append(ys, float64(evs[k].fake-evs[k].real))
	}
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] != xs[i] {
				slopes = append(slopes, (ys[j]-ys[i])/(xs[j]-xs[i]))
			}
		}
	}
	b := median(slopes)
	icp := make([]float64, len(xs))
	for i := range xs {
		icp[i] = ys[i] - b*xs[i]
	}
	return line{a: median(icp), b: b}
}

func runPair(t *testing.T, dir string, server, client []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, server[0], server[1:]...)
	srv.Dir = dir
	var srvErr strings.Builder
	srv.Stderr = &srvErr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	cl := exec.CommandContext(ctx, client[0], client[1:]...)
	cl.Dir = dir
	if out, err := cl.CombinedOutput(); err != nil {
		srv.Process.Kill()
		srv.Wait()
		t.Fatalf("client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srvErr.String())
	}
}

func TestFaketimeSelfLog(t *testing.T) {
	t.Parallel()
	python, faketime := needFaketime(t)
	scripts, _ := filepath.Abs("testdata/faketime")
	for _, tc := range faketimeCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			runPair(t, dir,
				[]string{python, filepath.Join(scripts, "server.py"), "port", "srv.log"},
				[]string{faketime, "-f", tc.spec, python, filepath.Join(scripts, "client.py"), "port", "cli.log",
					strconv.Itoa(tc.trips), fmt.Sprint(tc.interval)})
			tr := selfLogTrace(t, filepath.Join(dir, "cli.log"), filepath.Join(dir, "srv.log"))
			checkClock(t, tr, clientEvents(t, filepath.Join(dir, "cli.log")), tc.limit)
		})
	}
}

// wap5Bin finds bin/wap5 and bin/libsockcap.so ($WAP5_BIN, as make test
// sets it, else ../bin).
func wap5Bin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WAP5_BIN")
	if dir == "" {
		dir, _ = filepath.Abs("../bin")
	}
	for _, f := range []string{"wap5", "libsockcap.so"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			if os.Getenv("WAP5_BIN") != "" {
				t.Fatalf("%s/%s missing although WAP5_BIN is set", dir, f)
			}
			t.Skipf("%s/%s missing: run make (or set WAP5_BIN) for the capture part of the faketime test", dir, f)
		}
	}
	for _, sub := range []string{"run", "reconcile"} {
		if out, err := exec.Command(filepath.Join(dir, "wap5"), sub, "--help").CombinedOutput(); err != nil {
			t.Skipf("%s/wap5 %s is not available yet (%v: %s)", dir, sub, err, strings.TrimSpace(string(out)))
		}
	}
	return dir
}

func TestFaketimeLibsockcap(t *testing.T) {
	t.Parallel()
	faketimeCapture(t, nil, nil, nil)
}

// TestFaketimeNetns is the same through two hosts: network namespaces of
// our own joined by a veth pair (10.202.0.1 server, 10.202.0.2 client),
// reconciled without a hint about the clock difference.
func TestFaketimeNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("faketime across network namespaces needs root (ip netns)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("faketime across network namespaces needs ip (iproute2)")
	}
	id := os.Getpid()
	a, b := fmt.Sprintf("w5fa%d", id), fmt.Sprintf("w5fb%d", id)
	va, vb := fmt.Sprintf("w5va%d", id%100000), fmt.Sprintf("w5vb%d", id%100000)
	cleanup := func() {
		exec.Command("ip", "netns", "del", a).Run()
		exec.Command("ip", "netns", "del", b).Run()
	}
	cleanup()
	t.Cleanup(cleanup)
	for _, c := range [][]string{
		{"netns", "add", a}, {"netns", "add", b},
		{"link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b},
		{"-n", a, "addr", "add", "10.202.0.1/24", "dev", va}, {"-n", b, "addr", "add", "10.202.0.2/24", "dev", vb},
		{"-n", a, "link", "set", va, "up"}, {"-n", b, "link", "set", vb, "up"},
		{"-n", a, "link", "set", "lo", "up"}, {"-n", b, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", c...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", c, err, out)
		}
	}
	env := []string{"env", "WAP5_FT_ADDR=10.202.0.1"}
	faketimeCapture(t, append([]string{"ip", "netns", "exec", a}, env...), append([]string{"ip", "netns", "exec", b}, env...), []string{})
}

// faketimeCapture runs the faketime pair under wap5 run (each command
// prefixed by its wrapper), reconciles the logs (with extra reconcile
// arguments; nil means the default --window 60s) and checks the estimate.
func faketimeCapture(t *testing.T, srvWrap, cliWrap, reconcileArgs []string) {
	python, faketime := needFaketime(t)
	bin := wap5Bin(t)
	wap5 := filepath.Join(bin, "wap5")
	scripts, _ := filepath.Abs("testdata/faketime")
	if reconcileArgs == nil {
		// the merge window exceeds the clock difference (5 s here)
		reconcileArgs = []string{"--window", "60s"}
	}
	for _, tc := range faketimeCases() {
		t.Run(tc.name, func(t *testing.T) {
			if srvWrap == nil {
				t.Parallel()
			}
			dir := t.TempDir()
			runPair(t, dir,
				append(append([]string{}, srvWrap...), wap5, "run", "--out", "logs", "--node", "srv", "--", python, filepath.Join(scripts, "server.py"), "port", "srv.log"),
				append(append([]string{}, cliWrap...), wap5, "run", "--out", "logs", "--node", "cli", "--", faketime, "-f", tc.spec, python,
					filepath.Join(scripts, "client.py"), "port", "cli.log", strconv.Itoa(tc.trips), fmt.Sprint(tc.interval)))
			args := append(append([]string{"reconcile"}, reconcileArgs...), "-o", filepath.Join(dir, "trace.txt"), filepath.Join(dir, "logs"))
			out, err := exec.Command(wap5, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("wap5 reconcile: %v\n%s", err, out)
			}
			tr, err := trace.ReadFile(filepath.Join(dir, "trace.txt"))
			if err != nil {
				t.Fatal(err)
			}
			both := 0
			for _, m := range tr.Messages {
				if m.Send != trace.Unknown && m.Recv != trace.Unknown {
					both++
				}
			}
			if want := 2 * tc.trips; both != want {
				// a capture or reconcile problem, not a clock one: keep the
				// logs for whoever debugs it
				keep, _ := os.MkdirTemp("", "wap5-faketime-")
				exec.Command("cp", "-r", dir+"/.", keep).Run()
				t.Errorf("reconcile matched %d of %d messages both ways (nodes %v; reconcile said %q); logs kept in %s",
					both, want, tr.Nodes, strings.TrimSpace(string(out)), keep)
			}
			checkClock(t, tr, clientEvents(t, filepath.Join(dir, "cli.log")), tc.limit)
		})
	}
}
