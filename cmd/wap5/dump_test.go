package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"wap5/libsockcap"
)

// fakeSource replays fixed events, as a Scanner over a log would.
type fakeSource struct {
	proc     *libsockcap.Process
	events   []libsockcap.Event
	i        int
	warnings []error
	err      error
}

func (f *fakeSource) Process() *libsockcap.Process { return f.proc }
func (f *fakeSource) Scan() bool                   { f.i++; return f.i <= len(f.events) }
func (f *fakeSource) Event() *libsockcap.Event     { return &f.events[f.i-1] }
func (f *fakeSource) Err() error                   { return f.err }
func (f *fakeSource) Warnings() []error            { return f.warnings }

func ep(s string) libsockcap.Endpoint {
	if strings.HasPrefix(s, "unix:") {
		return libsockcap.Endpoint{Unix: true, Path: strings.TrimPrefix(s, "unix:")}
	}
	return libsockcap.Endpoint{Addr: netip.MustParseAddrPort(s)}
}

// sampleLog is one process that exercises every operation and field: a
// resolver call, a TCP client, a UDP exchange, a socketpair with a Unix
// peer, a failed connect, a fork, an exec and a gap.
func sampleLog() *fakeSource {
	p := &libsockcap.Process{Host: "box", Node: "web", Pid: 4242, Ppid: 1, Exe: "/usr/bin/curl",
		Argv: []string{"curl", "-s", "http://127.0.0.1:8080/a b"}, StartWall: 1700000000000000000,
		ClockSource: "CLOCK_REALTIME", File: "logs/web/4242.log"}
	t0 := int64(1700000000000100000)
	local, remote := ep("127.0.0.1:40000"), ep("127.0.0.1:8080")
	e := []libsockcap.Event{
		{Op: libsockcap.OpResolve, Name: "localhost", Dur: 2500, Ret: 0},
		{Op: libsockcap.OpSocket, Fd: 3, Proto: libsockcap.ProtoTCP, Ret: 3},
		{Op: libsockcap.OpConnect, Fd: 3, Proto: libsockcap.ProtoTCP, Local: local, Remote: remote, Ret: 0},
		{Op: libsockcap.OpSend, Fd: 3, Proto: libsockcap.ProtoTCP, Local: local, Remote: remote, Bytes: 78, Ret: 78},
		{Op: libsockcap.OpRecv, Fd: 3, Proto: libsockcap.ProtoTCP, Local: local, Remote: remote, Bytes: 1024, Ret: 1024, Dur: 120000},
		{Op: libsockcap.OpRecv, Fd: 3, Proto: libsockcap.ProtoTCP, Local: local, Remote: remote, Bytes: 0, Ret: 0},
		{Op: libsockcap.OpClose, Fd: 3, Proto: libsockcap.ProtoTCP, Local: local, Remote: remote},
		{Op: libsockcap.OpSocket, Fd: 4, Proto: libsockcap.ProtoUDP, Ret: 4},
		{Op: libsockcap.OpSend, Fd: 4, Proto: libsockcap.ProtoUDP, Remote: ep("[::1]:5353"), Bytes: 12, Ret: 12, Sum: 0xdeadbeef},
		{Op: libsockcap.OpRecv, Fd: 4, Proto: libsockcap.ProtoUDP, Local: ep("[::1]:41000"), Remote: ep("[::1]:5353"), Bytes: 0, Ret: -1, Errno: 11},
		{Op: libsockcap.OpSocketpair, Fd: 5, Fd2: 6, Proto: libsockcap.ProtoUnix,
			Local: libsockcap.Endpoint{Unix: true, Inode: 9001}, Remote: libsockcap.Endpoint{Unix: true, Inode: 9002}},
		{Op: libsockcap.OpSend, Fd: 5, Proto: libsockcap.ProtoUnix, Local: ep("unix:/run/a \"q\".sock"), Bytes: 3, Ret: 3, PeerPid: 4243},
		{Op: libsockcap.OpDup, Fd: 5, Fd2: 10, Proto: libsockcap.ProtoUnix, Ret: 10},
		{Op: libsockcap.OpConnect, Fd: 7, Proto: libsockcap.ProtoTCP, Remote: ep("10.0.0.1:1"), Ret: -1, Errno: 111},
		{Op: libsockcap.OpFork, Child: 4243, Ret: 4243},
		{Op: libsockcap.OpGap, Bytes: 17},
		{Op: libsockcap.OpExec, Name: "/bin/sh\x01\xff", Ret: -1, Errno: 2},
		{Op: libsockcap.OpExit, Ret: 0},
	}
	for i := range e {
		e[i].Proc = p
		e[i].Time = t0 + int64(i)*1500
		e[i].Tid = 4242
		if i == 4 {
			e[i].Tid = 4250
		}
	}
	return &fakeSource{proc: p, events: e,
		warnings: []error{&libsockcap.DamageError{File: p.File, Offset: 4096, Msg: "bad record type 0x9c"}}}
}

func TestDumpGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format dumpFormat
	}{
		{"table", dumpTable},
		{"json", dumpJSON},
		{"summary", dumpSummary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			w := bufio.NewWriter(&out)
			if err := dumpLog(w, &errb, sampleLog(), tc.format); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			goldenFile(t, "dump", tc.name+".golden", out.Bytes())
			goldenFile(t, "dump", "stderr.golden", errb.Bytes())
		})
	}
}

