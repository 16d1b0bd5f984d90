package preflight

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// treeSource opens one socket, forks a child that opens a socketpair and an
// io_uring instance, and both wait until stdin closes.
const treeSource = `#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>
int main(void) {
	char b;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	pid_t c = fork();
	if (c == 0) {
		int sv[2];
		socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
		unsigned char params[120];
		memset(params, 0, sizeof params);
		syscall(SYS_io_uring_setup, 4, params);
		(void)!write(1, "r", 1);
		while (read(0, &b, 1) > 0) {}
		return 0;
	}
	while (read(0, &b, 1) > 0) {}
	waitpid(c, 0, 0);
	return s < 0;
}
`

func TestWatch(t *testing.T) {
	f := build(t)
	src := filepath.Join(f.dir, "tree.c")
	bin := filepath.Join(f.dir, "tree")
	if err := os.WriteFile(src, []byte(treeSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("gcc", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := Watch(cmd.Process.Pid, 10*time.Millisecond)
	ready := make([]byte, 1)
	if _, err := stdout.Read(ready); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	w.Sample()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := w.Stop()
	if len(seen) != 2 {
		t.Fatalf("saw %d processes, want 2: %+v", len(seen), seen)
	}
	byPid := map[int]Seen{}
	for _, s := range seen {
		byPid[s.Pid] = s
	}
	parent, ok := byPid[cmd.Process.Pid]
	if !ok {
		t.Fatalf("root %d not seen: %+v", cmd.Process.Pid, seen)
	}
	var child Seen
	for _, s := range seen {
		if s.Pid != parent.Pid {
			child = s
		}
	}
	if parent.Sockets != 1 || parent.IOUring || parent.Exe != bin {
		t.Errorf("parent %+v, want 1 socket, no io_uring, exe %s", parent, bin)
	}
	if child.Sockets != 3 || !child.IOUring || child.Ppid != parent.Pid {
		t.Errorf("child %+v, want 3 sockets (one inherited), io_uring, ppid %d", child, parent.Pid)
	}
}

// BenchmarkSample measures one /proc sample of a small tree (a shell with
// one child), the cost `wap5 run` pays every 100 ms.
func BenchmarkSample(b *testing.B) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	w := &Watcher{root: cmd.Process.Pid, procs: map[int]*watched{}}
	time.Sleep(50 * time.Millisecond)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Sample()
	}
}
