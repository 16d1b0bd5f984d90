package libsockcap

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// One C snippet per concern (c/tests/*.c), run with the library preloaded;
// each check compares the log with what the snippet did.
func TestSnippets(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		args  func(dir string) []string
		env   []string
		check func(t *testing.T, r runResult, logs []procLog)
	}{
		{name: "tcp", check: checkTCP},
		{name: "udp", check: checkUDP},
		{name: "unixsock", args: func(d string) []string { return []string{filepath.Join(d, "sock")} }, check: checkUnix},
		{name: "proc", check: checkProc(true)},
		{name: "proc", env: []string{"SOCKCAP_REINJECT=0"}, check: checkProc(false)},
		{name: "threads", check: checkThreads},
		{name: "signal", check: checkSignal},
		{name: "closeall", check: checkCloseAll},
		{name: "privdrop", check: checkPrivDrop},
		{name: "emfile", check: checkEmfile},
		{name: "highfd", check: checkHighFd},
		{name: "misc", flags: []string{"-O2", "-D_FORTIFY_SOURCE=2"}, args: func(d string) []string { return []string{filepath.Join(d, "file")} }, check: checkMisc},
	}
	for _, tc := range tests {
		name := tc.name
		if len(tc.env) > 0 {
			name += "/" + strings.Join(tc.env, ",")
		}
		t.Run(name, func(t *testing.T) {
			bin := snippet(t, tc.name, tc.flags...)
			argv := []string{bin}
			if tc.args != nil {
				argv = append(argv, tc.args(t.TempDir())...)
			}
			r := capture(t, tc.env, argv...)
			if r.code != 0 {
				t.Fatalf("%s exited %d\nstdout:\n%s\nstderr:\n%s", tc.name, r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "libsockcap:") {
				t.Errorf("library complained: %s", r.stderr)
			}
			logs := readLogs(t, r.dir)
			if len(logs) == 0 {
				t.Fatal("no logs")
			}
			for _, l := range logs {
				if l.P.Dropped != 0 && tc.name != "signal" && tc.name != "emfile" {
					t.Errorf("pid %d dropped %d events", l.P.Pid, l.P.Dropped)
				}
				if l.P.Node != "testnode" || l.P.Host == "" || l.P.BootID == "" || l.P.Exe == "" || len(l.P.Argv) == 0 {
					t.Errorf("incomplete header %+v", l.P)
				}
				if want := selfNetNS(t); l.P.NetNS != want {
					t.Errorf("pid %d: network namespace %d, want %d (this test's)", l.P.Pid, l.P.NetNS, want)
				}
			}
			tc.check(t, r, logs)
		})
	}
}

func port(e Endpoint) int { return int(e.Addr.Port()) }