// TestDumpJSONContract checks every line against the contract: valid JSON,
// the mandatory fields with their types, op and proto vocabularies, and the
// omission rules.
func TestDumpJSONContract(t *testing.T) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	src := sampleLog()
	if err := dumpLog(w, &bytes.Buffer{}, src, dumpJSON); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(src.events) {
		t.Fatalf("%d lines for %d events", len(lines), len(src.events))
	}
	ops := map[string]bool{}
	for _, o := range strings.Fields("socket bind listen connect accept send recv close shutdown dup fork exec exit socketpair resolve gap") {
		ops[o] = true
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		ev := src.events[i]
		for _, k := range []string{"ts_ns", "host", "node", "pid", "tid", "op"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d lacks %q: %s", i+1, k, line)
			}
		}
		if !ops[m["op"].(string)] {
			t.Errorf("line %d: op %q not in the vocabulary", i+1, m["op"])
		}
		if m["ts_ns"].(float64) != float64(ev.Time) {
			t.Errorf("line %d: ts_ns %v, want %d", i+1, m["ts_ns"], ev.Time)
		}
		_, hasFd := m["fd"]
		if hasFd != fdOp(ev.Op) {
			t.Errorf("line %d (%s): fd present=%v", i+1, ev.Op, hasFd)
		}
		if p, ok := m["proto"]; ok && !map[string]bool{"tcp": true, "udp": true, "unix": true, "other": true}[p.(string)] {
			t.Errorf("line %d: proto %q", i+1, p)
		}
		_, hasBytes := m["bytes"]
		if hasBytes != isTransfer(ev.Op) {
			t.Errorf("line %d (%s): bytes present=%v", i+1, ev.Op, hasBytes)
		}
		if _, has := m["errno"]; has != (ev.Errno != 0) {
			t.Errorf("line %d: errno present=%v with errno %d", i+1, has, ev.Errno)
		}
		for _, k := range []string{"local", "remote"} {
			if v, ok := m[k]; ok && v.(string) == "" {
				t.Errorf("line %d: empty %s", i+1, k)
			}
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "tab\tnl\ncr\r", "\x00\x1f\x7f", "héllo ✓", "bad\xffutf8", "\u2028"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if got != want {
			t.Errorf("%q -> %s decodes to %q, want %q", s, b, got, want)
		}
	}
}

func TestDumpUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dump"}, 2, "no LOG"},
		{[]string{"dump", "--json", "--summary", "x"}, 2, "exclude"},
		{[]string{"dump", filepath.Join(t.TempDir(), "missing")}, 1, "wap5: "},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func BenchmarkDumpJSON(b *testing.B) {
	src := sampleLog()
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = appendEventJSON(buf[:0], &src.events[i%len(src.events)], src.proc)
	}
}

func BenchmarkDumpTable(b *testing.B) {
	src := sampleLog()
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = appendEventRow(buf[:0], &src.events[i%len(src.events)])
	}
}

// small.sclog.zst is a real log: python3 under libsockcap.so making a TCP
// connection to itself, a UDP datagram to itself and a socketpair.
const smallLog = "testdata/dump/small.sclog.zst"

func TestDumpLogFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"small-table", nil},
		{"small-json", []string{"--json"}},
		{"small-summary", []string{"--summary"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append(append([]string{"dump"}, tc.flags...), smallLog)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			goldenFile(t, "dump", tc.name+".golden", []byte(stdout))
		})
	}
	// A directory argument finds the same log.
	_, fromFile, _ := runCLI(t, "", "dump", "--json", smallLog)
	_, fromDir, _ := runCLI(t, "", "dump", "--json", "testdata/dump")
	if fromFile != fromDir {
		t.Errorf("dump of the directory differs from dump of the file")
	}
}

// TestDumpDamage corrupts records in the middle of the log: dump prints what
// it can read, warns with file and offset, and exits 0; a file that is not a
// log at all is an error.
func TestDumpDamage(t *testing.T) {
	sealed, err := os.ReadFile(smallLog)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dec.DecodeAll(sealed, nil)
	dec.Close()
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Index(raw, []byte("SCCK"))
	if chunk < 0 {
		t.Fatal("no chunk in the log")
	}
	// Into the records of the first chunk, past its first few events.
	for i := chunk + 32 + 60; i < chunk+32+72; i++ {
		raw[i] = 0xff
	}
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged.sclog")
	junk := filepath.Join(dir, "junk.sclog")
	os.WriteFile(damaged, raw, 0o644)
	os.WriteFile(junk, []byte("this is not a log\n"), 0o644)

	code, stdout, stderr := runCLI(t, "", "dump", "--json", damaged)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !regexp.MustCompile(`^wap5: warning: ` + regexp.QuoteMeta(damaged) + `: offset \d+: `).MatchString(stderr) {
		t.Errorf("stderr %q lacks a warning with file and offset", stderr)
	}
	if n := strings.Count(stdout, "\n"); n == 0 {
		t.Errorf("nothing printed before or after the damage")
	}
	code, _, stderr = runCLI(t, "", "dump", junk)
	if code != 1 || !strings.Contains(stderr, junk) {
		t.Errorf("junk file: exit %d stderr %q, want 1 and the file name", code, stderr)
	}
	code, stdout, _ = runCLI(t, "", "dump", junk, smallLog)
	if code != 0 || stdout == "" {
		t.Errorf("junk plus a good log: exit %d, want 0 with the good log printed", code)
	}
}
