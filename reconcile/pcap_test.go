package reconcile

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/gopacket/pcapgo"

	"wap5/libsockcap"
	"wap5/nat"
)

var update = flag.Bool("update", false, "rewrite golden files and capture fixtures")

const (
	cli = "10.201.1.2:40000"
	srv = "10.201.2.2:8080"
)

func TestReadCaptureFormats(t *testing.T) {
	links := []struct {
		name string
		link int
	}{{"ethernet", linkEthernet}, {"sll", linkSLL}, {"sll2", linkSLL2}, {"raw", linkRaw},
		{"ipv4", linkIPv4}, {"null", linkNull}, {"loop", linkLoop}}
	formats := []struct {
		name string
		f    captureFormat
	}{{"pcap-us", fmtPcapMicro}, {"pcap-ns", fmtPcapNano}, {"pcapng", fmtPcapng}}
	conv := conversation(cli, srv, 64, 63, 1000, 5000)
	for _, l := range links {
		for _, f := range formats {
			t.Run(l.name+"/"+f.name, func(t *testing.T) {
				data := writeCapture(t, f.f, l.link, conv)
				c, err := ReadCapture(bytes.NewReader(data), "x.pcap", 3)
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Warnings) != 0 {
					t.Errorf("warnings: %q", c.Warnings)
				}
				if len(c.Packets) != len(conv) {
					t.Fatalf("%d packets, want %d", len(c.Packets), len(conv))
				}
				for i, p := range c.Packets {
					w := conv[i]
					if p.Src.String() != w.src || p.Dst.String() != w.dst || p.Seq != w.seq || p.Ack != w.ack ||
						p.TTL != w.ttl || int(p.Len) != len(w.payload) || p.Time != w.t || p.Capture != 3 || p.Index != int32(i+1) {
						t.Fatalf("packet %d: got %+v, want %+v", i+1, p, w)
					}
				}
				if c.Packets[0].Flags != nat.FlagSYN || c.Packets[1].Flags != nat.FlagSYN|nat.FlagACK {
					t.Errorf("flags %#x %#x", c.Packets[0].Flags, c.Packets[1].Flags)
				}
				// pcapgo agrees on the number of frames and their times.
				var n int
				if f.f == fmtPcapng {
					r, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.DefaultNgReaderOptions)
					if err != nil {
						t.Fatal(err)
					}
					for ; ; n++ {
						_, ci, err := r.ReadPacketData()
						if err != nil {
							break
						}
						if ci.Timestamp.UnixNano() != c.Packets[n].Time {
							t.Fatalf("packet %d: pcapgo time %d, ours %d", n+1, ci.Timestamp.UnixNano(), c.Packets[n].Time)
						}
					}
				} else {
					r, err := pcapgo.NewReader(bytes.NewReader(data))
					if err != nil {
						t.Fatal(err)
					}
					for ; ; n++ {
						_, ci, err := r.ReadPacketData()
						if err != nil {
							break
						}
						if ci.Timestamp.UnixNano() != c.Packets[n].Time {
							t.Fatalf("packet %d: pcapgo time %d, ours %d", n+1, ci.Timestamp.UnixNano(), c.Packets[n].Time)
						}
					}
				}
				if n != c.Frames {
					t.Errorf("pcapgo read %d frames, we %d", n, c.Frames)
				}
			})
		}
	}
}

func TestReadCaptureIPv6AndUDP(t *testing.T) {
	pl := []byte("hello, datagram")
	pkts := []wirePkt{
		{1e9, "[fd00::1]:5000", "[fd00::2]:53", 64, 7, "udp", 0, 0, pl},
		{2e9, "[fd00::1]:40000", "[fd00::2]:80", 64, 7, "S", 10, 0, nil},
		{3e9, "10.0.0.1:5000", "10.0.0.2:53", 64, 9, "udp", 0, 0, bytes.Repeat([]byte{1}, 200)},
		{4e9, "10.0.0.1:5353", "224.0.0.251:5353", 255, 0, "udp", 0, 0, []byte("mdns")},
		{5e9, "0.0.0.0:68", "255.255.255.255:67", 64, 0, "udp", 0, 0, []byte("dhcp")},
	}
	c, err := ReadCapture(bytes.NewReader(writeCapture(t, fmtPcapng, linkEthernet, pkts)), "v6.pcapng", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Packets) != 3 {
		t.Fatalf("%d packets, want 3 (warnings %q)", len(c.Packets), c.Warnings)
	}
	if len(c.Warnings) != 1 || c.Warnings[0] != "v6.pcapng: 2 multicast or broadcast datagrams skipped" {
		t.Errorf("warnings %q", c.Warnings)
	}
	u := c.Packets[0]
	if u.Proto != nat.ProtoUDP || u.Src.String() != "[fd00::1]:5000" || u.Len != int32(len(pl)) || u.Sum != libsockcap.Checksum(pl, len(pl)) || u.Snapped {
		t.Errorf("udp6 packet %+v", u)
	}
	if c.Packets[1].Proto != nat.ProtoTCP || c.Packets[1].Dst.Port() != 80 {
		t.Errorf("tcp6 packet %+v", c.Packets[1])
	}
	if c.Packets[2].Len != 200 || c.Packets[2].Sum != libsockcap.Checksum(bytes.Repeat([]byte{1}, 200), 200) {
		t.Errorf("udp4 packet %+v", c.Packets[2])
	}
}