func checkTCP(t *testing.T, r runResult, logs []procLog) {
	if len(logs) != 1 {
		t.Fatalf("%d logs, want 1", len(logs))
	}
	l := logs[0]
	sp, cp, nb := r.vals["server_port"], r.vals["client_port"], r.vals["nb_client_port"]
	clientSends := l.filter(func(e *Event) bool { return e.Op == OpSend && port(e.Local) == cp && port(e.Remote) == sp })
	if len(clientSends) != 5 || sumBytes(clientSends) != 400 {
		t.Errorf("client sends: %d events %d bytes, want 5 and 400: %+v", len(clientSends), sumBytes(clientSends), clientSends)
	}
	srvRecv := l.filter(func(e *Event) bool { return e.Op == OpRecv && port(e.Local) == sp && port(e.Remote) == cp })
	if sumBytes(srvRecv) != 400 || srvRecv[len(srvRecv)-1].Ret != 0 {
		t.Errorf("server received %d bytes (want 400) and last ret %d (want 0, EOF)", sumBytes(srvRecv), srvRecv[len(srvRecv)-1].Ret)
	}
	cliRecv := l.filter(func(e *Event) bool { return e.Op == OpRecv && port(e.Local) == cp })
	if len(cliRecv) != 5 || sumBytes(cliRecv) != 24 {
		t.Errorf("client recvs %d (%d bytes), want 5 (24): %+v", len(cliRecv), sumBytes(cliRecv), cliRecv)
	} else if last := cliRecv[4]; last.Ret != -1 || last.Errno != int32(syscall.EAGAIN) {
		t.Errorf("failed recv recorded as ret %d errno %d", last.Ret, last.Errno)
	}
	want := map[Op]int{OpSocket: 4, OpBind: 1, OpListen: 2, OpConnect: 2, OpAccept: 2, OpShutdown: 1, OpClose: 6}
	got := map[Op]int{}
	for _, e := range l.Events {
		got[e.Op]++
		switch e.Op {
		case OpListen:
			if port(e.Local) != sp && port(e.Local) != r.vals["unbound_listen_port"] {
				t.Errorf("listen local %v, want port %d or %d", e.Local, sp, r.vals["unbound_listen_port"])
			}
		case OpConnect:
			if port(e.Remote) != sp || (port(e.Local) != cp && port(e.Local) != nb) || e.Proto != ProtoTCP {
				t.Errorf("connect %v -> %v", e.Local, e.Remote)
			}
		case OpAccept:
			if port(e.Local) != sp || (port(e.Remote) != cp && port(e.Remote) != nb) || e.Fd2 < 0 {
				t.Errorf("accept %v <- %v (listen fd %d)", e.Local, e.Remote, e.Fd2)
			}
		case OpShutdown:
			if e.Arg != int64(syscall.SHUT_WR) {
				t.Errorf("shutdown how %d", e.Arg)
			}
		}
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%d %s events, want %d", got[op], op, n)
		}
	}
	nbs := l.filter(func(e *Event) bool { return e.Op == OpSend && port(e.Local) == nb })
	if len(nbs) != 1 || port(nbs[0].Remote) != sp || nbs[0].Bytes != 5 {
		t.Errorf("nonblocking client send: %+v", nbs)
	}
	for i := 1; i < len(l.Events); i++ {
		if l.Events[i].Time < l.Events[i-1].Time {
			t.Errorf("events out of time order at %d", i)
		}
	}
}

func checkUDP(t *testing.T, r runResult, logs []procLog) {
	l := logs[0]
	sp, cp, op, s2 := r.vals["server_port"], r.vals["client_port"], r.vals["other_port"], r.vals["server2_port"]
	msg := make([]byte, 200)
	for i := range msg {
		msg[i] = byte(i)
	}
	sends := l.filter(func(e *Event) bool { return e.Op == OpSend })
	recvs := l.filter(func(e *Event) bool { return e.Op == OpRecv })
	if len(sends) != 8 || len(recvs) != 8 {
		t.Fatalf("%d sends %d recvs, want 8 each", len(sends), len(recvs))
	}
	type exp struct {
		bytes    int64
		from, to int
		sum      uint32
	}
	wantS := []exp{{100, cp, sp, Checksum(msg, 100)}, {5, sp, cp, Checksum(msg, 5)}, {150, cp, sp, Checksum(msg, 150)},
		{11, cp, sp, Checksum(msg, 11)}, {12, cp, sp, Checksum(msg, 12)}, {13, cp, sp, Checksum(msg, 13)},
		{7, cp, s2, Checksum(msg, 7)}, // the receiver connected: its peer (the fd's remote)
		{9, op, s2, Checksum(msg, 9)}} // after connect(AF_UNSPEC): the sender asked for again
	for i, w := range wantS {
		s := sends[i]
		if s.Bytes != w.bytes || port(s.Local) != w.from || port(s.Remote) != w.to || s.Sum != w.sum || s.Proto != ProtoUDP {
			t.Errorf("send %d: %d bytes %v->%v sum %x, want %+v", i, s.Bytes, s.Local, s.Remote, s.Sum, w)
		}
		rv := recvs[i]
		wantSum := w.sum
		if i == 2 {
			wantSum = Checksum(msg[:10], 150) // MSG_TRUNC: only 10 bytes were stored
		}
		if rv.Bytes != w.bytes || port(rv.Remote) != w.from || port(rv.Local) != w.to || rv.Sum != wantSum {
			t.Errorf("recv %d: %d bytes %v<-%v sum %x, want %+v", i, rv.Bytes, rv.Local, rv.Remote, rv.Sum, w)
		}
	}
}

