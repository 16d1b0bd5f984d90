package reconcile

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

// updating reports whether -update was given: the flag is declared once for
// the package's golden tests (pcap_test.go); looked up by name so this file
// does not depend on where.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// A scenario (testdata/scenarios/NAME.txtar) is a txtar archive:
//
//	comment: what the scenario checks
//	-- options --     optional: granularity=process recvat=last splitgap=1ms window=2s aggregate nonat
//	-- events --      one process line per log, then one event per line
//	-- expect --      the trace, text form without the header
//	-- warnings --    optional: expected warnings, one per line
//
// Process lines: `proc NAME host=H exe=E pid=N [ppid=N] [boot=B] [netns=N]`. Event lines:
// `NAME TIME OP key=value...` with keys fd, fd2, proto (tcp|udp|unix), type
// (stream|dgram), local, remote (ip:port, unix:PATH, unix:), lino, rino
// (Unix inodes), bytes, ret, errno, sum, child, tid (the thread; 0 or
// absent = unknown, so no actor).
type scenario struct {
	comment  string
	sections map[string]string
	order    []string
}

func parseTxtar(data string) scenario {
	s := scenario{sections: map[string]string{}}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur == "" {
			s.comment = b.String()
		} else {
			s.sections[cur] = b.String()
			s.order = append(s.order, cur)
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(data, "\n") {
		l := strings.TrimRight(line, "\n")
		if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") && len(l) > 6 {
			flush()
			cur = strings.TrimSpace(l[3 : len(l)-3])
			continue
		}
		b.WriteString(line)
	}
	flush()
	return s
}

func (s scenario) format() string {
	var b strings.Builder
	b.WriteString(s.comment)
	for _, name := range s.order {
		fmt.Fprintf(&b, "-- %s --\n%s", name, s.sections[name])
	}
	return b.String()
}