func TestReadCaptureDamage(t *testing.T) {
	conv := conversation(cli, srv, 64, 63, 1000, 5000)
	pcap := writeCapture(t, fmtPcapMicro, linkEthernet, conv)
	ng := writeCapture(t, fmtPcapng, linkEthernet, conv)
	// Offset of packet 5's record in the pcap file: 24-byte header, then
	// 16-byte records.
	off5 := 24
	for _, p := range conv[:4] {
		off5 += 16 + 14 + 40 + len(p.payload)
	}
	hugeLen := append([]byte(nil), pcap...)
	hugeLen[off5+8], hugeLen[off5+9], hugeLen[off5+10], hugeLen[off5+11] = 0xff, 0xff, 0xff, 0x7f
	badTrail := append([]byte(nil), ng...)
	badTrail[len(badTrail)-1] ^= 0x40
	tests := []struct {
		name    string
		data    []byte
		packets int
		warn    string // substring of the one warning; "" for none
		err     string
	}{
		{"pcap cut in packet 5", pcap[:off5+20], 4, "x: packet 5 (offset " + fmt.Sprint(off5) + "): truncated packet data", ""},
		{"pcap cut in record header 5", pcap[:off5+3], 4, "packet 5 (offset " + fmt.Sprint(off5) + "): truncated record header", ""},
		{"pcap huge length", hugeLen, 4, "damaged record header", ""},
		{"pcap header only", pcap[:24], 0, "", ""},
		{"pcap cut header", pcap[:10], 0, "offset 0: truncated file header", ""},
		{"pcapng cut", ng[:len(ng)-30], len(conv) - 1, "truncated block", ""},
		{"pcapng bad trailer", badTrail, len(conv) - 1, "trailing length", ""},
		{"not a capture", []byte("# wap5 message trace v1\n"), 0, "", "not a pcap or pcapng file"},
		{"empty", nil, 0, "", "not a pcap or pcapng file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ReadCapture(bytes.NewReader(tc.data), "x", 0)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "x: ") {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Packets) != tc.packets {
				t.Errorf("%d packets, want %d", len(c.Packets), tc.packets)
			}
			if tc.warn == "" && len(c.Warnings) > 0 || tc.warn != "" && (len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tc.warn)) {
				t.Errorf("warnings %q, want one containing %q", c.Warnings, tc.warn)
			}
		})
	}
}

// observations drains every source and prints its observations, one line
// each: source index, time in µs after t0, op, host, local, remote, offset,
// bytes, role.
func observations(t *testing.T, set *PcapSet) []string {
	t.Helper()
	var out []string
	for i, s := range set.Sources {
		var o Observation
		last := int64(-1 << 62)
		for s.Next(&o) {
			if o.Time < last {
				t.Errorf("source %d: time goes back at %+v", i, o)
			}
			last = o.Time
			line := fmt.Sprintf("%d %d %s %s %s>%s", i, (o.Time-1700000000_000000000)/1000, o.Op, o.Observer.Host, o.Local, o.Remote)
			if o.Op == OpSend || o.Op == OpRecv {
				line += fmt.Sprintf(" %d+%d", o.Offset, o.Bytes)
			}
			if o.Op == OpOpen {
				line += fmt.Sprintf(" role=%d", o.Role)
			}
			out = append(out, line)
		}
		for _, w := range s.Warnings() {
			out = append(out, fmt.Sprintf("%d warning: %s", i, w))
		}
	}
	return out
}

