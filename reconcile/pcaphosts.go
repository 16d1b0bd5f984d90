package reconcile

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
)

// HostNames names hosts seen in packet captures by address (`--hosts
// FILE`), so that they line up with the node names of libsockcap logs.
type HostNames map[netip.Addr]string

// Name is the host name of an address: its entry, else the address itself.
func (h HostNames) Name(a netip.Addr) string {
	a = a.Unmap()
	if n, ok := h[a]; ok {
		return n
	}
	return a.String()
}

// ReadHosts reads a hosts file in /etc/hosts form: an address, then one or
// more names (the first is used); '#' starts a comment. Bad lines are
// skipped with a warning naming the file and line.
func ReadHosts(r io.Reader, file string) (HostNames, []string, error) {
	h := HostNames{}
	var warn []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || len(f) < 2 {
			warn = append(warn, fmt.Sprintf("%s:%d: want an IP address and a host name, got %q", file, line, strings.TrimSpace(text)))
			continue
		}
		a = a.Unmap().WithZone("")
		if old, dup := h[a]; dup && old != f[1] {
			warn = append(warn, fmt.Sprintf("%s:%d: %s named again (%s, was %s); the first name is kept", file, line, a, f[1], old))
			continue
		}
		h[a] = f[1]
	}
	if err := sc.Err(); err != nil {
		return h, warn, fmt.Errorf("%s: %v", file, err)
	}
	return h, warn, nil
}

// ReadHostsFile reads a hosts file by name.
func ReadHostsFile(path string) (HostNames, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return ReadHosts(f, path)
}
