package nat

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"wap5/internal/golden"
	"wap5/libsockcap"
)

// pk builds a packet the way the pcap reader does, with its fingerprint.
func pk(capture int32, t int64, src, dst string, ttl uint8, proto uint8, flags uint8, seq, ack uint32, ipid uint32, payload string) Packet {
	p := Packet{Time: t, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst), Capture: capture,
		Seq: seq, Ack: ack, Len: int32(len(payload)), IPID: ipid, Window: 500, Proto: proto, TTL: ttl, Flags: flags}
	if proto == ProtoUDP {
		p.Seq, p.Ack, p.Flags, p.Window = 0, 0, 0, 0
		p.Sum = libsockcap.Checksum([]byte(payload), len(payload))
	}
	p.Key = Key(proto, p.IPID, p.Seq, p.Ack, p.Flags, p.Window, p.Len, []byte(payload))
	return p
}

// tcpFlow is one connection seen at two points: as the client sent it (cs →
// cd, capture 0) and as the server received it (ss → sd, capture 1). The
// router between them decrements TTLs.
func tcpFlow(cs, cd, ss, sd string, isn uint32, t0 int64) []Packet {
	var out []Packet
	type seg struct {
		fromClient bool
		flags      uint8
		seq, ack   uint32
		data       string
	}
	segs := []seg{
		{true, FlagSYN, isn, 0, ""},
		{false, FlagSYN | FlagACK, 7000, isn + 1, ""},
		{true, FlagACK, isn + 1, 7001, ""},
		{true, FlagACK | FlagPSH, isn + 1, 7001, "GET / HTTP/1.0\r\n\r\n"},
		{false, FlagACK | FlagPSH, 7001, isn + 19, "HTTP/1.0 200 OK\r\n\r\nhello"},
		{true, FlagACK | FlagFIN, isn + 19, 7025, ""},
	}
	for i, s := range segs {
		t := t0 + int64(i)*1000
		id := uint32(100 + i)
		if s.fromClient {
			out = append(out, pk(0, t, cs, cd, 64, ProtoTCP, s.flags, s.seq, s.ack, id, s.data),
				pk(1, t+50, ss, sd, 63, ProtoTCP, s.flags, s.seq, s.ack, id, s.data))
		} else {
			out = append(out, pk(1, t, sd, ss, 64, ProtoTCP, s.flags, s.seq, s.ack, id, s.data),
				pk(0, t+50, cd, cs, 63, ProtoTCP, s.flags, s.seq, s.ack, id, s.data))
		}
	}
	return out
}

func udpFlow(cs, cd, ss, sd string, n int, t0 int64, ttlBefore, ttlAfter uint8) []Packet {
	var out []Packet
	for i := range n {
		q := fmt.Sprintf("query %d", i)
		t := t0 + int64(i)*1e6
		out = append(out, pk(0, t, cs, cd, ttlBefore, ProtoUDP, 0, 0, 0, 0, q),
			pk(1, t+50, ss, sd, ttlAfter, ProtoUDP, 0, 0, 0, 0, q),
			pk(1, t+500, sd, ss, ttlBefore, ProtoUDP, 0, 0, 0, 0, q+" answer"),
			pk(0, t+550, cd, cs, ttlAfter, ProtoUDP, 0, 0, 0, 0, q+" answer"))
	}
	return out
}