func sources(t *testing.T, opts Options, hosts HostNames, caps ...[]byte) *PcapSet {
	t.Helper()
	var cs []*Capture
	for i, data := range caps {
		c, err := ReadCapture(bytes.NewReader(data), fmt.Sprintf("cap%d", i), int32(i))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return PcapSources(cs, opts, hosts)
}

func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var plainConversation = []string{
	"0 0 open client 10.201.1.2:40000>10.201.2.2:8080 role=1",
	"0 100 open server 10.201.2.2:8080>10.201.1.2:40000 role=2",
	"0 300 send client 10.201.1.2:40000>10.201.2.2:8080 0+60",
	"0 300 recv server 10.201.2.2:8080>10.201.1.2:40000 0+60",
	"0 310 send client 10.201.1.2:40000>10.201.2.2:8080 60+40",
	"0 310 recv server 10.201.2.2:8080>10.201.1.2:40000 60+40",
	"0 1000 send server 10.201.2.2:8080>10.201.1.2:40000 0+100",
	"0 1000 recv client 10.201.1.2:40000>10.201.2.2:8080 0+100",
	"0 1010 send server 10.201.2.2:8080>10.201.1.2:40000 100+100",
	"0 1010 recv client 10.201.1.2:40000>10.201.2.2:8080 100+100",
	"0 1020 send server 10.201.2.2:8080>10.201.1.2:40000 200+100",
	"0 1020 recv client 10.201.1.2:40000>10.201.2.2:8080 200+100",
	"0 2000 close client 10.201.1.2:40000>10.201.2.2:8080",
	"0 2100 close server 10.201.2.2:8080>10.201.1.2:40000",
}

var names = HostNames{netip.MustParseAddr("10.201.1.2"): "client", netip.MustParseAddr("10.201.2.2"): "server"}

func TestPcapObservations(t *testing.T) {
	base := conversation(cli, srv, 64, 64, 1000, 5000)
	reorder := func(p []wirePkt) []wirePkt {
		p = append([]wirePkt(nil), p...)
		// The reply's 2nd segment arrives after the 3rd, and the 1st is
		// retransmitted later.
		p[7], p[8] = p[8], p[7]
		p[7].t, p[8].t = p[8].t, p[7].t
		p = append(p[:10], append([]wirePkt{{p[6].t + 500_000, p[6].src, p[6].dst, 64, 9, "PA", p[6].seq, p[6].ack, p[6].payload}}, p[10:]...)...)
		return p
	}
	tests := []struct {
		name string
		pkts []wirePkt
		want []string
	}{
		{"plain", base, plainConversation},
		{"seq wrap", conversation(cli, srv, 64, 64, 0xffffffc0, 0xfffffff0), plainConversation},
		{"reorder and retransmit", reorder(base), []string{
			plainConversation[0], plainConversation[1], plainConversation[2], plainConversation[3],
			plainConversation[4], plainConversation[5], plainConversation[6], plainConversation[7],
			"0 1010 send server 10.201.2.2:8080>10.201.1.2:40000 200+100",
			"0 1020 send server 10.201.2.2:8080>10.201.1.2:40000 100+100",
			"0 1020 recv client 10.201.1.2:40000>10.201.2.2:8080 100+200",
			plainConversation[12], plainConversation[13],
		}},
		{"capture started mid-stream", base[6:], []string{
			"0 1000 send server 10.201.2.2:8080>10.201.1.2:40000 0+100",
			"0 1000 recv client 10.201.1.2:40000>10.201.2.2:8080 0+100",
			"0 1010 send server 10.201.2.2:8080>10.201.1.2:40000 100+100",
			"0 1010 recv client 10.201.1.2:40000>10.201.2.2:8080 100+100",
			"0 1020 send server 10.201.2.2:8080>10.201.1.2:40000 200+100",
			"0 1020 recv client 10.201.1.2:40000>10.201.2.2:8080 200+100",
			plainConversation[12], plainConversation[13],
		}},
		{"lost segment never seen", append(append([]wirePkt(nil), base[:7]...), base[8:]...), []string{
			plainConversation[0], plainConversation[1], plainConversation[2], plainConversation[3],
			plainConversation[4], plainConversation[5], plainConversation[6], plainConversation[7],
			"0 1020 send server 10.201.2.2:8080>10.201.1.2:40000 200+100",
			"0 1100 recv client 10.201.1.2:40000>10.201.2.2:8080 200+100", // the client's ACK shows it got past the gap
			plainConversation[12],
			plainConversation[13],
			"0 warning: cap0: 100 bytes in 1 TCP connections were never seen by this capture (missed packets); delivery skipped over them",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := sources(t, Options{}, names, writeCapture(t, fmtPcapNano, linkEthernet, tc.pkts))
			checkLines(t, observations(t, set), tc.want)
		})
	}
}

func TestPcapPortReuse(t *testing.T) {
	a := conversation(cli, srv, 64, 64, 1000, 5000)
	b := conversation(cli, srv, 64, 64, 90000, 70000)
	for i := range b {
		b[i].t += 10e9
	}
	set := sources(t, Options{}, names, writeCapture(t, fmtPcapNano, linkEthernet, append(a, b...)))
	var sockets = map[uint64]bool{}
	n := 0
	for _, s := range set.Sources {
		var o Observation
		for s.Next(&o) {
			sockets[o.Socket] = true
			n++
			if (o.Op == OpSend || o.Op == OpRecv) && (o.Offset < 0 || o.Offset >= 300) {
				t.Errorf("offset %d out of range: %+v", o.Offset, o)
			}
		}
	}
	if n != 2*len(plainConversation) || len(sockets) != 4 {
		t.Errorf("%d observations on %d sockets, want %d on 4", n, len(sockets), 2*len(plainConversation))
	}
}

// sideCaptures are a conversation seen by a sniffer on the client's link
// (cap0) and one on the server's (cap1, whose clock is 2 s ahead); both see
// every packet, one hop (50 µs) apart.
func sideCaptures(t *testing.T, clientSide, serverSide [2]string) (a, b []byte) {
	ca := conversation(clientSide[0], clientSide[1], 64, 63, 1000, 5000)
	cb := conversation(serverSide[0], serverSide[1], 63, 64, 1000, 5000)
	for i := range cb {
		cb[i].t += 2e9
		if cb[i].ttl == 63 {
			cb[i].t += 50_000 // the client's packets reach the server's sniffer later
		}
		if ca[i].ttl == 63 {
			ca[i].t += 50_000
		}
	}
	return writeCapture(t, fmtPcapNano, linkEthernet, ca), writeCapture(t, fmtPcapng, linkSLL, cb)
}

func TestPcapClockChoice(t *testing.T) {
	a, b := sideCaptures(t, [2]string{cli, srv}, [2]string{cli, srv})
	set := sources(t, Options{}, names, a, b)
	checkLines(t, set.Clocks, []string{"client: cap0", "server: cap1"})
	for _, line := range observations(t, set) {
		f := strings.Fields(line)
		if (f[3] == "client") != (f[0] == "0") {
			t.Errorf("observation from the wrong capture: %s", line)
		}
		if f[0] == "1" && !strings.HasPrefix(f[1], "200") {
			t.Errorf("server observation not on the server sniffer's clock: %s", line)
		}
	}
}

func TestPcapNAT(t *testing.T) {
	// DNAT 10.201.1.100:80 → 10.201.2.2:8080 and masquerade as 10.201.2.1.
	a, b := sideCaptures(t, [2]string{cli, "10.201.1.100:80"}, [2]string{"10.201.2.1:40000", srv})
	set := sources(t, Options{}, names, a, b)
	var js bytes.Buffer
	if err := set.NAT.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	want := `{"translations":[{"kind":"dnat","before":"10.201.1.100:80","after":"10.201.2.2:8080","proto":"tcp","flows":1,"packets":13},{"kind":"snat","before":"10.201.1.2:*","after":"10.201.2.1:*","proto":"tcp","flows":1,"packets":13}],"warnings":[]}`
	if strings.TrimSpace(js.String()) != want {
		t.Errorf("nat map\n%s\nwant\n%s", js.String(), want)
	}
	got := observations(t, set)
	for _, line := range got {
		if strings.Contains(line, "10.201.1.100") || strings.Contains(line, "10.201.2.1:") {
			t.Errorf("translated address left in %s", line)
		}
	}
	if len(got) != len(plainConversation) {
		t.Errorf("%d observations, want %d:\n%s", len(got), len(plainConversation), strings.Join(got, "\n"))
	}
	// With detection off and no map, each side keeps its own names.
	set = sources(t, Options{DisableNATDetection: true}, names, a, b)
	if len(set.NAT.Translations) != 0 {
		t.Errorf("translations with detection off: %+v", set.NAT.Translations)
	}
	// A given map is applied without detection.
	set = sources(t, Options{DisableNATDetection: true, NAT: []Translation{
		{Kind: "dnat", Before: "10.201.1.100:80", After: "10.201.2.2:8080", Proto: "tcp"},
		{Kind: "snat", Before: "10.201.1.2:*", After: "10.201.2.1:*", Proto: "tcp"}}}, names, a, b)
	for _, line := range observations(t, set) {
		if strings.Contains(line, "10.201.1.100") || strings.Contains(line, "10.201.2.1:") {
			t.Errorf("translated address left with an explicit map: %s", line)
		}
	}
	if *update {
		dir := filepath.Join("..", "testdata", "pcap")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "nat-client-side.pcap"), a, 0o644)
		os.WriteFile(filepath.Join(dir, "nat-server-side.pcapng"), b, 0o644)
	}
}

