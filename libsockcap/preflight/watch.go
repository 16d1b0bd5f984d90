package preflight

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Seen is what the /proc samples showed of one traced process.
type Seen struct {
	Pid, Ppid int
	Exe       string // last executable seen (/proc/PID/exe)
	Sockets   int    // distinct socket inodes seen among its fds
	IOUring   bool   // an io_uring instance among its fds
}

// Watcher samples /proc for a process and all its descendants. Processes
// that live shorter than one interval can be missed: the samples are a
// cheap lower bound on what the programs did, used only for warnings.
type Watcher struct {
	root     int
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}

	mu      sync.Mutex
	procs   map[int]*watched
	retired []*watched // earlier owners of reused pids
}

type watched struct {
	Seen
	start  string // starttime from /proc/PID/stat, to notice pid reuse
	inodes map[string]bool
	orphan bool // reparented to us (a subreaper): we must reap it
}

// Watch starts sampling root and its descendants every interval until Stop.
// The calling process's own children are included, since a subreaper
// inherits the orphans of the traced tree.
func Watch(root int, interval time.Duration) *Watcher {
	w := &Watcher{root: root, interval: interval, stop: make(chan struct{}), done: make(chan struct{}),
		procs: map[int]*watched{}}
	go w.loop()
	return w
}

func (w *Watcher) loop() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		w.Sample()
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

// Stop ends sampling (after one last sample) and returns every process seen,
// in order of pid.
func (w *Watcher) Stop() []Seen {
	close(w.stop)
	<-w.done
	w.Sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Seen
	for _, p := range w.procs {
		out = append(out, p.Seen)
	}
	for _, p := range w.retired {
		out = append(out, p.Seen)
	}
	sortSeen(out)
	return out
}

func sortSeen(s []Seen) {
	sort.SliceStable(s, func(i, j int) bool { return s[i].Pid < s[j].Pid })
}

// Sample takes one sample now. It is safe to call concurrently with the
// sampling loop.
func (w *Watcher) Sample() {
	w.mu.Lock()
	defer w.mu.Unlock()
	self := os.Getpid()
	// Breadth-first over the tree: root, our own children (orphans
	// reparented to a subreaper), then every task's children.
	queue := append([]int{w.root}, children(self)...)
	visited := map[int]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if visited[pid] || pid == self {
			continue
		}
		visited[pid] = true
		if !w.sampleOne(pid, self) {
			continue
		}
		queue = append(queue, children(pid)...)
	}
}

// sampleOne records pid's fds; false when pid is gone.
func (w *Watcher) sampleOne(pid, self int) bool {
	ppid, state, start, ok := readStat(pid)
	if !ok {
		return false
	}
	p := w.procs[pid]
	if p != nil && p.start != start {
		w.retired = append(w.retired, p) // pid reused
		p = nil
	}
	if p == nil {
		p = &watched{Seen: Seen{Pid: pid}, start: start, inodes: map[string]bool{}}
		w.procs[pid] = p
	}
	if ppid != self {
		p.Ppid = ppid
	} else if pid != w.root && p.Ppid != 0 {
		p.orphan = true
	}
	if state == "Z" {
		if p.orphan {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		return false
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
		p.Exe = exe
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	f, err := os.Open(dir)
	if err != nil {
		return true
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		l, err := os.Readlink(dir + n)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(l, "socket:["):
			if !p.inodes[l] {
				p.inodes[l] = true
				p.Sockets++
			}
		case l == "anon_inode:[io_uring]":
			p.IOUring = true
		}
	}
	return true
}

// readStat returns ppid, state and start time of pid from /proc/PID/stat.
func readStat(pid int) (ppid int, state, start string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", "", false
	}
	return parseStat(string(b))
}

// parseStat reads ppid, state and start time from the text of /proc/PID/stat.
func parseStat(s string) (ppid int, state, start string, ok bool) {
	i := strings.LastIndexByte(s, ')') // comm may contain spaces and parens
	if i < 0 {
		return 0, "", "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, "", "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], f[19], true
}

// children lists the children of every thread of pid.
func children(pid int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	d, err := os.Open(base)
	if err != nil {
		return nil
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(base + tid + "/children")
		if err != nil {
			continue
		}
		for _, c := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(c); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
