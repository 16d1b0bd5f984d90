//go:build memtrace

// Package memtrace (build tag memtrace, diagnostics only) samples the
// process's resident memory every millisecond and prints, at each mark, how
// much memory was faulted in afresh (the sum of the rises of the RSS) next
// to the RSS and the Go heap's own accounts.
package memtrace

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"wap5/internal/hugemem"
)

var st struct {
	sync.Mutex
	rss, peak, rise, fall int64
	t0                    time.Time
	lastMark              int64
}

// thp is the machine-wide count of transparent huge pages faulted in
// (/proc/vmstat thp_fault_alloc): other processes add to it.
func thp() int64 {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("thp_fault_alloc ")); ok {
			v, _ := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
			return v
		}
	}
	return 0
}

var thp0 int64

// statm is the process's resident memory (RSS) in bytes; without the
// pages of mapped files (a mapped input is in the page cache, not fresh
// memory) where anon is set.
func statm() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0
	}
	v, _ := strconv.ParseInt(string(f[1]), 10, 64)
	if anon {
		sh, _ := strconv.ParseInt(string(f[2]), 10, 64)
		v -= sh
	}
	return v * 4096
}

// anon: WAP5_MEMTRACE=anon counts anonymous memory only.
var anon = os.Getenv("WAP5_MEMTRACE") == "anon"

// note adds the RSS r, sampled now, to the rises or falls (st locked).
func note(r int64) {
	if r > st.rss {
		st.rise += r - st.rss
	} else {
		st.fall += st.rss - r
	}
	st.rss = r
	st.peak = max(st.peak, r)
}

func init() {
	if os.Getenv("WAP5_MEMTRACE") == "" {
		return
	}
	st.t0 = time.Now()
	thp0 = thp()
	st.rss = statm()
	st.peak = st.rss
	go func() {
		for {
			time.Sleep(500 * time.Microsecond)
			r := statm()
			st.Lock()
			note(r)
			st.Unlock()
		}
	}()
}

var samples = []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}, {Name: "/memory/classes/total:bytes"},
	{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}

var (
	seen               = map[string]bool{}
	lastRise, lastFall int64
)

// Mark prints the state at a named point.
func Mark(name string) {
	if os.Getenv("WAP5_MEMTRACE") == "" {
		return
	}
	r := statm()
	st.Lock()
	note(r)
	rise, fall, peak := st.rise, st.fall, st.peak
	if seen[name] && rise-lastRise+fall-lastFall < 2<<20 {
		st.Unlock()
		return
	}
	seen[name], lastRise, lastFall = true, rise, fall
	st.Unlock()
	metrics.Read(samples)
	mb := func(v int64) float64 { return float64(v) / (1 << 20) }
	u := func(i int) int64 { return int64(samples[i].Value.Uint64()) }
	if d := os.Getenv("WAP5_MEMTRACE_SMAPS"); d != "" && !seen[name+"/smaps"] {
		seen[name+"/smaps"] = true
		b, _ := os.ReadFile("/proc/self/smaps")
		os.WriteFile(d+"/"+strings.ReplaceAll(name, " ", "_")+".smaps", b, 0o644)
	}
	k, kr, l := hugemem.Kept()
	fmt.Fprintf(os.Stderr, "memtrace %6.3fs %-28s rss %6.0f peak %6.0f rise %6.0f fall %6.0f | go mapped %6.0f released %6.0f live %6.0f gcs %d | kept %4.0f (resident %4.0f) maps %4.0f thp %d\n",
		time.Since(st.t0).Seconds(), name, mb(r), mb(peak), mb(rise), mb(fall), mb(u(1)), mb(u(0)), mb(u(2)), u(3), mb(int64(k)), mb(int64(kr)), mb(int64(l)), thp()-thp0)
}