func TestPcapFixturesCurrent(t *testing.T) {
	a, b := sideCaptures(t, [2]string{cli, "10.201.1.100:80"}, [2]string{"10.201.2.1:40000", srv})
	for name, want := range map[string][]byte{"nat-client-side.pcap": a, "nat-server-side.pcapng": b} {
		got, err := os.ReadFile(filepath.Join("..", "testdata", "pcap", name))
		if err != nil {
			t.Fatalf("%v (run go test ./reconcile -run TestPcapNAT -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/pcap/%s is stale (run go test ./reconcile -run TestPcapNAT -update)", name)
		}
	}
}

func TestPcapUDP(t *testing.T) {
	var pkts []wirePkt
	for i := range 4 {
		pl := []byte(fmt.Sprintf("query %d", i))
		pkts = append(pkts,
			wirePkt{1700000000_000000000 + int64(i)*1e6, "10.201.1.2:5353", "10.201.2.2:53", 64, 0, "udp", 0, 0, pl},
			wirePkt{1700000000_000000000 + int64(i)*1e6 + 300_000, "10.201.2.2:53", "10.201.1.2:5353", 64, 0, "udp", 0, 0, append(pl, " answer"...)})
	}
	set := sources(t, Options{}, names, writeCapture(t, fmtPcapMicro, linkRaw, pkts))
	n := 0
	for _, s := range set.Sources {
		var o Observation
		for s.Next(&o) {
			n++
			if o.Stream || !o.HasSum || o.Offset != -1 || o.Bytes < 7 {
				t.Errorf("udp observation %+v", o)
			}
			want := pkts[(n-1)/2].payload
			if o.Sum != libsockcap.Checksum(want, len(want)) {
				t.Errorf("observation %d: sum %#x, want %#x", n, o.Sum, libsockcap.Checksum(want, len(want)))
			}
		}
	}
	if n != 2*len(pkts) {
		t.Errorf("%d observations, want %d", n, 2*len(pkts))
	}
}

