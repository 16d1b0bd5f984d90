package capturetest

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"wap5/libsockcap"
)

// udpServer answers n datagrams on 127.0.0.1:argv[1] with the payload
// reversed plus "!".
const udpServer = `
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
for _ in range(int(sys.argv[2])):
    data, peer = s.recvfrom(65536)
    s.sendto(data[::-1] + b"!", peer)
`

// udpClient sends n datagrams of growing size and waits for each reply.
const udpClient = `
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
for i in range(int(sys.argv[2])):
    s.sendto(bytes((i * 7 + j) % 251 for j in range(10 + 300 * i)), ("127.0.0.1", int(sys.argv[1])))
    s.recvfrom(65536)
`

func udpPayload(i int) []byte {
	b := make([]byte, 10+300*i)
	for j := range b {
		b[j] = byte((i*7 + j) % 251)
	}
	return b
}

// TestUDP: a request/response pair over UDP. Each datagram is one send at
// one end and one recv at the other, with its size, both addresses, and the
// payload checksum the test computes itself.
func TestUDP(t *testing.T) {
	s := newSession(t)
	py := python(t)
	const n = 5
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	srv := s.start("udp-server", py, "-c", udpServer, strconv.Itoa(port), strconv.Itoa(n))
	srvPid := srv.pid()
	waitUDP(t, port) // the client's first datagram would be lost otherwise
	clientPid, out := runWithPid(s, "udp-client", py, "-c", udpClient, strconv.Itoa(port), strconv.Itoa(n))
	select {
	case <-srv.done:
	case <-time.After(20 * time.Second):
		t.Fatal("udp server did not finish")
	}
	lport, _ := strconv.Atoi(strings.TrimSpace(out))
	logs := s.logs()
	cl, sl := byPid(logs, clientPid), byPid(logs, srvPid)
	if len(cl) == 0 || len(sl) != 1 {
		t.Fatalf("want the client's (pid %d) logs and one of the server (pid %d); logs:\n%s", clientPid, srvPid, describe(logs))
	}
	type dgram struct {
		op            libsockcap.Op
		local, remote string
		bytes         int64
		sum           uint32
	}
	transfers := func(l *plog) []dgram {
		var d []dgram
		for _, ev := range l.Events {
			if ev.Proto == libsockcap.ProtoUDP && (ev.Op == libsockcap.OpSend || ev.Op == libsockcap.OpRecv) && ev.Ret > 0 {
				d = append(d, dgram{ev.Op, ev.Local.String(), ev.Remote.String(), ev.Bytes, ev.Sum})
			}
		}
		return d
	}
	c, sv := transfers(cl[len(cl)-1]), transfers(sl[0])
	if len(c) != 2*n || len(sv) != 2*n {
		t.Fatalf("client %d, server %d transfers, want %d each:\n%v\n%v", len(c), len(sv), 2*n, c, sv)
	}
	server, client := addr(port), addr(lport)
	for i := 0; i < n; i++ {
		req := udpPayload(i)
		rep := append([]byte{}, req...)
		for a, b := 0, len(rep)-1; a < b; a, b = a+1, b-1 {
			rep[a], rep[b] = rep[b], rep[a]
		}
		rep = append(rep, '!')
		reqSum, repSum := libsockcap.Checksum(req, len(req)), libsockcap.Checksum(rep, len(rep))
		want := []struct {
			got  dgram
			want dgram
		}{
			{c[2*i], dgram{libsockcap.OpSend, client, server, int64(len(req)), reqSum}},
			{sv[2*i], dgram{libsockcap.OpRecv, server, client, int64(len(req)), reqSum}},
			{sv[2*i+1], dgram{libsockcap.OpSend, server, client, int64(len(rep)), repSum}},
			{c[2*i+1], dgram{libsockcap.OpRecv, client, server, int64(len(rep)), repSum}},
		}
		for _, w := range want {
			if w.got != w.want {
				t.Errorf("datagram %d: got %+v, want %+v", i, w.got, w.want)
			}
		}
	}
}

