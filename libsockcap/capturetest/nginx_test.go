package capturetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wap5/libsockcap"
)

const nginxConf = `daemon off;
%[4]s
master_process on;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	server {
		listen 127.0.0.1:%[2]d;
		location / { proxy_pass http://127.0.0.1:%[3]d; }
	}
}
`

// TestNginxProxy: nginx (a master and two forked workers) proxies curl's
// requests to a python upstream. Checked: the master's forks are the
// workers' logs; every client connection appears in exactly one worker with
// curl's bytes; every upstream connection appears at a worker and at python
// with the same bytes, one per request. Workers run as root, and as nginx's
// default user nobody (they drop privileges after the fork).
func TestNginxProxy(t *testing.T) {
	for _, tc := range []struct{ name, user string }{
		{"root", "user root;"},
		{"nobody", ""},
	} {
		t.Run(tc.name, func(t *testing.T) { nginxProxy(t, tc.user) })
	}
}

func nginxProxy(t *testing.T, userLine string) {
	s := newSession(t)
	nginx, py, curl := need(t, "nginx"), python(t), need(t, "curl")
	// Workers that switch to nobody keep logging into wap5 run's 0700
	// directory (libsockcap hands their logs over before the switch).
	dir := t.TempDir()
	openUp(t, dir)
	root := filepath.Join(dir, "www")
	const n = 8
	port, upPort := freePort(t), freePort(t)
	writeFile(t, filepath.Join(dir, "nginx.conf"), fmt.Sprintf(nginxConf, dir, port, upPort, userLine))
	for i := 0; i < n; i++ {
		writeFile(t, filepath.Join(root, fmt.Sprintf("p%d", i)), strings.Repeat("y", 1000*i+3))
	}
	up := s.start("upstream", py, "-m", "http.server", "--bind", "127.0.0.1", "--directory", root, strconv.Itoa(upPort))
	upProbe := waitTCP(t, upPort, up)
	upPid := up.pid()
	ngx := s.start("proxy", nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	probe := waitTCP(t, port, ngx)
	masterPid := ngx.pid()

	args := []string{curl, "-sS", "-w", curlFormat}
	for i := 0; i < n; i++ {
		args = append(args, "-o", "/dev/null", fmt.Sprintf("http://127.0.0.1:%d/p%d", port, i))
	}
	curlPid, out := runWithPid(s, "client", args...)
	ngx.stop(syscall.SIGQUIT)
	up.stop(syscall.SIGTERM)
	ts := parseCurl(t, out)
	if len(ts) != n {
		t.Fatalf("curl reported %d transfers, want %d", len(ts), n)
	}

	logs := s.logs()
	master := byPid(logs, masterPid)
	if len(master) != 1 {
		t.Fatalf("want one log for the nginx master %d:\n%s", masterPid, describe(logs))
	}
	var forked, workers []int
	for _, ev := range master[0].Events {
		if ev.Op == libsockcap.OpFork && ev.Child > 0 {
			forked = append(forked, int(ev.Child))
		}
	}
	for _, l := range logs {
		if int(l.Ppid) == masterPid && filepath.Base(l.Exe) == "nginx" {
			workers = append(workers, int(l.Pid))
		}
	}
	sort.Ints(forked)
	if len(workers) != 2 || fmt.Sprint(forked) != fmt.Sprint(workers) {
		t.Fatalf("master forked %v, worker logs %v; want the same two pids\n%s", forked, workers, describe(logs))
	}
	isWorker := func(pid int32) bool { return int(pid) == workers[0] || int(pid) == workers[1] }

	cs := conns(logs, libsockcap.ProtoTCP)
	server := addr(port)
	for lport, x := range perConnection(ts) {
		c := one(t, cs, int32(curlPid), addr(lport), server)
		if c.sent != x.sent || c.recvd != x.received {
			t.Errorf("curl %v, want sent %d received %d", c, x.sent, x.received)
		}
		w := one(t, cs, 0, server, addr(lport))
		if !isWorker(w.pid) || w.opened != libsockcap.OpAccept || w.recvd != x.sent || w.sent != x.received {
			t.Errorf("nginx side %v, want a worker's accept, received %d sent %d", w, x.sent, x.received)
		}
	}
	if pc := one(t, cs, 0, server, probe); !isWorker(pc.pid) || pc.sent != 0 || pc.recvd != 0 {
		t.Errorf("probe connection %v", pc)
	}
	// Upstream: one connection per request, both ends agree.
	upstream := addr(upPort)
	ups := find(cs, int32(upPid), upstream, "")
	if len(ups) != n+1 {
		t.Fatalf("python accepted %d connections, want %d + the probe:\n%s", len(ups), n, listConns(cs))
	}
	for _, u := range ups {
		if u.remote == upProbe {
			continue
		}
		w := one(t, cs, 0, u.remote, upstream)
		if !isWorker(w.pid) || w.opened != libsockcap.OpConnect || w.sent != u.recvd || w.recvd != u.sent || u.sent == 0 {
			t.Errorf("upstream connection: worker %v, python %v", w, u)
		}
	}
}

// shareNode creates the node's log directory writable by every user, for
// programs that drop privileges before they create their logs.
func (s *session) shareNode(node string) {
	s.t.Helper()
	// t.TempDir makes 0700 directories: open the path up to the log dir.
	openUp(s.t, filepath.Dir(s.dir))
	for _, d := range []string{s.dir, filepath.Join(s.dir, node)} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			s.t.Fatal(err)
		}
		if err := os.Chmod(d, 0o1777); err != nil {
			s.t.Fatal(err)
		}
	}
}