func TestReadHosts(t *testing.T) {
	h, warn, err := ReadHosts(strings.NewReader("# hosts\n10.201.1.2 client c1\n\n::ffff:10.201.2.2 server # the server\nbogus\n10.201.1.2 other\n"), "hosts")
	if err != nil {
		t.Fatal(err)
	}
	if h.Name(netip.MustParseAddr("10.201.1.2")) != "client" || h.Name(netip.MustParseAddr("10.201.2.2")) != "server" ||
		h.Name(netip.MustParseAddr("10.9.9.9")) != "10.9.9.9" {
		t.Errorf("names %v", h)
	}
	if len(warn) != 2 || !strings.HasPrefix(warn[0], "hosts:5: ") || !strings.HasPrefix(warn[1], "hosts:6: ") {
		t.Errorf("warnings %q", warn)
	}
}

func TestSpans(t *testing.T) {
	var l []span
	for _, s := range []span{{10, 20}, {30, 40}, {0, 5}, {18, 31}, {50, 60}} {
		l = addSpan(l, s)
	}
	if got := describeSpans(l); got != "[0,5)[10,40)[50,60)" {
		t.Errorf("spans %s", got)
	}
	if got := describeSpans(subtract(span{0, 70}, l)); got != "[5,10)[40,50)[60,70)" {
		t.Errorf("subtract %s", got)
	}
	if got := describeSpans(subtract(span{12, 38}, l)); got != "" {
		t.Errorf("subtract inside %s", got)
	}
}

