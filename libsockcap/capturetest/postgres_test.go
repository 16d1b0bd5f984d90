package capturetest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"wap5/libsockcap"
)

// TestPostgres: a postmaster (run as user postgres) forks one backend per
// connection. psql connects twice over TCP and once over the Unix socket.
// Checked: the postmaster accepted each connection and forked a backend
// whose own log carries it; the backend's bytes mirror psql's exactly; the
// Unix connection names psql as the peer; query results arrived whole.
func TestPostgres(t *testing.T) {
	s := newSession(t)
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		need(t, "initdb") // fails or skips with the message
	}
	pgbin := filepath.Dir(bins[len(bins)-1])
	setpriv, psql := need(t, "setpriv"), need(t, "psql")
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	base := t.TempDir()
	openUp(t, base)
	data, sock := filepath.Join(base, "data"), filepath.Join(base, "sock")
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	initdb := exec.Command(setpriv, "--reuid=postgres", "--regid=postgres", "--init-groups",
		filepath.Join(pgbin, "initdb"), "-D", data, "--auth=trust", "-U", "postgres", "--no-sync")
	if b, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, b)
	}
	s.shareNode("db")
	port := freePort(t)
	srv := s.start("db", setpriv, "--reuid=postgres", "--regid=postgres", "--init-groups",
		filepath.Join(pgbin, "postgres"), "-D", data, "-k", sock, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "logging_collector=off")
	probe := waitTCP(t, port, srv)
	pmPid := srv.pid()

	queries := []struct{ host, sql, want string }{
		{"127.0.0.1", "select repeat('z', 5000)", strings.Repeat("z", 5000)},
		{"127.0.0.1", "select count(*) from generate_series(1, 777)", "777"},
		{sock, "select 6 * 7", "42"},
	}
	var clients []int
	for _, q := range queries {
		conninfo := fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable gssencmode=disable", q.host, port)
		pid, out := runWithPid(s, "client", psql, "-At", "-d", conninfo, "-c", q.sql)
		if strings.TrimSpace(out) != q.want {
			t.Fatalf("psql %q printed %q", q.sql, out)
		}
		clients = append(clients, pid)
	}
	srv.stop(syscall.SIGINT)

	logs := s.logs()
	pm := byPid(logs, pmPid)
	if len(pm) != 2 || filepath.Base(pm[1].Exe) != "postgres" {
		t.Fatalf("want setpriv's and the postmaster's logs for pid %d:\n%s", pmPid, describe(logs))
	}
	forked := map[int32]bool{}
	for _, ev := range pm[1].Events {
		if ev.Op == libsockcap.OpFork {
			forked[ev.Child] = true
		}
	}
	cs := conns(logs, libsockcap.ProtoTCP)
	us := conns(logs, libsockcap.ProtoUnix)
	server := addr(port)
	for i, q := range queries {
		psqlLog := byPid(logs, clients[i])
		if len(psqlLog) == 0 {
			t.Fatalf("no log for psql %d", clients[i])
		}
		var c *conn
		var backendSide []*conn
		if q.host == sock {
			cl := find(us, int32(clients[i]), "", "")
			if len(cl) != 1 {
				t.Fatalf("psql %d has %d Unix connections:\n%s", clients[i], len(cl), listConns(us))
			}
			c = cl[0]
			// SO_PEERCRED names psql at the postmaster's accept and in the backend.
			accepts := 0
			for _, b := range find(us, 0, "", "") {
				switch {
				case b.pid == int32(pmPid) && b.peerPid == c.pid && b.opened == libsockcap.OpAccept:
					accepts++
				case b.pid != c.pid && b.pid != int32(pmPid) && b.peerPid == c.pid:
					backendSide = append(backendSide, b)
				}
			}
			if accepts != 1 {
				t.Errorf("postmaster accepted psql's Unix connection %d times", accepts)
			}
		} else {
			cl := find(cs, int32(clients[i]), "", server)
			if len(cl) != 1 {
				t.Fatalf("psql %d has %d connections to %s:\n%s", clients[i], len(cl), server, listConns(cs))
			}
			c = cl[0]
			// The postmaster accepts, its forked backend talks.
			if a := find(cs, int32(pmPid), server, c.local); len(a) != 1 || a[0].opened != libsockcap.OpAccept {
				t.Errorf("postmaster accepts of %s: %v", c.local, a)
			}
			for _, b := range find(cs, 0, server, c.local) {
				if b.pid != int32(pmPid) {
					backendSide = append(backendSide, b)
				}
			}
		}
		if len(backendSide) != 1 {
			t.Fatalf("psql connection %v: %d backends carry it, want 1:\n%s\n%s", c, len(backendSide), listConns(cs), listConns(us))
		}
		b := backendSide[0]
		bl := byPid(logs, int(b.pid))
		if !forked[b.pid] || len(bl) != 1 || int(bl[0].Ppid) != pmPid {
			t.Errorf("backend %d: forked by the postmaster %v, logs %d, ppid %d", b.pid, forked[b.pid], len(bl), bl[0].Ppid)
		}
		if b.sent != c.recvd || b.recvd != c.sent || c.sent == 0 {
			t.Errorf("psql %v, backend %v: bytes differ", c, b)
		}
		if i == 0 && c.recvd < 5000 {
			t.Errorf("psql received %d bytes for a 5000-byte row", c.recvd)
		}
	}
	if a := find(cs, int32(pmPid), server, probe); len(a) != 1 {
		t.Errorf("postmaster accepted the probe %d times", len(a))
	}
}
