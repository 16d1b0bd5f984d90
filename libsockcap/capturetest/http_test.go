package capturetest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"wap5/libsockcap"
)

// transfer is what curl -w reports about one request.
type transfer struct {
	localPort      int
	sent, received int64
}

// curlFormat makes curl print, per URL, its local port, the bytes of the
// request it sent and of the headers and body it received.
const curlFormat = `%{local_port} %{size_request} %{size_header} %{size_download}\n`

func parseCurl(t *testing.T, out string) []transfer {
	t.Helper()
	var ts []transfer
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("curl -w line %q", line)
		}
		var n [4]int64
		for i := range f {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Fatalf("curl -w line %q: %v", line, err)
			}
			n[i] = v
		}
		ts = append(ts, transfer{localPort: int(n[0]), sent: n[1], received: n[2] + n[3]})
	}
	return ts
}

// perConnection sums curl's transfers by local port (one connection each).
func perConnection(ts []transfer) map[int]transfer {
	m := map[int]transfer{}
	for _, x := range ts {
		c := m[x.localPort]
		c.localPort = x.localPort
		c.sent += x.sent
		c.received += x.received
		m[x.localPort] = c
	}
	return m
}

// TestCurlPythonHTTP: curl fetches N files from python3's http.server. Each
// request is its own connection (HTTP/1.0); both logs must show exactly
// those connections with exactly the bytes curl reports, and the pids of
// the two processes.
func TestCurlPythonHTTP(t *testing.T) {
	s := newSession(t)
	py, curl := python(t), need(t, "curl")
	root := t.TempDir()
	const n = 6
	port := freePort(t)
	args := []string{curl, "-sS", "-w", curlFormat}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("f%d.txt", i)
		writeFile(t, filepath.Join(root, name), strings.Repeat("x", 100*i+7))
		args = append(args, "-o", "/dev/null", fmt.Sprintf("http://127.0.0.1:%d/%s", port, name))
	}
	srv := s.start("web", py, "-m", "http.server", "--bind", "127.0.0.1", "--directory", root, strconv.Itoa(port))
	probe := waitTCP(t, port, srv)
	srvPid := srv.pid()
	curlPid, out := runWithPid(s, "client", args...)
	srv.stop(syscall.SIGTERM)
	ts := parseCurl(t, out)
	if len(ts) != n {
		t.Fatalf("curl reported %d transfers, want %d:\n%s", len(ts), n, out)
	}

	logs := s.logs()
	srvLogs, curlLogs := byPid(logs, srvPid), byPid(logs, curlPid)
	if len(srvLogs) != 1 || len(curlLogs) == 0 {
		t.Fatalf("want one log for the server (pid %d) and curl's (pid %d); logs:\n%s", srvPid, curlPid, describe(logs))
	}
	if !strings.HasPrefix(filepath.Base(srvLogs[0].Exe), "python3") || srvLogs[0].Node != "web" {
		t.Errorf("server log header: exe %s node %s", srvLogs[0].Exe, srvLogs[0].Node)
	}
	curlLog := curlLogs[len(curlLogs)-1] // after sh's exec
	if filepath.Base(curlLog.Exe) != "curl" || curlLog.Node != "client" {
		t.Errorf("curl log header: exe %s node %s", curlLog.Exe, curlLog.Node)
	}
	cs := conns(logs, libsockcap.ProtoTCP)
	server := addr(port)
	// Client side: exactly one connection per transfer, with curl's bytes.
	if got := find(cs, int32(curlPid), "", server); len(got) != n {
		t.Fatalf("curl made %d connections to %s in the log, want %d:\n%s", len(got), server, n, listConns(cs))
	}
	for _, x := range ts {
		c := one(t, cs, int32(curlPid), addr(x.localPort), server)
		if c.opened != libsockcap.OpConnect || c.sent != x.sent || c.recvd != x.received {
			t.Errorf("client %v, want connect, sent %d, received %d", c, x.sent, x.received)
		}
		// Server side: the same connection, bytes mirrored.
		sc := one(t, cs, int32(srvPid), server, addr(x.localPort))
		if sc.opened != libsockcap.OpAccept || sc.recvd != x.sent || sc.sent != x.received {
			t.Errorf("server %v, want accept, received %d, sent %d", sc, x.sent, x.received)
		}
	}
	// The server accepted those connections and the readiness probe, nothing else.
	if got := find(cs, int32(srvPid), server, ""); len(got) != n+1 {
		t.Errorf("server has %d connections, want %d + the probe:\n%s", len(got), n, listConns(cs))
	}
	pc := one(t, cs, int32(srvPid), server, probe)
	if pc.sent != 0 || pc.recvd != 0 {
		t.Errorf("probe connection %v carried bytes", pc)
	}
	if c := count(srvLogs[0], libsockcap.OpListen); c != 1 {
		t.Errorf("server logged %d listen calls, want 1", c)
	}
}

// runWithPid runs a traced command through sh, which prints its pid and
// execs the command, and returns that pid and the command's output.
func runWithPid(s *session, node string, args ...string) (int, string) {
	s.t.Helper()
	out := s.run(node, append([]string{"/bin/sh", "-c", `echo $$; exec "$@"`, "sh"}, args...)...)
	first, rest, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		s.t.Fatalf("no pid in %q", out)
	}
	return pid, rest
}