// FuzzPcap feeds arbitrary bytes through the whole packet path: reading,
// NAT detection (the capture against a copy of itself), and replay.
func FuzzPcap(f *testing.F) {
	conv := conversation(cli, srv, 64, 63, 1000, 5000)
	for _, link := range []int{linkEthernet, linkSLL2, linkNull} {
		for _, format := range []captureFormat{fmtPcapMicro, fmtPcapng} {
			data := writeCapture(f, format, link, conv)
			f.Add(data)
			f.Add(data[:len(data)-7])
		}
	}
	f.Add(writeCapture(f, fmtPcapNano, linkRaw, []wirePkt{{1e9, "[fd00::1]:5000", "[fd00::2]:53", 64, 7, "udp", 0, 0, []byte("x")}}))
	f.Add(handBuiltPcapng(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadCapture(bytes.NewReader(data), "fuzz", 0)
		if err != nil {
			return
		}
		c2 := &Capture{File: "copy", Packets: append([]nat.Packet(nil), c.Packets...)}
		for i := range c2.Packets {
			c2.Packets[i].Capture = 1
			c2.Packets[i].TTL--
		}
		set := PcapSources([]*Capture{c, c2}, Options{}, nil)
		for _, s := range set.Sources {
			var o Observation
			last := int64(-1 << 63)
			for n := 0; s.Next(&o); n++ {
				if (o.Op == OpSend || o.Op == OpRecv) && o.Bytes <= 0 {
					t.Fatalf("observation with %d bytes: %+v", o.Bytes, o)
				}
				if o.Time < last {
					t.Fatalf("time goes back: %+v", o)
				}
				last = o.Time
				if n > 8*len(data)+16 {
					t.Fatalf("more observations than the input can hold")
				}
			}
			s.Warnings()
		}
	})
}

// bigCapture is a capture of conns connections of reqs request/reply pairs
// each, interleaved in time, seen by one sniffer.
func bigCapture(tb testing.TB, conns, reqs int) []byte {
	var pkts []wirePkt
	req := bytes.Repeat([]byte("q"), 200)
	rep := bytes.Repeat([]byte("r"), 1400)
	for c := range conns {
		cl := fmt.Sprintf("10.201.1.%d:%d", 2+c%200, 30000+c)
		isnC, isnS := uint32(c)*7919, uint32(c)*104729
		t := int64(1700000000_000000000) + int64(c)*1000
		pkts = append(pkts, wirePkt{t, cl, srv, 64, 0, "S", isnC, 0, nil}, wirePkt{t + 100, srv, cl, 64, 0, "SA", isnS, isnC + 1, nil})
		for r := range reqs {
			t += 1e6
			off, roff := uint32(r*len(req)), uint32(r*len(rep)*2)
			pkts = append(pkts,
				wirePkt{t, cl, srv, 64, 0, "PA", isnC + 1 + off, isnS + 1 + roff, req},
				wirePkt{t + 300, srv, cl, 64, 0, "PA", isnS + 1 + roff, isnC + 1 + off + 200, rep},
				wirePkt{t + 310, srv, cl, 64, 0, "PA", isnS + 1 + roff + 1400, isnC + 1 + off + 200, rep},
				wirePkt{t + 400, cl, srv, 64, 0, "A", isnC + 1 + off + 200, isnS + 1 + roff + 2800, nil})
		}
	}
	sort.SliceStable(pkts, func(i, j int) bool { return pkts[i].t < pkts[j].t })
	return writeCapture(tb, fmtPcapNano, linkEthernet, pkts)
}