func checkUnix(t *testing.T, r runResult, logs []procLog) {
	parentPid := 0
	for _, l := range logs {
		if l.P.Ppid != 0 && int(l.P.Pid) != r.vals["pair_child"] && int(l.P.Pid) != r.vals["server_child"] {
			parentPid = int(l.P.Pid)
		}
	}
	parent := byPid(logs, parentPid)
	pc, sc := byPid(logs, r.vals["pair_child"]), byPid(logs, r.vals["server_child"])
	if len(parent) != 1 || len(pc) != 1 || len(sc) != 1 {
		t.Fatalf("logs: parent %d, pair child %d, server child %d", len(parent), len(pc), len(sc))
	}
	if pc[0].P.Ppid != int32(parentPid) {
		t.Errorf("child's ppid %d, want %d", pc[0].P.Ppid, parentPid)
	}
	sp := parent[0].filter(func(e *Event) bool { return e.Op == OpSocketpair })
	if len(sp) != 1 {
		t.Fatalf("%d socketpair events", len(sp))
	}
	pr := parent[0].filter(func(e *Event) bool {
		return e.Op == OpRecv && e.Fd == sp[0].Fd && e.Local.Path == "" && e.Remote.Path == ""
	})
	cs := pc[0].filter(func(e *Event) bool { return e.Op == OpSend })
	if len(pr) != 1 || len(cs) != 1 {
		t.Fatalf("pair: parent recvs %d, child sends %d", len(pr), len(cs))
	}
	if pr[0].Remote.Inode == 0 || pr[0].Remote.Inode != cs[0].Local.Inode || cs[0].Remote.Inode != pr[0].Local.Inode {
		t.Errorf("socketpair ends do not pair: parent %+v / %+v, child %+v / %+v", pr[0].Local, pr[0].Remote, cs[0].Local, cs[0].Remote)
	}
	if cs[0].PeerPid != int32(parentPid) || cs[0].Proto != ProtoUnix {
		t.Errorf("child's peer pid %d, want %d", cs[0].PeerPid, parentPid)
	}
	path := ""
	for _, e := range parent[0].Events {
		if e.Op == OpConnect {
			path = e.Remote.Path
		}
	}
	if !strings.HasSuffix(path, "/sock") {
		t.Errorf("connect to %q", path)
	}
	acc := sc[0].filter(func(e *Event) bool { return e.Op == OpAccept })
	if len(acc) != 1 || acc[0].Local.Path != path || acc[0].PeerPid != int32(parentPid) {
		t.Errorf("accept in server child: %+v", acc)
	}
	srvSend := sc[0].filter(func(e *Event) bool { return e.Op == OpSend })
	if len(srvSend) != 1 || srvSend[0].Bytes != 3 || srvSend[0].Local.Path != path {
		t.Errorf("server child send: %+v", srvSend)
	}
}

func checkProc(reinject bool) func(t *testing.T, r runResult, logs []procLog) {
	return func(t *testing.T, r runResult, logs []procLog) {
		want := 9
		if !reinject {
			want = 8
		}
		if r.vals["bytes"] != 9 {
			t.Errorf("program received %d bytes, want 9", r.vals["bytes"])
		}
		parentPid := int(logs[0].P.Pid)
		for _, l := range logs {
			if l.P.Pid < int32(parentPid) {
				parentPid = int(l.P.Pid)
			}
		}
		parent := byPid(logs, parentPid)[0]
		forks := parent.filter(func(e *Event) bool { return e.Op == OpFork })
		if len(forks) != 9 {
			t.Errorf("%d fork events, want 9", len(forks))
		}
		failed := parent.filter(func(e *Event) bool { return e.Op == OpExec && e.Errno == int32(syscall.ENOENT) })
		if len(failed) != 1 || failed[0].Name != "/nonexistent/prog" {
			t.Errorf("failed exec: %+v", failed)
		}
		sent := 0
		for _, k := range []string{"fork", "vfork", "_Fork", "posix_spawn", "stripped", "execvp", "execle", "fexecve", "execveat"} {
			pid := r.vals[k]
			found := false
			for _, f := range forks {
				found = found || int(f.Child) == pid
			}
			if !found {
				t.Errorf("no fork event for %s child %d", k, pid)
			}
			for _, l := range byPid(logs, pid) {
				if l.P.Ppid != int32(parentPid) {
					t.Errorf("%s: ppid %d, want %d", k, l.P.Ppid, parentPid)
				}
				n := len(l.filter(func(e *Event) bool { return e.Op == OpSend && e.Bytes == 1 }))
				sent += n
				if k == "stripped" && n > 0 && !reinject {
					t.Errorf("SOCKCAP_REINJECT=0 but the stripped exec was traced")
				}
			}
		}
		if sent != want {
			t.Errorf("%d child sends logged, want %d", sent, want)
		}
	}
}