func parseEndpoint(s string, ino uint64) (libsockcap.Endpoint, error) {
	if s == "" {
		return libsockcap.Endpoint{}, nil
	}
	if p, ok := strings.CutPrefix(s, "unix:"); ok {
		return libsockcap.Endpoint{Unix: true, Path: p, Inode: ino}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	return libsockcap.Endpoint{Addr: ap}, err
}

var opByName = map[string]libsockcap.Op{}

func init() {
	for op := libsockcap.OpNone; op < libsockcap.OpGap+1; op++ {
		opByName[op.String()] = op
	}
}

// buildSources turns the events section into one source per process.
func buildSources(t *testing.T, text string) []Source {
	t.Helper()
	procs := map[string]*libsockcap.Process{}
	var order []string
	events := map[string][]libsockcap.Event{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		kv := map[string]string{}
		for _, x := range f[1:] {
			if k, v, ok := strings.Cut(x, "="); ok {
				kv[k] = v
			}
		}
		if f[0] == "proc" {
			pid, _ := strconv.Atoi(kv["pid"])
			procs[f[1]] = &libsockcap.Process{Host: kv["host"], Node: kv["host"], Exe: kv["exe"], Pid: int32(pid),
				BootID: kv["boot"], NetNS: uint64(atoiU(kv["netns"])), Ppid: int32(atoiU(kv["ppid"])), File: f[1] + ".sclog"}
			order = append(order, f[1])
			continue
		}
		if len(f) < 3 || procs[f[0]] == nil {
			t.Fatalf("events:%d: bad line %q", n+1, line)
		}
		ts, err := trace.ParseTime(f[1])
		if err != nil {
			t.Fatalf("events:%d: %v", n+1, err)
		}
		op, ok := opByName[f[2]]
		if !ok {
			t.Fatalf("events:%d: unknown op %q", n+1, f[2])
		}
		ev := libsockcap.Event{Proc: procs[f[0]], Time: ts, Op: op, Fd: -1, Fd2: -1}
		num := func(k string) int64 {
			v, err := strconv.ParseInt(kv[k], 0, 64)
			if kv[k] != "" && err != nil {
				t.Fatalf("events:%d: %s: %v", n+1, k, err)
			}
			return v
		}
		if kv["fd"] != "" {
			ev.Fd = int32(num("fd"))
		}
		if kv["fd2"] != "" {
			ev.Fd2 = int32(num("fd2"))
		}
		switch kv["proto"] {
		case "tcp":
			ev.Proto = libsockcap.ProtoTCP
		case "udp":
			ev.Proto = libsockcap.ProtoUDP
		case "unix":
			ev.Proto = libsockcap.ProtoUnix
		}
		switch kv["type"] {
		case "stream":
			ev.SoType = 1
		case "dgram":
			ev.SoType = 2
		}
		if ev.Local, err = parseEndpoint(kv["local"], uint64(num("lino"))); err != nil {
			t.Fatalf("events:%d: %v", n+1, err)
		}
		if ev.Remote, err = parseEndpoint(kv["remote"], uint64(num("rino"))); err != nil {
			t.Fatalf("events:%d: %v", n+1, err)
		}
		ev.Bytes, ev.Ret, ev.Errno, ev.Sum, ev.Child = num("bytes"), num("ret"), int32(num("errno")), uint32(num("sum")), int32(num("child"))
		ev.Tid = int32(num("tid"))
		if (op == libsockcap.OpSend || op == libsockcap.OpRecv) && kv["ret"] == "" {
			ev.Ret = ev.Bytes
		}
		events[f[0]] = append(events[f[0]], ev)
	}
	var srcs []Source
	for _, name := range order {
		srcs = append(srcs, EventSource(procs[name], events[name]))
	}
	return srcs
}

func parseOptions(t *testing.T, text string) Options {
	var o Options
	for _, f := range strings.Fields(text) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "granularity":
			o.Granularity, err = ParseGranularity(v)
		case "recvat":
			if v == "last" {
				o.RecvAt = RecvLast
			}
		case "splitgap":
			o.SplitGap, err = time.ParseDuration(v)
		case "window":
			o.Window, err = time.ParseDuration(v)
		case "aggregate":
			o.AggregateClients = true
		case "nonat":
			o.DisableNATDetection = true
		case "nat":
			// nat=dnat,tcp,BEFORE,AFTER
			p := strings.Split(v, ",")
			o.NAT = append(o.NAT, Translation{Kind: p[0], Proto: p[1], Before: p[2], After: p[3]})
		default:
			t.Fatalf("unknown option %q", f)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func traceBody(t *testing.T, tr *trace.Trace) string {
	var b bytes.Buffer
	if err := trace.WriteText(&b, tr); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(b.String(), trace.TextHeader+"\n")
}

func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/scenarios/*.txtar")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc := parseTxtar(string(data))
			opts := parseOptions(t, sc.sections["options"])
			tr, err := ReconcileSources(buildSources(t, sc.sections["events"]), opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Fatalf("invalid trace: %v", err)
			}
			got := traceBody(t, tr)
			gotW := strings.Join(tr.Warnings, "\n")
			if gotW != "" {
				gotW += "\n"
			}
			if updating() {
				sc.sections["expect"] = got
				if _, ok := sc.sections["warnings"]; !ok && gotW != "" {
					sc.order = append(sc.order, "warnings")
				}
				if gotW != "" || sc.sections["warnings"] != "" {
					sc.sections["warnings"] = gotW
				}
				if err := os.WriteFile(file, []byte(sc.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := sc.sections["expect"]; got != want {
				t.Errorf("trace differs\n--- got\n%s--- want\n%s", got, want)
			}
			if want := sc.sections["warnings"]; gotW != want {
				t.Errorf("warnings differ\n--- got\n%s--- want\n%s", gotW, want)
			}
		})
	}
}

// Translations reads back the translations Reconcile reported.
func TestTranslations(t *testing.T) {
	data, err := os.ReadFile("testdata/scenarios/tcp_dnat.txtar")
	if err != nil {
		t.Fatal(err)
	}
	sc := parseTxtar(string(data))
	tr, err := ReconcileSources(buildSources(t, sc.sections["events"]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := Translations(tr)
	want := []Translation{
		{Kind: "dnat", Proto: "tcp", Before: "10.0.9.9:80", After: "10.0.0.2:8080", Flows: 2},
		{Kind: "snat", Proto: "tcp", Before: "10.0.0.1:40000", After: "10.0.5.1:61000", Flows: 1},
		{Kind: "snat", Proto: "tcp", Before: "10.0.0.1:40001", After: "10.0.5.1:61001", Flows: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// atoiU parses a scenario's unsigned number ("" = 0).
func atoiU(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}
