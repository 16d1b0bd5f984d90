package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var natPcaps = []string{"../../testdata/pcap/nat-client-side.pcap", "../../testdata/pcap/nat-server-side.pcapng"}

func TestNatCommand(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string // stdout golden file
		stderr string // substring of stderr
	}{
		{"json", append([]string{"nat", "--json"}, natPcaps...), 0, "dnat-snat.json", ""},
		{"text", append([]string{"nat"}, natPcaps...), 0, "dnat-snat.txt", ""},
		{"one side only", []string{"nat", "--json", natPcaps[0]}, 0, "one-side.json", ""},
		{"no args", []string{"nat"}, 2, "", "wap5: nat: no PCAP given"},
		{"bad threshold", append([]string{"nat", "--min-udp", "0"}, natPcaps...), 2, "", "at least 1"},
		{"offset", append([]string{"nat", "--json", "--offset", natPcaps[1] + "=2"}, natPcaps...), 0, "dnat-snat.json", ""},
		{"bad offset", append([]string{"nat", "--offset", "x.pcap=2"}, natPcaps...), 2, "", "not one of the PCAP arguments"},
		{"bad offset value", append([]string{"nat", "--offset", natPcaps[1] + "=soon"}, natPcaps...), 2, "", "want PCAP=SECONDS"},
		{"not a capture", []string{"nat", "nat_test.go"}, 1, "", "wap5: nat_test.go: not a pcap or pcapng file"},
		{"missing file", []string{"nat", "no-such.pcap"}, 1, "", "no-such.pcap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if tc.golden != "" {
				goldenFile(t, "nat", tc.golden, []byte(stdout))
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q, want %q", stderr, tc.stderr)
			}
		})
	}
}

func TestNatWarningsOnDamagedCapture(t *testing.T) {
	data, err := os.ReadFile(natPcaps[0])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	os.WriteFile(cut, data[:len(data)-10], 0o644)
	code, stdout, stderr := runCLI(t, "", "nat", "--json", cut, natPcaps[1])
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "wap5: warning: "+cut+": packet 13 (offset") || !strings.Contains(stdout, `"warnings":["`+cut+`: packet 13`) {
		t.Errorf("damage not reported with file and place:\nstdout %s\nstderr %s", stdout, stderr)
	}
	if !strings.Contains(stdout, `"kind":"dnat"`) {
		t.Errorf("translation lost with the last packet cut: %s", stdout)
	}
}

// The map wap5 nat prints is what wap5 reconcile --nat accepts: with it and
// automatic detection off, the two captures give the same paired messages.
func TestNatMapFeedsReconcile(t *testing.T) {
	code, js, stderr := runCLI(t, "", append([]string{"nat", "--json"}, natPcaps...)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "nat.json")
	os.WriteFile(mapFile, []byte(js), 0o644)
	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("10.201.1.2 client\n10.201.2.2 server\n"), 0o644)
	_, auto, _ := runCLI(t, "", append([]string{"reconcile", "--hosts", hosts}, natPcaps...)...)
	code, given, stderr := runCLI(t, "", append([]string{"reconcile", "--hosts", hosts, "--no-nat-detect", "--nat", mapFile}, natPcaps...)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	if auto != given {
		t.Errorf("--nat map gives\n%s\nautomatic detection gives\n%s", given, auto)
	}
	for _, want := range []string{" client 10.201.1.2:40000 1700000002.000350000 server 10.201.2.2:8080 100 ",
		" server 10.201.2.2:8080 1700000000.001050000 client 10.201.1.2:40000 300 "} {
		if !strings.Contains(given, want) {
			t.Errorf("reconciled trace lacks %q:\n%s", want, given)
		}
	}
}

// TestNatDocExamples runs every `$ wap5 ...` example of docs/nat.md and
// compares the output shown there.
func TestNatDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/nat.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```console\n")[1:]
	if len(blocks) == 0 {
		t.Fatal("no console examples in docs/nat.md")
	}
	for _, b := range blocks {
		b = b[:strings.Index(b, "```")]
		lines := strings.SplitAfter(b, "\n")
		cmdline := strings.TrimSpace(strings.TrimPrefix(lines[0], "$ "))
		args := strings.Fields(cmdline)[1:]
		for i, a := range args {
			if strings.HasPrefix(a, "testdata/") {
				args[i] = "../../" + a
			}
		}
		code, stdout, stderr := runCLI(t, "", args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", cmdline, code, stderr)
		}
		if want := strings.Join(lines[1:], ""); stdout != want {
			t.Errorf("%s:\n%s\ndocs/nat.md shows:\n%s", cmdline, stdout, want)
		}
	}
}