func checkThreads(t *testing.T, r runResult, logs []procLog) {
	child := byPid(logs, r.vals["child"])
	if r.vals["child_status"] != 0 || len(child) != 1 {
		t.Fatalf("child forked among busy threads: status %d, %d logs", r.vals["child_status"], len(child))
	}
	if n := len(child[0].filter(func(e *Event) bool { return e.Op == OpSend && e.Ret == 5 })); n != 1 {
		t.Errorf("child logged %d sends, want 1", n)
	}
	var l procLog
	for _, x := range logs {
		if int(x.P.Pid) != r.vals["child"] {
			l = x
		}
	}
	per := map[int32]int{}
	short := map[int32]int{}
	for _, e := range l.Events {
		if e.Op == OpSend && e.Ret > 0 && e.Ret <= 8 {
			per[e.Tid]++
		}
		if e.Op == OpSend && e.Ret == 16 { // the short-lived threads'
			short[e.Tid]++
		}
	}
	n := 0
	for _, k := range short {
		n += k
	}
	if len(short) != r.vals["short_threads"] || n != r.vals["short_sends"] {
		t.Errorf("short-lived threads: %d threads, %d sends; want %d, %d", len(short), n, r.vals["short_threads"], r.vals["short_sends"])
	}
	if len(per) != r.vals["threads"] {
		t.Errorf("%d sending threads, want %d", len(per), r.vals["threads"])
	}
	for tid, n := range per {
		if n != r.vals["sends"] {
			t.Errorf("thread %d: %d sends, want %d", tid, n, r.vals["sends"])
		}
	}
}

func checkSignal(t *testing.T, r runResult, logs []procLog) {
	l := logs[0]
	ok := int64(len(l.filter(func(e *Event) bool { return e.Op == OpSend && e.Ret == 1 })))
	total := int64(r.vals["main"] + r.vals["handler"])
	if r.vals["handler"] == 0 {
		t.Log("timer never fired during a send")
	}
	if ok > total || ok+l.P.Dropped < total {
		t.Errorf("%d sends logged + %d dropped, program made %d", ok, l.P.Dropped, total)
	}
	if gaps := l.filter(func(e *Event) bool { return e.Op == OpGap }); sumBytes(gaps) != l.P.Dropped {
		t.Errorf("gap records count %d lost events, header %d", sumBytes(gaps), l.P.Dropped)
	}
	t.Logf("main %d handler %d logged %d dropped %d", r.vals["main"], r.vals["handler"], ok, l.P.Dropped)
}

func checkPrivDrop(t *testing.T, r runResult, logs []procLog) {
	if r.vals["skipped"] == 1 {
		t.Skip("needs root")
	}
	l := logs[0]
	sends := len(l.filter(func(e *Event) bool { return e.Op == OpSend && e.Ret == 4 }))
	recvs := len(l.filter(func(e *Event) bool { return e.Op == OpRecv && e.Ret == 4 }))
	if sends != r.vals["pairs"] || recvs != r.vals["pairs"] || r.vals["pairs"] != 30000 {
		t.Errorf("logged %d sends %d recvs after setuid, program made %d pairs", sends, recvs, r.vals["pairs"])
	}
}

