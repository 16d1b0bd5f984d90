package preflight

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// fixtures builds the programs the table needs once per test binary.
type fixtures struct {
	dir, dynamic, static, musl, goBin, elf32 string
}

func build(t *testing.T) fixtures {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	if err := os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := fixtures{dir: dir}
	cc := func(out string, args ...string) string {
		p := filepath.Join(dir, out)
		cmd := exec.Command("gcc", append(append([]string{}, args...), "-o", p, src)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, b)
		}
		return p
	}
	f.dynamic = cc("dynamic")
	f.static = cc("static", "-static")
	// A glibc program that asks for the musl loader is enough for the
	// check, which reads PT_INTERP without running the file.
	f.musl = cc("musl", "-Wl,--dynamic-linker=/lib/ld-musl-x86_64.so.1")
	f.goBin = filepath.Join(runtime.GOROOT(), "bin", "gofmt")
	f.elf32 = filepath.Join(dir, "lib32.so")
	if err := os.WriteFile(f.elf32, elf32Header(), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// elf32Header is a minimal i386 ELF header (no sections, no segments): all
// Inspect reads of the library is its class and machine.
func elf32Header() []byte {
	b := make([]byte, 52)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 1, 1, 1                // ELFCLASS32, little endian, version 1
	binary.LittleEndian.PutUint16(b[16:], 3)  // ET_DYN
	binary.LittleEndian.PutUint16(b[18:], 3)  // EM_386
	binary.LittleEndian.PutUint32(b[20:], 1)  // EV_CURRENT
	binary.LittleEndian.PutUint16(b[40:], 52) // e_ehsize
	return b
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInspect(t *testing.T) {
	f := build(t)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("python3 not installed")
	}
	pathEnv := f.dir + ":/usr/bin:/bin"
	shScript := writeScript(t, f.dir, "sh-script", "#!/bin/sh\nexit 0\n")
	envScript := writeScript(t, f.dir, "env-script", "#!/usr/bin/env -S PYTHONUNBUFFERED=1 python3 -u\n")
	staticScript := writeScript(t, f.dir, "static-script", "#! "+f.static+" arg\n")

	setuid := filepath.Join(f.dir, "setuid")
	copyFile(t, f.dynamic, setuid)
	if err := os.Chown(setuid, 65534, 65534); err != nil {
		t.Skipf("cannot chown (not root?): %v", err)
	}
	if err := os.Chmod(setuid, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	capped := filepath.Join(f.dir, "capped")
	copyFile(t, f.dynamic, capped)
	// VFS_CAP_REVISION_2 with CAP_NET_BIND_SERVICE permitted and effective.
	capBlob := []byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x04, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	capsOK := syscall.Setxattr(capped, "security.capability", capBlob, 0) == nil

	tests := []struct {
		name, command, lib string
		asUser             bool // run the checks as uid/gid 1000
		want               []string
		wantELF            string
		chainLen           int
	}{
		{name: "dynamic", command: f.dynamic, wantELF: f.dynamic, chainLen: 1},
		{name: "via PATH", command: "dynamic", wantELF: f.dynamic, chainLen: 1},
		{name: "static", command: f.static, want: []string{"statically linked"}, wantELF: f.static, chainLen: 1},
		{name: "musl", command: f.musl, want: []string{"musl"}, wantELF: f.musl, chainLen: 1},
		{name: "go", command: f.goBin, want: []string{"Go program"}, wantELF: f.goBin, chainLen: 1},
		{name: "sh script", command: shScript, wantELF: "/bin/sh", chainLen: 2},
		{name: "env script", command: envScript, wantELF: python, chainLen: 2},
		{name: "script to static", command: staticScript, want: []string{"statically linked"}, wantELF: f.static, chainLen: 2},
		{name: "setuid", command: setuid, want: []string{"is setuid", "is setgid"}, wantELF: setuid, chainLen: 1},
		{name: "class", command: f.dynamic, lib: f.elf32, want: []string{"ELFCLASS32"}, wantELF: f.dynamic, chainLen: 1},
		{name: "caps as root", command: capped, wantELF: capped, chainLen: 1},
	}
	if capsOK {
		tests = append(tests, struct {
			name, command, lib string
			asUser             bool
			want               []string
			wantELF            string
			chainLen           int
		}{name: "caps as user", command: capped, asUser: true, want: []string{"file capabilities"}, wantELF: capped, chainLen: 1})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.asUser {
				old := effectiveIDs
				effectiveIDs = func() (int, int) { return 1000, 1000 }
				defer func() { effectiveIDs = old }()
			}
			got, err := Inspect(tc.command, pathEnv, tc.lib)
			if err != nil {
				t.Fatal(err)
			}
			if got.ELF != tc.wantELF {
				t.Errorf("ELF = %q, want %q (chain %q)", got.ELF, tc.wantELF, got.Chain)
			}
			if len(got.Chain) != tc.chainLen {
				t.Errorf("chain %q, want %d entries", got.Chain, tc.chainLen)
			}
			if len(got.Warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want %d matching %q", got.Warnings, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to mention %q", i, got.Warnings[i], w)
				}
			}
		})
	}
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	noexec := writeScript(t, dir, "noexec", "#!/bin/sh\n")
	if err := os.Chmod(noexec, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, command, want string }{
		{"not in PATH", "wap5-no-such-program", "executable file not found"},
		{"missing path", filepath.Join(dir, "missing"), "no such file"},
		{"not executable", noexec, "permission denied"},
		{"directory", dir, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Inspect(tc.command, dir, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
			if tc.name == "not in PATH" && !errors.Is(err, exec.ErrNotFound) {
				t.Errorf("error %v is not exec.ErrNotFound", err)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