func concat(ps ...[]Packet) []Packet {
	var out []Packet
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

var detectCases = []struct {
	name string
	pkts []Packet
	want string // the translations, one "kind proto before after flows packets" per line
}{
	{"dnat", tcpFlow("10.0.1.2:40000", "10.0.1.100:80", "10.0.1.2:40000", "10.0.2.2:8080", 1000, 0),
		"dnat tcp 10.0.1.100:80 10.0.2.2:8080 1 6"},
	{"dnat and masquerade", tcpFlow("10.0.1.2:40000", "10.0.1.100:80", "10.0.2.1:40000", "10.0.2.2:8080", 1000, 0),
		"dnat tcp 10.0.1.100:80 10.0.2.2:8080 1 6\nsnat tcp 10.0.1.2:* 10.0.2.1:* 1 6"},
	{"masquerade two flows", concat(
		tcpFlow("10.0.1.2:40000", "10.0.2.2:80", "10.0.2.1:40000", "10.0.2.2:80", 1000, 0),
		tcpFlow("10.0.1.2:40001", "10.0.2.2:80", "10.0.2.1:40001", "10.0.2.2:80", 2000, 1e9)),
		"snat tcp 10.0.1.2:* 10.0.2.1:* 2 12"},
	{"masquerade rewriting the port", tcpFlow("10.0.1.2:40000", "10.0.2.2:80", "10.0.2.1:50000", "10.0.2.2:80", 1000, 0),
		"snat tcp 10.0.1.2:40000 10.0.2.1:50000 1 6"},
	{"two clients behind one address", concat(
		tcpFlow("10.0.1.2:40000", "10.0.2.2:80", "10.0.2.1:40000", "10.0.2.2:80", 1000, 0),
		tcpFlow("10.0.1.3:40001", "10.0.2.2:80", "10.0.2.1:40001", "10.0.2.2:80", 2000, 1e9)),
		"snat tcp 10.0.1.2:40000 10.0.2.1:40000 1 6\nsnat tcp 10.0.1.3:40001 10.0.2.1:40001 1 6"},
	{"dnat keeping every port", concat(
		tcpFlow("10.0.1.2:40000", "10.0.1.100:80", "10.0.1.2:40000", "10.0.2.2:80", 1000, 0),
		tcpFlow("10.0.1.2:40001", "10.0.1.100:443", "10.0.1.2:40001", "10.0.2.2:443", 2000, 1e9)),
		"dnat tcp 10.0.1.100:* 10.0.2.2:* 2 12"},
	{"no translation, two sniffers", tcpFlow("10.0.1.2:40000", "10.0.2.2:80", "10.0.1.2:40000", "10.0.2.2:80", 1000, 0), ""},
	{"udp dnat", udpFlow("10.0.1.2:5353", "10.0.1.53:53", "10.0.1.2:5353", "10.0.2.53:53", 3, 0, 64, 63),
		"dnat udp 10.0.1.53:53 10.0.2.53:53 1 6"},
	{"udp, one coincidence", concat(
		[]Packet{pk(0, 0, "10.0.1.2:5000", "10.0.9.9:9", 64, ProtoUDP, 0, 0, 0, 0, "ping"),
			pk(1, 5e9, "10.0.1.7:6000", "10.0.9.8:9", 64, ProtoUDP, 0, 0, 0, 0, "ping")}), ""},
	{"direction from time when TTLs tie", udpFlow("10.0.1.2:5353", "10.0.1.53:53", "10.0.1.2:5353", "10.0.2.53:53", 2, 0, 64, 64),
		"dnat udp 10.0.1.53:53 10.0.2.53:53 1 4"},
	{"ipv6", tcpFlow("[fd00:1::2]:40000", "[fd00:1::100]:80", "[fd00:1::2]:40000", "[fd00:2::2]:80", 1000, 0),
		"dnat tcp [fd00:1::100]:80 [fd00:2::2]:80 1 6"},
}

func TestDetect(t *testing.T) {
	var buf bytes.Buffer
	for _, tc := range detectCases {
		t.Run(tc.name, func(t *testing.T) {
			// Order must not matter: try the packets reversed as well.
			rev := append([]Packet(nil), tc.pkts...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			for _, pkts := range [][]Packet{tc.pkts, rev} {
				m := Detect(pkts, Options{})
				var lines []string
				for _, tr := range m.Translations {
					lines = append(lines, fmt.Sprintf("%s %s %s %s %d %d", tr.Kind, tr.Proto, tr.Before, tr.After, tr.Flows, tr.Packets))
				}
				if got := strings.Join(lines, "\n"); got != tc.want {
					t.Fatalf("got\n%s\nwant\n%s\nwarnings %q", got, tc.want, m.Warnings)
				}
				if err := m.Validate(); err != nil {
					t.Fatal(err)
				}
			}
			m := Detect(tc.pkts, Options{})
			fmt.Fprintf(&buf, "# %s\n", tc.name)
			m.WriteJSON(&buf)
		})
	}
	golden.Check(t, filepath.Join("testdata", "detect.golden"), buf.Bytes())
}

func TestDetectUDPNeedsFrequentMatches(t *testing.T) {
	one := udpFlow("10.0.1.2:5353", "10.0.1.53:53", "10.0.1.2:5353", "10.0.2.53:53", 1, 0, 64, 63)
	if m := Detect(one, Options{}); len(m.Translations) != 0 || len(m.Warnings) != 1 {
		t.Errorf("one exchange (2 matches) accepted as translation: %+v", m)
	}
	if m := Detect(one, Options{MinUDP: 2}); len(m.Translations) != 1 {
		t.Errorf("MinUDP 2 does not accept two matches: %+v", m)
	}
}

func BenchmarkDetect(b *testing.B) {
	var pkts []Packet
	for i := range 2000 {
		pkts = append(pkts, tcpFlow(fmt.Sprintf("10.0.1.%d:%d", 2+i%200, 30000+i), "10.0.1.100:80",
			fmt.Sprintf("10.0.2.1:%d", 30000+i), "10.0.2.2:8080", uint32(i)*7919, int64(i)*1e6)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		Detect(pkts, Options{})
	}
	b.ReportMetric(float64(len(pkts))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

func TestDetectOffsets(t *testing.T) {
	// TTLs tie and the after-side sniffer's clock is 1 s behind: without
	// its offset the translation looks reversed.
	pkts := udpFlow("10.0.1.2:5353", "10.0.1.53:53", "10.0.1.2:5353", "10.0.2.53:53", 3, 5e9, 64, 64)
	for i := range pkts {
		if pkts[i].Capture == 1 {
			pkts[i].Time -= 1e9
		}
	}
	want := "dnat udp 10.0.1.53:53 10.0.2.53:53"
	for _, tc := range []struct {
		offsets map[int32]int64
		right   bool
	}{{nil, false}, {map[int32]int64{1: -1e9}, true}} {
		m := Detect(pkts, Options{Offsets: tc.offsets})
		got := ""
		if len(m.Translations) == 1 {
			tr := m.Translations[0]
			got = tr.Kind + " " + tr.Proto + " " + tr.Before + " " + tr.After
		}
		if (got == want) != tc.right {
			t.Errorf("offsets %v: got %q (want %q: %v)", tc.offsets, got, want, tc.right)
		}
	}
}