func checkEmfile(t *testing.T, r runResult, logs []procLog) {
	l := logs[0]
	if r.vals["pairs"] != 20010 {
		t.Errorf("program made %d pairs, want 20010", r.vals["pairs"])
	}
	ok := int64(len(l.filter(func(e *Event) bool { return (e.Op == OpSend || e.Op == OpRecv) && e.Ret == 4 })))
	gaps := l.filter(func(e *Event) bool { return e.Op == OpGap })
	if l.P.Dropped == 0 || len(gaps) == 0 || sumBytes(gaps) != l.P.Dropped {
		t.Errorf("dropped %d, gap records %+v", l.P.Dropped, gaps)
	}
	if ok+l.P.Dropped != 2*20010 {
		t.Errorf("%d logged + %d dropped, program made %d calls", ok, l.P.Dropped, 2*20010)
	}
	if last := l.Events[len(l.Events)-1]; last.Op != OpExit && last.Op != OpRecv {
		t.Errorf("logging did not resume: last event %+v", last)
	}
}

func checkCloseAll(t *testing.T, r runResult, logs []procLog) {
	if !strings.Contains(r.stderr, "closeall done") {
		t.Errorf("stderr: %q", r.stderr)
	}
	l := logs[0]
	if n := len(l.filter(func(e *Event) bool { return e.Op == OpSocketpair })); n != 4 {
		t.Errorf("%d socketpairs, want 4", n)
	}
	if n := len(l.filter(func(e *Event) bool { return e.Op == OpSend && e.Ret == 1 })); n != 16 {
		t.Errorf("%d sends, want 16", n)
	}
	if n := len(l.filter(func(e *Event) bool { return e.Op == OpClose && e.Arg == 2 })); n != 4 {
		t.Errorf("%d closes by dup2, want 4", n)
	}
	if n := len(l.filter(func(e *Event) bool { return e.Op == OpDup && e.Fd2 >= 50 })); n != 4 {
		t.Errorf("%d F_DUPFD dups, want 4", n)
	}
	// close_range, closefrom and the loop each closed the sockets of one round
	if n := len(l.filter(func(e *Event) bool { return e.Op == OpClose && e.Arg != 2 })); n < 9 {
		t.Errorf("%d socket closes, want >= 9", n)
	}
}

func checkMisc(t *testing.T, r runResult, logs []procLog) {
	l := logs[0]
	recvs := l.filter(func(e *Event) bool { return e.Op == OpRecv })
	var first []int64
	for _, e := range recvs[:3] {
		first = append(first, e.Bytes)
	}
	if len(recvs) != 5 || first[0] != 3 || first[1] != 3 || first[2] != 4 {
		t.Errorf("recvs %+v", recvs)
	}
	sends := l.filter(func(e *Event) bool { return e.Op == OpSend })
	var sizes []int64
	for _, e := range sends {
		sizes = append(sizes, e.Bytes)
	}
	if len(sizes) != 5 || sizes[1] != 20 || sizes[2] != 5 || sizes[3] != 1 || sizes[4] != 1 || sends[4].Fd != 40 {
		t.Errorf("sends: %v", sizes)
	}
	for _, e := range l.Events {
		if e.Proto == ProtoOther && (e.Op == OpSend || e.Op == OpRecv) {
			t.Errorf("non-socket I/O recorded: %+v", e)
		}
	}
	if n := len(l.filter(func(e *Event) bool { return e.Op == OpDup })); n != 2 {
		t.Errorf("%d dups, want 2", n)
	}
	res := l.filter(func(e *Event) bool { return e.Op == OpResolve })
	if len(res) != 3 || res[0].Name != "localhost" || res[0].Dur <= 0 || res[1].Name != "localhost" || res[2].Name != "localhost" {
		t.Errorf("resolver events %+v", res)
	}
	out, err := exec.Command("nm", "-D", "--undefined-only", snippet(t, "misc", "-O2", "-D_FORTIFY_SOURCE=2")).Output()
	if err == nil {
		for _, sym := range []string{"__read_chk", "__recv_chk", "__recvfrom_chk"} {
			if !strings.Contains(string(out), sym) {
				t.Errorf("snippet does not import %s; the fortified path is untested", sym)
			}
		}
	}
}

