package preflight

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Target is what Inspect learned about the program a command runs.
type Target struct {
	Command string   // as given on the command line
	Path    string   // the resolved file (a script when it starts with #!)
	Chain   []string // every file the kernel or env loads on the way, Path first
	ELF     string   // the ELF executable that finally runs

	Static        bool   // no PT_INTERP: LD_PRELOAD is never read
	NoLibc        bool   // dynamic, but libc is not among its DT_NEEDED libraries
	Go            bool   // Go binary: sockets go through raw system calls
	Musl          bool   // interpreter is ld-musl: a glibc library cannot load
	Interp        string // PT_INTERP of ELF
	Setuid        bool   // setuid to another user: the loader ignores LD_PRELOAD
	Setgid        bool   // setgid to another group: likewise
	Caps          bool   // file capabilities (security.capability xattr)
	ClassMismatch bool   // ELF class or machine differs from libsockcap.so's

	// Warnings say, one sentence each, why capture will not see the program.
	Warnings []string
}

// maxChain bounds #! and env indirections (the kernel allows 4 levels).
const maxChain = 5

// Inspect resolves command through pathEnv (a $PATH value) as execvp does,
// follows #! lines (and `/usr/bin/env prog`) to the ELF file that runs, and
// reports why libsockcap, preloaded from lib, would not see it. lib may be ""
// to skip the ELF class comparison. An error means the command cannot be run
// at all (not found, not executable); an unknown format is not an error.
func Inspect(command, pathEnv, lib string) (*Target, error) {
	t := &Target{Command: command}
	path, err := lookPath(command, pathEnv)
	if err != nil {
		return nil, err
	}
	t.Path = path
	for i := 0; i < maxChain; i++ {
		t.Chain = append(t.Chain, path)
		next, err := interpreter(path, pathEnv)
		if err != nil {
			return nil, err
		}
		if next == "" {
			break
		}
		path = next
	}
	// Every ELF on the chain runs with the preload; each can lose it.
	for _, p := range t.Chain {
		if isELF(p) {
			t.ELF = p
			t.inspectELF(p, lib)
		}
	}
	return t, nil
}

func lookPath(command, pathEnv string) (string, error) {
	if strings.Contains(command, "/") {
		st, err := os.Stat(command)
		if err != nil {
			return "", err
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s: permission denied", command)
		}
		return command, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, command)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", command, exec.ErrNotFound)
}

// interpreter returns the program a #! file asks for ("" when path is not a
// script). For `#!/usr/bin/env [-S] [VAR=x] prog` it returns prog as found
// in pathEnv: env is a small glibc program that passes LD_PRELOAD on, so
// the program it starts is the one that matters.
func interpreter(path, pathEnv string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", nil
	}
	if !strings.HasPrefix(line, "#!") {
		return "", nil
	}
	fields := strings.Fields(strings.TrimSpace(line[2:]))
	if len(fields) == 0 {
		return "", nil
	}
	interp := fields[0]
	if filepath.Base(interp) == "env" {
		for _, a := range fields[1:] {
			if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
				continue
			}
			return lookPath(a, pathEnv)
		}
	}
	return interp, nil
}

func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	n, _ := f.Read(magic[:])
	return n == 4 && bytes.Equal(magic[:], []byte(elf.ELFMAG))
}

func (t *Target) warnf(format string, a ...any) {
	t.Warnings = append(t.Warnings, fmt.Sprintf(format, a...))
}

func (t *Target) inspectELF(path, lib string) {
	f, err := elf.Open(path)
	if err != nil {
		t.warnf("%s: not a readable ELF file (%v): capture may not work", path, err)
		return
	}
	defer f.Close()

	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				interp = strings.TrimRight(string(b), "\x00")
			}
		}
	}
	t.Interp = interp
	isGo := false
	if _, err := buildinfo.ReadFile(path); err == nil {
		isGo = true
	} else if f.Section(".go.buildinfo") != nil || f.Section(".gopclntab") != nil {
		isGo = true
	} else if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.goexit" || s.Name == "runtime.main" {
				isGo = true
				break
			}
		}
	}
	switch {
	case interp == "" && isGo:
		t.Static = true // the Go warning below says it all
	case interp == "":
		t.Static = true
		t.warnf("%s is statically linked: LD_PRELOAD has no effect on it, so its sockets will not be captured", path)
	case strings.Contains(filepath.Base(interp), "ld-musl"):
		t.Musl = true
		t.warnf("%s uses musl libc (%s): libsockcap.so is built for glibc and will not be loaded into it", path, interp)
	default:
		libs, _ := f.ImportedLibraries()
		hasLibc := false
		for _, l := range libs {
			if strings.HasPrefix(l, "libc.so") {
				hasLibc = true
			}
		}
		if !hasLibc {
			t.NoLibc = true
			t.warnf("%s does not link libc dynamically: socket calls inside it cannot be interposed", path)
		}
	}
	if isGo {
		t.Go = true
		t.warnf("%s is a Go program: Go makes socket system calls directly, not through libc, so its sockets will not be captured", path)
	}
	if lib != "" {
		if lf, err := elf.Open(lib); err == nil {
			if lf.Class != f.Class || lf.Machine != f.Machine {
				t.ClassMismatch = true
				t.warnf("%s is %s %s but %s is %s %s: the loader will skip the library", path,
					f.Class, f.Machine, lib, lf.Class, lf.Machine)
			}
			lf.Close()
		}
	}
	t.inspectPrivileges(path)
}

// inspectPrivileges warns when exec would enter secure-execution mode
// (AT_SECURE), in which the loader ignores LD_PRELOAD for libraries outside
// the system paths. That happens when the effective ids change, so a
// setuid-root program run by root is fine.
func (t *Target) inspectPrivileges(path string) {
	st, err := os.Stat(path)
	if err != nil {
		return
	}
	euid, egid := effectiveIDs()
	sys, _ := st.Sys().(*syscall.Stat_t)
	if st.Mode()&fs.ModeSetuid != 0 && (sys == nil || int(sys.Uid) != euid) {
		t.Setuid = true
		t.warnf("%s is setuid: the loader ignores LD_PRELOAD for it (secure execution), so it will not be captured", path)
	}
	if st.Mode()&fs.ModeSetgid != 0 && (sys == nil || int(sys.Gid) != egid) {
		t.Setgid = true
		t.warnf("%s is setgid: the loader ignores LD_PRELOAD for it (secure execution), so it will not be captured", path)
	}
	if hasFileCaps(path) && euid != 0 {
		t.Caps = true
		t.warnf("%s has file capabilities: the loader ignores LD_PRELOAD for it (secure execution), so it will not be captured", path)
	}
}

// effectiveIDs is a variable so tests can run the checks as another user.
var effectiveIDs = func() (euid, egid int) { return os.Geteuid(), os.Getegid() }

func hasFileCaps(path string) bool {
	n, err := syscall.Getxattr(path, "security.capability", nil)
	if err != nil {
		return errors.Is(err, syscall.ERANGE)
	}
	return n > 0
}
