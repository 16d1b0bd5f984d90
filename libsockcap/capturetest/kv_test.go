package capturetest

import (
	"encoding/hex"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"wap5/libsockcap"
)

// exchangeClient connects to 127.0.0.1:argv[1], prints its local port, then
// for each (hex request, reply length) pair sends the request and reads
// exactly that many bytes, and prints the replies.
const exchangeClient = `
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print(s.getsockname()[1], flush=True)
args = sys.argv[2:]
for i in range(0, len(args), 2):
    s.sendall(bytes.fromhex(args[i]))
    want, got = int(args[i+1]), b""
    while len(got) < want:
        chunk = s.recv(want - len(got))
        if not chunk:
            sys.exit("early EOF")
        got += chunk
    print(got)
s.close()
`

type exchange struct{ request, reply string }

// TestKeyValueServers: redis-server (threads) and memcached (four worker
// threads, epoll) serve a python client whose requests and replies are
// known byte for byte, and redis-cli. Both ends must log exactly those bytes.
func TestKeyValueServers(t *testing.T) {
	py := python(t)
	for _, tc := range []struct {
		name   string
		server func(port int) []string
		talk   []exchange
	}{
		{"redis", func(port int) []string {
			return []string{need(t, "redis-server"), "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--io-threads", "2", "--loglevel", "warning"}
		}, []exchange{
			{"*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
			{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n", "+OK\r\n"},
			{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "$5\r\nvalue\r\n"},
		}},
		{"memcached", func(port int) []string {
			return []string{need(t, "memcached"), "-u", "root", "-l", "127.0.0.1", "-p", strconv.Itoa(port),
				"-U", "0", "-t", "4"}
		}, []exchange{
			{"set k 0 0 5\r\nhello\r\n", "STORED\r\n"},
			{"get k\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n"},
			{"version\r\n", ""}, // length filled in below from the real reply
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			port := freePort(t)
			srv := s.start(tc.name, tc.server(port)...)
			probe := waitTCP(t, port, srv)
			srvPid := srv.pid()

			args := []string{py, "-c", exchangeClient, strconv.Itoa(port)}
			var sent, recvd int64
			for _, x := range tc.talk {
				reply := len(x.reply)
				if x.reply == "" {
					reply = len("VERSION 1.6.18\r\n")
				}
				args = append(args, hex.EncodeToString([]byte(x.request)), strconv.Itoa(reply))
				sent += int64(len(x.request))
				recvd += int64(reply)
			}
			clientPid, out := runWithPid(s, "client", args...)
			lport, err := strconv.Atoi(strings.SplitN(out, "\n", 2)[0])
			if err != nil {
				t.Fatalf("client output %q", out)
			}
			var cliPid int
			if tc.name == "redis" {
				cliPid, _ = runWithPid(s, "client", need(t, "redis-cli"), "-p", strconv.Itoa(port), "SET", "foo", "bar")
			}
			srv.stop(syscall.SIGTERM)

			logs := s.logs()
			if len(byPid(logs, srvPid)) != 1 {
				t.Fatalf("want one log for %s (pid %d):\n%s", tc.name, srvPid, describe(logs))
			}
			cs := conns(logs, libsockcap.ProtoTCP)
			server := addr(port)
			c := one(t, cs, int32(clientPid), addr(lport), server)
			if c.sent != sent || c.recvd != recvd {
				t.Errorf("client %v, want sent %d received %d", c, sent, recvd)
			}
			sc := one(t, cs, int32(srvPid), server, addr(lport))
			if sc.opened != libsockcap.OpAccept || sc.recvd != sent || sc.sent != recvd {
				t.Errorf("server %v, want accept, received %d sent %d", sc, sent, recvd)
			}
			want := 2 // the python client and the probe
			if cliPid != 0 {
				want++
				cc := one(t, cs, int32(cliPid), "", server)
				rc := one(t, cs, int32(srvPid), server, cc.local)
				if cc.sent == 0 || cc.sent != rc.recvd || cc.recvd != rc.sent {
					t.Errorf("redis-cli %v, server %v", cc, rc)
				}
			}
			if got := find(cs, int32(srvPid), server, ""); len(got) != want {
				t.Errorf("server has %d connections, want %d:\n%s", len(got), want, listConns(cs))
			}
			one(t, cs, int32(srvPid), server, probe)
		})
	}
}
