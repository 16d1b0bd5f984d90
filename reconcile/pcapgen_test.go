package reconcile

// Synthetic captures for the packet tests, written with gopacket's layers
// and pcapgo's writers so that the reader is checked against an
// independent encoder.

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// wirePkt is one packet to write: time in ns, endpoints, TTL and IP id,
// TCP flags as letters (S, A, F, R, P) or "udp", and the payload.
type wirePkt struct {
	t        int64
	src, dst string // ip:port
	ttl      uint8
	id       uint16
	flags    string
	seq, ack uint32
	payload  []byte
}

// ipPacket serialises the IP packet (v4 or v6 by address) of w.
func ipPacket(t testing.TB, w wirePkt) []byte {
	t.Helper()
	src, dst := netip.MustParseAddrPort(w.src), netip.MustParseAddrPort(w.dst)
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	var netl gopacket.NetworkLayer
	var ipl gopacket.SerializableLayer
	proto := layers.IPProtocolTCP
	if w.flags == "udp" {
		proto = layers.IPProtocolUDP
	}
	if src.Addr().Is4() {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: w.ttl, Id: w.id, Protocol: proto, Flags: layers.IPv4DontFragment,
			SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		netl, ipl = ip, ip
	} else {
		ip := &layers.IPv6{Version: 6, HopLimit: w.ttl, NextHeader: proto, FlowLabel: uint32(w.id),
			SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		netl, ipl = ip, ip
	}
	var tl gopacket.SerializableLayer
	if w.flags == "udp" {
		u := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
		u.SetNetworkLayerForChecksum(netl)
		tl = u
	} else {
		tc := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()),
			Seq: w.seq, Ack: w.ack, Window: 65000, DataOffset: 5,
			SYN: strings.Contains(w.flags, "S"), ACK: strings.Contains(w.flags, "A"),
			FIN: strings.Contains(w.flags, "F"), RST: strings.Contains(w.flags, "R"), PSH: strings.Contains(w.flags, "P")}
		tc.SetNetworkLayerForChecksum(netl)
		tl = tc
	}
	if err := gopacket.SerializeLayers(buf, opts, ipl, tl, gopacket.Payload(w.payload)); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// linkFrame wraps an IP packet in a link-layer header.
func linkFrame(link int, ip []byte) []byte {
	v6 := ip[0]>>4 == 6
	et := uint16(0x0800)
	if v6 {
		et = 0x86dd
	}
	var h []byte
	switch link {
	case linkEthernet:
		h = make([]byte, 14)
		copy(h, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1})
		binary.BigEndian.PutUint16(h[12:], et)
	case linkSLL:
		h = make([]byte, 16)
		binary.BigEndian.PutUint16(h[2:], 1)
		binary.BigEndian.PutUint16(h[4:], 6)
		binary.BigEndian.PutUint16(h[14:], et)
	case linkSLL2:
		h = make([]byte, 20)
		binary.BigEndian.PutUint16(h[0:], et)
		binary.BigEndian.PutUint16(h[8:], 1)
	case linkNull:
		h = make([]byte, 4)
		af := uint32(2)
		if v6 {
			af = 10
		}
		binary.LittleEndian.PutUint32(h, af)
	case linkLoop:
		h = make([]byte, 4)
		binary.BigEndian.PutUint32(h, 2)
	}
	return append(h, ip...)
}

type captureFormat int

const (
	fmtPcapMicro captureFormat = iota
	fmtPcapNano
	fmtPcapng
)

// writeCapture writes packets as a capture file with pcapgo.
func writeCapture(t testing.TB, format captureFormat, link int, pkts []wirePkt) []byte {
	t.Helper()
	var b bytes.Buffer
	// layers.LinkType is 8 bits wide: larger link types are patched in below.
	defer func() {
		if link > 255 {
			out := b.Bytes()
			if format == fmtPcapng {
				idb := int(binary.LittleEndian.Uint32(out[4:]))
				binary.LittleEndian.PutUint16(out[idb+8:], uint16(link))
			} else {
				binary.LittleEndian.PutUint32(out[20:], uint32(link))
			}
		}
	}()
	ci := func(p wirePkt, n int) gopacket.CaptureInfo {
		return gopacket.CaptureInfo{Timestamp: time.Unix(0, p.t).UTC(), CaptureLength: n, Length: n}
	}
	switch format {
	case fmtPcapMicro, fmtPcapNano:
		w := pcapgo.NewWriter(&b)
		if format == fmtPcapNano {
			w = pcapgo.NewWriterNanos(&b)
		}
		if err := w.WriteFileHeader(65536, layers.LinkType(link)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts {
			f := linkFrame(link, ipPacket(t, p))
			if err := w.WritePacket(ci(p, len(f)), f); err != nil {
				t.Fatal(err)
			}
		}
	case fmtPcapng:
		w, err := pcapgo.NewNgWriter(&b, layers.LinkType(link))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts {
			f := linkFrame(link, ipPacket(t, p))
			if err := w.WritePacket(ci(p, len(f)), f); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes() // patched by the deferred function, in place
}

// conversation is a small TCP exchange: handshake, a 100-byte request in two
// segments, a 300-byte reply in three, and the close. Times in µs from t0.
func conversation(client, server string, ttlC, ttlS uint8, isnC, isnS uint32) []wirePkt {
	const t0 = 1700000000_000000000
	us := func(n int64) int64 { return t0 + n*1000 }
	req := bytes.Repeat([]byte("q"), 100)
	rep := bytes.Repeat([]byte("r"), 300)
	c, s := client, server
	return []wirePkt{
		{us(0), c, s, ttlC, 1, "S", isnC, 0, nil},
		{us(100), s, c, ttlS, 0, "SA", isnS, isnC + 1, nil},
		{us(200), c, s, ttlC, 2, "A", isnC + 1, isnS + 1, nil},
		{us(300), c, s, ttlC, 3, "PA", isnC + 1, isnS + 1, req[:60]},
		{us(310), c, s, ttlC, 4, "PA", isnC + 61, isnS + 1, req[60:]},
		{us(400), s, c, ttlS, 1, "A", isnS + 1, isnC + 101, nil},
		{us(1000), s, c, ttlS, 2, "PA", isnS + 1, isnC + 101, rep[:100]},
		{us(1010), s, c, ttlS, 3, "PA", isnS + 101, isnC + 101, rep[100:200]},
		{us(1020), s, c, ttlS, 4, "PA", isnS + 201, isnC + 101, rep[200:]},
		{us(1100), c, s, ttlC, 5, "A", isnC + 101, isnS + 301, nil},
		{us(2000), c, s, ttlC, 6, "FA", isnC + 101, isnS + 301, nil},
		{us(2100), s, c, ttlS, 5, "FA", isnS + 301, isnC + 102, nil},
		{us(2200), c, s, ttlC, 7, "A", isnC + 102, isnS + 302, nil},
	}
}
