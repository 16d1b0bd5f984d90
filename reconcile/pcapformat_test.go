package reconcile

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// Hand-built containers for what pcapgo's writers do not produce: big-endian
// pcap, VLAN tags, pcapng's simple and obsolete packet blocks, time
// resolutions and offsets, several sections, unknown blocks.

func ngBlock(typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	b := make([]byte, 8, 12+len(body))
	binary.LittleEndian.PutUint32(b, typ)
	binary.LittleEndian.PutUint32(b[4:], uint32(12+len(body)))
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, uint32(12+len(body)))
}

func ngSection() []byte {
	body := binary.LittleEndian.AppendUint32(nil, 0x1a2b3c4d)
	body = binary.LittleEndian.AppendUint16(body, 1)
	body = binary.LittleEndian.AppendUint16(body, 0)
	body = binary.LittleEndian.AppendUint64(body, ^uint64(0))
	return ngBlock(ngSHB, body)
}

func ngInterface(link uint16, opts ...[]byte) []byte {
	body := binary.LittleEndian.AppendUint16(nil, link)
	body = append(body, 0, 0)
	body = binary.LittleEndian.AppendUint32(body, 0)
	for _, o := range opts {
		body = append(body, o...)
	}
	return ngBlock(ngIDB, append(body, 0, 0, 0, 0))
}

func ngOption(code uint16, v []byte) []byte {
	o := binary.LittleEndian.AppendUint16(nil, code)
	o = binary.LittleEndian.AppendUint16(o, uint16(len(v)))
	o = append(o, v...)
	for len(o)%4 != 0 {
		o = append(o, 0)
	}
	return o
}

func ngEnhanced(iface uint32, ts uint64, frame []byte) []byte {
	body := binary.LittleEndian.AppendUint32(nil, iface)
	body = binary.LittleEndian.AppendUint32(body, uint32(ts>>32))
	body = binary.LittleEndian.AppendUint32(body, uint32(ts))
	body = binary.LittleEndian.AppendUint32(body, uint32(len(frame)))
	body = binary.LittleEndian.AppendUint32(body, uint32(len(frame)))
	return ngBlock(ngEPB, append(body, frame...))
}

// handBuiltPcapng has every kind of pcapng block the reader handles.
func handBuiltPcapng(t testing.TB) []byte {
	p := conversation(cli, srv, 64, 63, 1000, 5000)
	eth := func(i int) []byte { return linkFrame(linkEthernet, ipPacket(t, p[i])) }
	obsolete := binary.LittleEndian.AppendUint16(nil, 0)
	obsolete = binary.LittleEndian.AppendUint16(obsolete, 0)
	obsolete = binary.LittleEndian.AppendUint32(obsolete, 0)
	obsolete = binary.LittleEndian.AppendUint32(obsolete, 7_000_000) // interface 0 counts ns
	obsolete = binary.LittleEndian.AppendUint32(obsolete, uint32(len(eth(2))))
	obsolete = binary.LittleEndian.AppendUint32(obsolete, uint32(len(eth(2))))
	simple := binary.LittleEndian.AppendUint32(nil, uint32(len(eth(3))))
	var file []byte
	for _, b := range [][]byte{
		ngSection(),
		ngInterface(linkEthernet, ngOption(9, []byte{9}), ngOption(2, []byte("vc"))), // ns
		ngInterface(linkEthernet, ngOption(9, []byte{0x80 | 20}), ngOption(14, binary.LittleEndian.AppendUint64(nil, 100))),
		ngBlock(0x0bad, []byte("custom block, skipped")),
		ngEnhanced(0, 1_500_000_000, eth(0)), // 1.5 s
		ngEnhanced(1, 3<<20|1<<19, eth(1)),   // 3.5 s + 100 s offset
		ngEnhanced(5, 0, eth(1)),             // no interface 5
		ngBlock(ngPB, append(obsolete, eth(2)...)),
		ngSection(), // a new section forgets the interfaces
		ngInterface(linkSLL2),
		ngBlock(ngSPB, append(simple, linkFrame(linkSLL2, ipPacket(t, p[3]))...)),
	} {
		file = append(file, b...)
	}
	return file
}

func TestReadPcapngBlocks(t *testing.T) {
	p := conversation(cli, srv, 64, 63, 1000, 5000)
	file := handBuiltPcapng(t)
	c, err := ReadCapture(bytes.NewReader(file), "ng", 0)
	if err != nil {
		t.Fatal(err)
	}
	times := []int64{1_500_000_000, 103_500_000_000, 7_000_000, 7_000_000} // a simple packet takes the previous time
	if len(c.Packets) != len(times) {
		t.Fatalf("%d packets (warnings %q), want %d", len(c.Packets), c.Warnings, len(times))
	}
	for i, pk := range c.Packets {
		if pk.Time != times[i] || pk.Seq != p[i].seq || pk.Src.String() != p[i].src {
			t.Errorf("packet %d: time %d seq %d src %s, want %d %d %s", i, pk.Time, pk.Seq, pk.Src, times[i], p[i].seq, p[i].src)
		}
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "unknown interface 5") {
		t.Errorf("warnings %q", c.Warnings)
	}
}

func TestReadPcapBigEndianAndVLAN(t *testing.T) {
	p := conversation(cli, srv, 64, 63, 1000, 5000)[:3]
	le := writeCapture(t, fmtPcapMicro, linkEthernet, p)
	// Byte-swap every 32-bit header field: the file header (but its two
	// 16-bit version fields) and each record header.
	be := append([]byte(nil), le...)
	swap32 := func(b []byte) { b[0], b[1], b[2], b[3] = b[3], b[2], b[1], b[0] }
	swap32(be[0:])
	be[4], be[5], be[6], be[7] = be[5], be[4], be[7], be[6]
	for _, o := range []int{8, 12, 16, 20} {
		swap32(be[o:])
	}
	for off := 24; off < len(be); {
		n := int(binary.LittleEndian.Uint32(le[off+8:]))
		for k := 0; k < 16; k += 4 {
			swap32(be[off+k:])
		}
		off += 16 + n
	}
	// VLAN: an 802.1Q tag inside the first Ethernet frame.
	var vlan bytes.Buffer
	vlan.Write(be[:24])
	for i, off := 0, 24; off < len(be); i++ {
		n := int(binary.BigEndian.Uint32(be[off+8:]))
		rec, frame := append([]byte(nil), be[off:off+16]...), be[off+16:off+16+n]
		if i == 0 {
			frame = append(append(append([]byte(nil), frame[:12]...), 0x81, 0, 0, 7), frame[12:]...)
			binary.BigEndian.PutUint32(rec[8:], uint32(len(frame)))
			binary.BigEndian.PutUint32(rec[12:], uint32(len(frame)))
		}
		vlan.Write(rec)
		vlan.Write(frame)
		off += 16 + n
	}
	for name, data := range map[string][]byte{"big-endian": be, "vlan": vlan.Bytes()} {
		c, err := ReadCapture(bytes.NewReader(data), name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Packets) != 3 || len(c.Warnings) > 0 {
			t.Fatalf("%s: %d packets, warnings %q", name, len(c.Packets), c.Warnings)
		}
		for i, pk := range c.Packets {
			if pk.Time != p[i].t || pk.Seq != p[i].seq {
				t.Errorf("%s packet %d: %+v", name, i, pk)
			}
		}
	}
}
