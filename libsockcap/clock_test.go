package libsockcap

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestRecordClock checks the record clock (sc_now) with bench/capture-clock.c,
// which compiles the library's sources in: with the TSC clock on, every stamp
// of two threads lies within 1 µs of CLOCK_REALTIME read through the vDSO just
// before and after it, and no thread's stamps step back by more than that;
// under libfaketime and with SOCKCAP_CLOCK=vdso the TSC clock is off, so the
// process's shifted clock is the one recorded (FORMAT.md, "Time").
func TestRecordClock(t *testing.T) {
	if os.Getenv("SOCKCAP_PRELOAD_EXTRA") != "" {
		t.Skip("not under the sanitized build")
	}
	bin := filepath.Join(t.TempDir(), "capture-clock")
	args := []string{"-O2", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-o", bin,
		filepath.Join("..", "bench", "capture-clock.c")}
	for _, f := range []string{"config.c", "encode.c", "fdtable.c", "segment.c"} {
		args = append(args, filepath.Join("c", f))
	}
	args = append(args, "-ldl", "-lpthread")
	if b, err := exec.Command(cc(), args...).CombinedOutput(); err != nil {
		t.Fatalf("building capture-clock: %v\n%s", err, b)
	}
	run := func(env []string, argv ...string) map[string]float64 {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
		m := map[string]float64{}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				if v, err := strconv.ParseFloat(f[1], 64); err == nil {
					m[f[0]] = v
				}
			}
		}
		if _, ok := m["tsc_ok"]; !ok {
			t.Fatalf("%s: no tsc_ok in\n%s", strings.Join(argv, " "), out)
		}
		return m
	}

	m := run(nil, bin, "600", "2", "100000")
	t.Logf("TSC clock on: %v; %v reads; worst %v ns ahead, %v ns behind, step back %v ns; one read %v ns (vDSO %v ns)",
		m["tsc_ok"], m["reads"], m["max_ahead_ns"], m["max_behind_ns"], m["max_step_back_ns"], m["sc_now_read_ns"], m["vdso_read_ns"])
	if m["tsc_ok"] == 1 {
		for _, k := range []string{"max_ahead_ns", "max_behind_ns", "max_step_back_ns"} {
			if m[k] > 1000 {
				t.Errorf("%s = %v ns: the TSC clock strays from CLOCK_REALTIME", k, m[k])
			}
		}
	} else if cpu, err := os.ReadFile("/proc/cpuinfo"); err == nil && runtime.GOARCH == "amd64" &&
		strings.Contains(string(cpu), " constant_tsc") && strings.Contains(string(cpu), " nonstop_tsc") {
		t.Errorf("the CPU has an invariant TSC but the TSC clock is off")
	}

	if m := run([]string{"SOCKCAP_CLOCK=vdso"}, bin, "50", "1", "1000"); m["tsc_ok"] != 0 {
		t.Errorf("SOCKCAP_CLOCK=vdso: the TSC clock is still on")
	}
	if ft, err := exec.LookPath("faketime"); err == nil {
		if m := run(nil, ft, "-f", "+5s", bin, "50", "1", "1000"); m["tsc_ok"] != 0 {
			t.Errorf("under libfaketime the TSC clock is on: the shifted clock would not be recorded")
		}
	} else {
		t.Log("faketime missing: the libfaketime case is not checked")
	}
}