// The program must run unchanged when nothing can be logged: an unwritable
// directory (reported once on stderr), a file-size limit below one chunk
// (events counted as dropped, no SIGXFSZ).
func TestNeverBreakProgram(t *testing.T) {
	bin := snippet(t, "threads")
	t.Run("unwritable-dir", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o600)
		r := capture(t, []string{"SOCKCAP_DIR=" + filepath.Join(f, "sub")}, bin)
		if r.code != 0 || r.vals["sends"] != 20000 {
			t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
		}
		// once per process: the snippet and the child it forks
		if n := strings.Count(r.stderr, "libsockcap:"); n != 2 || !strings.Contains(r.stderr, "pid "+strconv.Itoa(r.vals["child"])+" ") {
			t.Errorf("%d complaints on stderr, want one per process (2): %q", n, r.stderr)
		}
	})
	t.Run("fsize-limit", func(t *testing.T) {
		r := capture(t, nil, "bash", "-c", "ulimit -f 8; exec "+bin)
		if r.code != 0 || r.vals["sends"] != 20000 {
			t.Fatalf("exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		logs := readLogs(t, r.dir)
		var dropped int64
		for _, l := range logs {
			if strings.HasSuffix(l.P.Exe, "bash") {
				continue
			}
			dropped += l.P.Dropped
			if len(l.Events) != 0 {
				t.Errorf("%d events logged without room for a chunk", len(l.Events))
			}
		}
		if dropped < 4*2*20000 {
			t.Errorf("dropped %d, want >= %d", dropped, 4*2*20000)
		}
	})
}

// A relative SOCKCAP_DIR is anchored at the start directory: a program that
// changes directory and runs others still logs to the same place.
func TestRelativeDir(t *testing.T) {
	lib := libPath(t)
	bin := snippet(t, "threads")
	start := t.TempDir()
	cmd := exec.Command("sh", "-c", "cd / && "+bin)
	cmd.Dir = start
	pre := lib
	if x := os.Getenv("SOCKCAP_PRELOAD_EXTRA"); x != "" {
		pre = x + " " + lib
	}
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+pre, "SOCKCAP_DIR=rel-logs")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	logs := readLogs(t, filepath.Join(start, "rel-logs"))
	found := false
	for _, l := range logs {
		found = found || strings.HasSuffix(l.P.Exe, "/"+filepath.Base(bin))
	}
	if !found {
		t.Errorf("the program run after cd / did not log under the start directory (%d logs)", len(logs))
	}
	if _, err := os.Stat("/rel-logs"); err == nil {
		t.Errorf("logs written to /rel-logs")
	}
}