// openUp makes dir and its parents below the system temp dir searchable by
// every user.
func openUp(t *testing.T, dir string) {
	t.Helper()
	top := filepath.Clean(os.TempDir())
	for d := filepath.Clean(dir); strings.HasPrefix(d, top+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

const nginxStaticConf = `daemon off;
master_process on;
worker_processes 1;
%[3]s
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 256; }
http {
	access_log off;
	keepalive_requests 100000000;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	server { listen 127.0.0.1:%[2]d; root %[1]s/www; }
}
`

// TestNginxUnderLoad: wrk keeps one nginx worker busy for a few seconds
// (hundreds of thousands of requests, megabytes of log); every response wrk
// counted must be one send in the worker's log. Run with the worker as root
// and as nobody, which can no longer open its log file to grow it.
func TestNginxUnderLoad(t *testing.T) {
	nginx, wrk := need(t, "nginx"), need(t, "wrk")
	const connections = 8
	for _, tc := range []struct{ name, user string }{
		{"root", "user root;"},
		{"nobody", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			dir := t.TempDir()
			openUp(t, dir)
			port := freePort(t)
			writeFile(t, filepath.Join(dir, "nginx.conf"), fmt.Sprintf(nginxStaticConf, dir, port, tc.user))
			writeFile(t, filepath.Join(dir, "www", "f"), strings.Repeat("z", 300))
			openUp(t, filepath.Join(dir, "www"))
			ngx := s.start("load", nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
			waitTCP(t, port, ngx) // its connection carries no request: not a send
			out, err := exec.Command(wrk, "-t1", "-c"+strconv.Itoa(connections), "-d4s", fmt.Sprintf("http://127.0.0.1:%d/f", port)).CombinedOutput()
			if err != nil {
				t.Fatalf("wrk: %v\n%s", err, out)
			}
			var requests int64
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[1] == "requests" && f[2] == "in" {
					requests, _ = strconv.ParseInt(f[0], 10, 64)
				}
				if strings.Contains(line, "Non-2xx") {
					t.Fatalf("nginx answered errors:\n%s", out)
				}
			}
			ngx.stop(syscall.SIGQUIT)
			var sends, dropped int64
			var span time.Duration
			for _, l := range s.logs() {
				if filepath.Base(l.Exe) != "nginx" || count(l, libsockcap.OpAccept) == 0 {
					continue // the master
				}
				for _, ev := range l.Events {
					switch {
					case ev.Op == libsockcap.OpSend && ev.Proto == libsockcap.ProtoTCP && ev.Ret > 0:
						sends++
					case ev.Op == libsockcap.OpGap:
						dropped += ev.Bytes
					}
				}
				if n := len(l.Events); n > 1 {
					span = time.Duration(l.Events[n-1].Time - l.Events[0].Time)
				}
			}
			t.Logf("wrk: %d requests; worker log: %d sends, %d events dropped, events span %v", requests, sends, dropped, span)
			// wrk stops counting at the deadline: up to one response per
			// connection may still be in flight then.
			if requests < 1000 || sends < requests || sends > requests+connections {
				t.Errorf("wrk counted %d responses, the worker's log has %d sends, want %d to %d (%d dropped, recorded over %v of 4s)",
					requests, sends, requests, requests+connections, dropped, span)
			}
		})
	}
}