// waitUDP waits until a socket is bound to UDP 127.0.0.1:port.
func waitUDP(t *testing.T, port int) {
	t.Helper()
	want := fmt.Sprintf(" 0100007F:%04X ", port)
	for i := 0; i < 400; i++ {
		if b, err := os.ReadFile("/proc/net/udp"); err == nil && strings.Contains(string(b), want) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("nothing bound to UDP port %d", port)
}

// unixPair forks twice: over a socketpair the child sends 100 bytes and gets
// 50 back; over a named socket a second child connects, sends 200 and gets
// 20. It prints both children's pids.
const unixPair = `
import os, socket, sys
path = sys.argv[1]
a, b = socket.socketpair()
c1 = os.fork()
if c1 == 0:
    a.close()
    b.sendall(b"p" * 100)
    got = b""
    while len(got) < 50:
        got += b.recv(50 - len(got))
    os._exit(0)
b.close()
got = b""
while len(got) < 100:
    got += a.recv(100 - len(got))
a.sendall(b"q" * 50)
os.waitpid(c1, 0)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
c2 = os.fork()
if c2 == 0:
    srv.close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b"r" * 200)
    got = b""
    while len(got) < 20:
        got += s.recv(20 - len(got))
    os._exit(0)
conn, _ = srv.accept()
got = b""
while len(got) < 200:
    got += conn.recv(200 - len(got))
conn.sendall(b"s" * 20)
os.waitpid(c2, 0)
print(c1, c2)
`

// TestUnixSockets: a socketpair shared with a forked child, and a named
// socket between a server and a forked client. Bytes at both ends, the
// children's own logs, and the peer pids of the named connection.
func TestUnixSockets(t *testing.T) {
	s := newSession(t)
	py := python(t)
	path := t.TempDir() + "/named.sock"
	pid, out := runWithPid(s, "unix", py, "-c", unixPair, path)
	f := strings.Fields(out)
	if len(f) != 2 {
		t.Fatalf("output %q", out)
	}
	c1, _ := strconv.Atoi(f[0])
	c2, _ := strconv.Atoi(f[1])
	logs := s.logs()
	parent := byPid(logs, pid)
	if len(parent) == 0 || len(byPid(logs, c1)) != 1 || len(byPid(logs, c2)) != 1 {
		t.Fatalf("want logs for %d, %d, %d:\n%s", pid, c1, c2, describe(logs))
	}
	p := parent[len(parent)-1]
	for _, c := range []int{c1, c2} {
		if l := byPid(logs, c)[0]; int(l.Ppid) != pid {
			t.Errorf("child %d: ppid %d, want %d", c, l.Ppid, pid)
		}
	}
	if count(p, libsockcap.OpSocketpair) != 1 {
		t.Errorf("parent logged %d socketpair calls", count(p, libsockcap.OpSocketpair))
	}
	// Sums per (pid, fd) over Unix stream sockets.
	type key struct{ pid, fd int32 }
	sent, recvd, peer := map[key]int64{}, map[key]int64{}, map[key]int32{}
	for _, l := range logs {
		for _, ev := range l.Events {
			if ev.Proto != libsockcap.ProtoUnix || ev.Ret <= 0 {
				continue
			}
			k := key{l.Pid, ev.Fd}
			switch ev.Op {
			case libsockcap.OpSend:
				sent[k] += ev.Bytes
			case libsockcap.OpRecv:
				recvd[k] += ev.Bytes
			default:
				continue
			}
			if ev.PeerPid != 0 {
				peer[k] = ev.PeerPid
			}
		}
	}
	type flow struct {
		pid        int
		sent, recv int64
		peer       int // 0: not checked
	}
	var got []flow
	for k := range sent {
		got = append(got, flow{int(k.pid), sent[k], recvd[k], int(peer[k])})
	}
	for k := range recvd {
		if _, ok := sent[k]; !ok {
			got = append(got, flow{int(k.pid), 0, recvd[k], int(peer[k])})
		}
	}
	want := []flow{
		{pid, 50, 100, 0},  // socketpair, parent end
		{c1, 100, 50, 0},   // socketpair, child end
		{pid, 20, 200, c2}, // named socket, accepted end: the peer is the client
		{c2, 200, 20, pid}, // named socket, client end: the peer is the server
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if g.pid == w.pid && g.sent == w.sent && g.recv == w.recv && (w.peer == 0 || g.peer == w.peer) {
				found = true
			}
		}
		if !found {
			t.Errorf("no Unix flow %+v; flows: %+v", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d Unix flows, want %d: %+v", len(got), len(want), got)
	}
}

// spawner listens, starts a client through subprocess (vfork + exec) or
// os.posix_spawn, serves it, and prints the child's pid.
const spawner = `
import os, socket, subprocess, sys
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]
client = "import socket,sys; s=socket.create_connection(('127.0.0.1',%d)); s.sendall(b'c'*300); n=0\nwhile n<40: n+=len(s.recv(40))" % port
if sys.argv[1] == "subprocess":
    p = subprocess.Popen([sys.executable, "-c", client])
    pid = p.pid
else:
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", client], os.environ)
conn, _ = srv.accept()
got = b""
while len(got) < 300:
    got += conn.recv(300 - len(got))
conn.sendall(b"d" * 40)
os.waitpid(pid, 0)
print(pid, port)
`

// TestSubprocess: a python parent starts a python child (subprocess, which
// uses vfork, and os.posix_spawn). The child writes its own log; the
// parent's log still holds its listen before the spawn and its accept and
// transfers after it, and nothing of the child's.
func TestSubprocess(t *testing.T) {
	py := python(t)
	for _, how := range []string{"subprocess", "posix_spawn"} {
		t.Run(how, func(t *testing.T) {
			s := newSession(t)
			pid, out := runWithPid(s, "spawn", py, "-c", spawner, how)
			var child, port int
			if _, err := fmt.Sscan(out, &child, &port); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			logs := s.logs()
			parents, children := byPid(logs, pid), byPid(logs, child)
			if len(parents) == 0 || len(children) == 0 {
				t.Fatalf("want logs for parent %d and child %d:\n%s", pid, child, describe(logs))
			}
			p := parents[len(parents)-1]
			cs := conns(logs, libsockcap.ProtoTCP)
			server := addr(port)
			cc := one(t, cs, int32(child), "", server)
			if cc.opened != libsockcap.OpConnect || cc.sent != 300 || cc.recvd != 40 {
				t.Errorf("child %v, want connect, sent 300 received 40", cc)
			}
			pc := one(t, cs, int32(pid), server, cc.local)
			if pc.opened != libsockcap.OpAccept || pc.recvd != 300 || pc.sent != 40 {
				t.Errorf("parent %v, want accept, received 300 sent 40", pc)
			}
			if count(p, libsockcap.OpListen) != 1 || count(p, libsockcap.OpConnect) != 0 {
				t.Errorf("parent log: %d listen, %d connect; want 1 and 0", count(p, libsockcap.OpListen), count(p, libsockcap.OpConnect))
			}
			for _, l := range children {
				if int(l.Ppid) != pid {
					t.Errorf("child log %s: ppid %d, want %d", l.File, l.Ppid, pid)
				}
			}
		})
	}
}

// closer daemonizes (fork, setsid, fork), closes every fd it has, either
// with os.closerange (close_range(2) through libc) or one close at a time,
// then serves: each connection gets "pong" per "ping", until one carried data.
const closer = `
import os, socket, sys
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
if sys.argv[2] == "closerange":
    os.closerange(0, 65536)
else:
    for fd in range(0, 1024):
        try:
            os.close(fd)
        except OSError:
            pass
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(4)
while True:
    c, _ = srv.accept()
    data = c.recv(4)
    if data:
        c.sendall(b"pong")
        c.close()
        break
    c.close()
`

// TestDaemonClosesFds: a daemon that closes all its descriptors after start
// keeps being logged (libsockcap keeps no fd open).
func TestDaemonClosesFds(t *testing.T) {
	py := python(t)
	for _, how := range []string{"closerange", "loop"} {
		t.Run(how, func(t *testing.T) {
			s := newSession(t)
			port := freePort(t)
			s.run("daemon", py, "-c", closer, strconv.Itoa(port), how)
			var c net.Conn
			var err error
			for i := 0; i < 200; i++ {
				if c, err = net.Dial("tcp", addr(port)); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte("ping"))
			buf := make([]byte, 4)
			if _, err := c.Read(buf); err != nil || string(buf) != "pong" {
				t.Fatalf("reply %q, %v", buf, err)
			}
			local := c.LocalAddr().String()
			c.Close()
			var d *conn
			for i := 0; i < 100 && d == nil; i++ { // the daemon may still be closing
				if m := find(conns(s.logs(), libsockcap.ProtoTCP), 0, addr(port), local); len(m) == 1 && m[0].sent == 4 {
					d = m[0]
				} else {
					time.Sleep(50 * time.Millisecond)
				}
			}
			if d == nil || d.opened != libsockcap.OpAccept || d.recvd != 4 || d.sent != 4 {
				t.Fatalf("daemon connection %v, want accept, 4 bytes each way:\n%s", d, listConns(conns(s.logs(), libsockcap.ProtoTCP)))
			}
		})
	}
}