// selfNetNS is the inode of this process's network namespace, which the
// traced children share.
func selfNetNS(t *testing.T) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestHighFdSmallTable runs the highfd snippet against a build of the
// library whose direct fd table ends at 1024, with sockets from fd 2000 on:
// the overflow table's code, where a test cannot raise RLIMIT_NOFILE past
// 65536 (no CAP_SYS_RESOURCE; TestSnippets/highfd covers the shipped build
// where it can).
func TestHighFdSmallTable(t *testing.T) {
	libPath(t) // skips when the library is not built
	bin := snippet(t, "highfd")
	lib := filepath.Join(t.TempDir(), "libsockcap-fd1024.so")
	args := []string{"-O2", "-g", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-fvisibility=hidden",
		"-Wl,--version-script=" + filepath.Join("c", "exports.map"), "-DSC_FDMAX=1024", "-o", lib}
	if os.Getenv("SOCKCAP_PRELOAD_EXTRA") != "" { // the sanitized run: sanitize this build too
		args = append(args, "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
	}
	srcs, _ := filepath.Glob(filepath.Join("c", "*.c"))
	args = append(append(args, srcs...), "-ldl", "-lpthread")
	if b, err := exec.Command(cc(), args...).CombinedOutput(); err != nil {
		t.Fatalf("building the small-table library: %v\n%s", err, b)
	}
	pre := lib
	if x := os.Getenv("SOCKCAP_PRELOAD_EXTRA"); x != "" {
		pre = x + " " + lib
	}
	r := capture(t, []string{"LD_PRELOAD=" + pre}, bin, "2000")
	if r.code != 0 {
		t.Fatalf("highfd exited %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r.vals["skip"] == 1 || r.vals["client_fd"] < 2000 {
		t.Fatalf("the snippet did not use fds from 2000 on:\n%s", r.stdout)
	}
	checkHighFd(t, r, readLogs(t, r.dir))
}

// checkHighFd: sockets at fds above the library's direct table are recorded
// like any other: endpoints, bytes each way, datagram checksums, and closes.
func checkHighFd(t *testing.T, r runResult, logs []procLog) {
	if r.vals["skip"] == 1 {
		t.Skip("cannot raise RLIMIT_NOFILE to 71024")
	}
	if len(logs) != 1 {
		t.Fatalf("%d logs, want 1", len(logs))
	}
	l := logs[0]
	sp, cp := r.vals["server_port"], r.vals["client_port"]
	cfd, sfd := int32(r.vals["client_fd"]), int32(r.vals["server_fd"])
	on := func(fd int32, op Op) []Event {
		return l.filter(func(e *Event) bool { return e.Fd == fd && e.Op == op })
	}
	type dir struct {
		name          string
		fd            int32
		op            Op
		local, remote int
		n             int // events, or 0: any number
		bytes         int64
	}
	for _, d := range []dir{
		{"client sends", cfd, OpSend, cp, sp, 5, 500},
		{"server recvs", sfd, OpRecv, sp, cp, 0, 500},
		{"server sends", sfd, OpSend, sp, cp, 3, 150},
		{"client recvs", cfd, OpRecv, cp, sp, 0, 150},
	} {
		evs := on(d.fd, d.op)
		if (d.n != 0 && len(evs) != d.n) || sumBytes(evs) != d.bytes {
			t.Errorf("%s (fd %d): %d events %d bytes, want %d and %d", d.name, d.fd, len(evs), sumBytes(evs), d.n, d.bytes)
		}
		for _, e := range evs {
			if port(e.Local) != d.local || port(e.Remote) != d.remote || e.Proto != ProtoTCP {
				t.Errorf("%s: %v %v -> %v, want tcp %d -> %d", d.name, e.Proto, e.Local, e.Remote, d.local, d.remote)
			}
		}
	}
	usp, ucp := r.vals["udp_server_port"], r.vals["udp_client_port"]
	us := l.filter(func(e *Event) bool { return e.Op == OpSend && e.Proto == ProtoUDP })
	ur := l.filter(func(e *Event) bool { return e.Op == OpRecv && e.Proto == ProtoUDP })
	if len(us) != 4 || len(ur) != 4 {
		t.Fatalf("udp: %d sends %d recvs, want 4 each", len(us), len(ur))
	}
	msg := bytes.Repeat([]byte{'x'}, 40)
	for i := range us {
		n := int64(10 * (i + 1))
		for _, e := range []Event{us[i], ur[i]} {
			from, to := e.Local, e.Remote
			if e.Op == OpRecv {
				from, to = e.Remote, e.Local
			}
			if e.Fd < int32(r.vals["listen_fd"]) || e.Bytes != n || port(from) != ucp || port(to) != usp || e.Sum != Checksum(msg[:n], int(n)) {
				t.Errorf("udp %v %d: fd %d, %d bytes %v -> %v sum %x, want %d bytes %d -> %d", e.Op, i, e.Fd, e.Bytes, from, to, e.Sum, n, ucp, usp)
			}
		}
	}
	p0, p1 := int32(r.vals["pair0_fd"]), int32(r.vals["pair1_fd"])
	for _, d := range []struct {
		fd      int32
		out, in int64
	}{{p0, 7, 9}, {p1, 9, 7}} {
		s, rv := on(d.fd, OpSend), on(d.fd, OpRecv)
		if sumBytes(s) != d.out || sumBytes(rv) != d.in || len(s) != 1 || s[0].Proto != ProtoUnix {
			t.Errorf("socketpair fd %d: sent %d received %d (%d sends), want %d and %d, unix", d.fd, sumBytes(s), sumBytes(rv), len(s), d.out, d.in)
		}
	}
	for _, name := range []string{"client_fd", "server_fd", "listen_fd", "pair0_fd", "pair1_fd"} {
		if fd := int32(r.vals[name]); len(on(fd, OpClose)) != 1 {
			t.Errorf("%s %d: %d close events, want 1", name, fd, len(on(fd, OpClose)))
		}
	}
	if n := len(l.filter(func(e *Event) bool { return e.Op == OpClose && e.Proto == ProtoUDP })); n != 2 {
		t.Errorf("%d udp close events, want 2", n)
	}
}