func BenchmarkReadCapture(b *testing.B) {
	data := bigCapture(b, 100, 200)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for range b.N {
		c, err := ReadCapture(bytes.NewReader(data), "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		n = len(c.Packets)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

// BenchmarkPcapReconcile is the whole packet path: reading, NAT detection,
// replay and matching into messages.
func BenchmarkPcapReconcile(b *testing.B) {
	data := bigCapture(b, 100, 200)
	b.ReportAllocs()
	b.ResetTimer()
	var msgs, pkts int
	for range b.N {
		c, err := ReadCapture(bytes.NewReader(data), "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		pkts = len(c.Packets)
		set := PcapSources([]*Capture{c}, Options{}, nil)
		tr, err := ReconcileSources(set.Sources, Options{})
		if err != nil {
			b.Fatal(err)
		}
		msgs = len(tr.Messages)
	}
	if msgs != 100*200*2 {
		b.Fatalf("%d messages, want %d", msgs, 100*200*2)
	}
	b.ReportMetric(float64(pkts)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(msgs)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func FuzzHosts(f *testing.F) {
	f.Add([]byte("10.201.1.2 client c1\n::1 lo # comment\n"))
	f.Add([]byte("bogus\n\n#x\nfe80::1%eth0 linklocal\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, warn, err := ReadHosts(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for a, n := range h {
			if n == "" || strings.ContainsAny(n, " \t\n") || h.Name(a) != n {
				t.Fatalf("bad entry %v=%q", a, n)
			}
		}
		for _, w := range warn {
			if !strings.HasPrefix(w, "fuzz:") {
				t.Fatalf("warning without file: %q", w)
			}
		}
	})
}

// FuzzPcapStream drives TCP reassembly and connection identification with
// arbitrary segment sequences (flags, sequence jumps, lengths, two
// captures), bypassing the file format: deliveries must never overlap.
func FuzzPcapStream(f *testing.F) {
	f.Add([]byte{0x02, 0, 0, 0x12, 0, 0, 0x18, 1, 60, 0x18, 2, 40, 0x11, 0, 0})
	f.Add([]byte{0x18, 0xff, 200, 0x18, 0x80, 10, 0x04, 0, 0, 0x02, 7, 0, 0x18, 3, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		a := netip.MustParseAddrPort("10.0.0.1:40000")
		b := netip.MustParseAddrPort("10.0.0.2:80")
		caps := []*Capture{{File: "a"}, {File: "b"}}
		seq := [2]uint32{0xfffffff0, 1 << 31}
		for i := 0; i+3 <= len(data); i += 3 {
			flags, jump, n := data[i], data[i+1], data[i+2]
			dir := int(flags>>7) & 1
			src, dst := a, b
			if dir == 1 {
				src, dst = b, a
			}
			p := nat.Packet{Time: int64(i) * 1000, Src: src, Dst: dst, Proto: nat.ProtoTCP,
				Seq: seq[dir] + uint32(int8(jump)), Len: int32(n), Flags: flags & 0x1f, TTL: 64 - uint8(flags>>5&1), Index: int32(i/3 + 1)}
			if p.Flags&nat.FlagSYN != 0 {
				p.Len = 0
			}
			seq[dir] = p.Seq + uint32(p.Len)
			c := caps[(flags>>6)&1]
			p.Capture = int32((flags >> 6) & 1)
			c.Packets = append(c.Packets, p)
		}
		set := PcapSources(caps, Options{DisableNATDetection: true}, nil)
		delivered := map[uint64][]span{}
		for _, s := range set.Sources {
			var o Observation
			for s.Next(&o) {
				if o.Op != OpRecv {
					continue
				}
				if o.Bytes <= 0 {
					t.Fatalf("empty receive %+v", o)
				}
				sp := span{o.Offset, o.Offset + o.Bytes}
				if len(subtract(sp, delivered[o.Socket])) != 1 || subtract(sp, delivered[o.Socket])[0] != sp {
					t.Fatalf("bytes %v delivered twice on socket %d (had %s)", sp, o.Socket, describeSpans(delivered[o.Socket]))
				}
				delivered[o.Socket] = addSpan(delivered[o.Socket], sp)
			}
		}
	})
}

// A capture on the router sees every packet twice, before and after
// forwarding (one TTL apart, addresses translated): each byte and each
// datagram still counts once.
func TestPcapRouterCaptureSeesBothSides(t *testing.T) {
	before := conversation(cli, "10.201.1.100:80", 64, 63, 1000, 5000)
	after := conversation("10.201.2.1:40000", srv, 63, 64, 1000, 5000)
	plain := conversation(cli, srv, 64, 64, 1000, 5000)
	var pkts []wirePkt
	for i := range before {
		first, second := before[i], after[i]
		if plain[i].src == srv { // the server's packets reach the router on its side first
			first, second = after[i], before[i]
		}
		second.t += 20_000
		pkts = append(pkts, first, second)
	}
	for i := range 4 {
		q := []byte(fmt.Sprintf("query %d", i))
		at := int64(1700000000_000000000) + 3e6 + int64(i)*1e6
		pkts = append(pkts,
			wirePkt{at, "10.201.1.2:5353", "10.201.1.100:53", 64, 0, "udp", 0, 0, q},
			wirePkt{at + 20_000, "10.201.2.1:5353", "10.201.2.2:5353", 63, 0, "udp", 0, 0, q})
	}
	sort.SliceStable(pkts, func(i, j int) bool { return pkts[i].t < pkts[j].t })
	set := sources(t, Options{}, names, writeCapture(t, fmtPcapNano, linkSLL2, pkts))
	if len(set.NAT.Translations) < 3 {
		t.Errorf("translations %+v", set.NAT.Translations)
	}
	var tcpObs, udpSends, udpRecvs int
	for _, line := range observations(t, set) {
		switch {
		case strings.Contains(line, ":5353") && strings.Contains(line, " send "):
			udpSends++
		case strings.Contains(line, ":5353") && strings.Contains(line, " recv "):
			udpRecvs++
		case strings.Contains(line, "warning"):
			t.Errorf("unexpected %s", line)
		default:
			tcpObs++
		}
	}
	if tcpObs != len(plainConversation) || udpSends != 4 || udpRecvs != 4 {
		t.Errorf("%d tcp observations (want %d), %d udp sends, %d receives (want 4, 4)", tcpObs, len(plainConversation), udpSends, udpRecvs)
	}
}

// When the capture missed a segment but the receiver's acknowledgement shows
// it arrived, the bytes held after the gap are delivered at once rather than
// at the connection's end.
func TestPcapAckPastGap(t *testing.T) {
	p := conversation(cli, srv, 64, 64, 1000, 5000)
	p = append(p[:3], p[4:]...) // the request's first segment (60 bytes) is missed
	set := sources(t, Options{}, names, writeCapture(t, fmtPcapNano, linkEthernet, p))
	got := observations(t, set)
	want := []string{
		plainConversation[0], plainConversation[1],
		"0 310 send client 10.201.1.2:40000>10.201.2.2:8080 60+40",
		"0 400 recv server 10.201.2.2:8080>10.201.1.2:40000 60+40", // at the server's ACK
	}
	want = append(want, plainConversation[6:]...)
	want = append(want, "0 warning: cap0: 60 bytes in 1 TCP connections were never seen by this capture (missed packets); delivery skipped over them")
	checkLines(t, got, want)
}

// A transfer longer than 1 GiB (here in 1 MiB pseudo-segments, past the
// 32-bit sequence wrap too) stays one connection with growing offsets.
func TestPcapLongTransfer(t *testing.T) {
	a, b := netip.MustParseAddrPort(cli), netip.MustParseAddrPort(srv)
	const seg = 1 << 20
	isn := uint32(0xc0000000)
	pk := func(tm int64, src, dst netip.AddrPort, flags uint8, seq, ack uint32, n int32) nat.Packet {
		return nat.Packet{Time: tm, Src: src, Dst: dst, Proto: nat.ProtoTCP, Flags: flags, Seq: seq, Ack: ack, Len: n, TTL: 64}
	}
	c := &Capture{File: "long"}
	c.Packets = append(c.Packets, pk(0, a, b, nat.FlagSYN, isn, 0, 0), pk(1, b, a, nat.FlagSYN|nat.FlagACK, 7, isn+1, 0))
	const n = 5000 // 5000 MiB: more than a full wrap of the sequence space
	for i := range n {
		c.Packets = append(c.Packets, pk(int64(10+i), a, b, nat.FlagACK, isn+1+uint32(i)*seg, 8, seg))
	}
	c.Packets = append(c.Packets, pk(10+n, a, b, nat.FlagACK|nat.FlagFIN, isn+1+uint32(n*seg%(1<<32)), 8, 0))
	set := PcapSources([]*Capture{c}, Options{}, nil)
	var sends, recvs int64
	sockets := map[uint64]bool{}
	var o Observation
	for set.Sources[0].Next(&o) {
		switch o.Op {
		case OpSend:
			if o.Offset != sends {
				t.Fatalf("send at offset %d, want %d", o.Offset, sends)
			}
			sends += o.Bytes
			sockets[o.Socket] = true
		case OpRecv:
			if o.Offset != recvs {
				t.Fatalf("receive at offset %d, want %d", o.Offset, recvs)
			}
			recvs += o.Bytes
			sockets[o.Socket] = true
		}
	}
	if sends != n*seg || recvs != n*seg || len(sockets) != 2 {
		t.Errorf("sent %d, received %d on %d sockets; want %d on 2", sends, recvs, len(sockets), int64(n)*seg)
	}
}

// Without a handshake the stream offsets count from the lowest sequence
// number seen, which a long transfer's wrap must not move.
func TestPcapLongTransferMidStream(t *testing.T) {
	a, b := netip.MustParseAddrPort(cli), netip.MustParseAddrPort(srv)
	const seg, n = 1 << 20, 3000
	c := &Capture{File: "mid"}
	for i := range n {
		c.Packets = append(c.Packets, nat.Packet{Time: int64(i), Src: a, Dst: b, Proto: nat.ProtoTCP, Flags: nat.FlagACK,
			Seq: 12345 + uint32(i)*seg, Len: seg, TTL: 64})
	}
	set := PcapSources([]*Capture{c}, Options{}, nil)
	var o Observation
	var want int64
	for set.Sources[0].Next(&o) {
		if o.Op == OpSend {
			if o.Offset != want {
				t.Fatalf("send at offset %d, want %d", o.Offset, want)
			}
			want += o.Bytes
		}
	}
	if want != n*seg {
		t.Errorf("sent %d bytes, want %d", want, n*seg)
	}
}
