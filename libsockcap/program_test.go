package libsockcap_test

import (
	"testing"

	"wap5/libsockcap"
)

func TestProcessProgram(t *testing.T) {
	for _, c := range []struct {
		exe  string
		argv []string
		want string
	}{
		{"/usr/bin/redis-check-rdb", []string{"redis-server", "--port", "6379"}, "redis-server"},
		{"/usr/bin/dash", []string{"sh", "-c", "x"}, "sh"},
		{"/usr/bin/busybox", []string{"/bin/wget"}, "wget"},
		{"/usr/bin/python3.11", []string{"python3", "app.py"}, "python3.11"},
		{"/usr/bin/python3", []string{"/usr/bin/python3.11"}, "python3"},
		{"/usr/sbin/nginx", []string{"nginx: worker process"}, "nginx"},
		{"/usr/lib/postgresql/15/bin/postgres", []string{"postgres: app db 127.0.0.1(4711) idle"}, "postgres"},
		{"/usr/bin/bash", []string{"-bash"}, "bash"},
		{"/usr/bin/curl", nil, "curl"},
		{"/usr/bin/curl", []string{""}, "curl"},
		{"", []string{"x"}, ""},
	} {
		p := &libsockcap.Process{Exe: c.exe, Argv: c.argv}
		if got := p.Program(); got != c.want {
			t.Errorf("exe %q argv %q: %q, want %q", c.exe, c.argv, got, c.want)
		}
	}
}
