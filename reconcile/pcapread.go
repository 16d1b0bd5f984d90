package reconcile

// Reading pcap and pcapng files into nat.Packet values. The container
// formats are parsed here rather than with pcapgo's readers: those allocate
// whatever length a damaged header claims and index option values without
// bounds checks, and a capture must never crash wap5 (tests write their
// captures with pcapgo and check that both agree).

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"os"

	"wap5/libsockcap"
	"wap5/nat"
)

// Limits against damaged headers.
const (
	maxSnap  = 256 << 10 // largest packet kept (tcpdump's default snap length is 262144)
	maxBlock = 16 << 20  // largest pcapng block
)

// Link types (LINKTYPE_* of the pcap specification).
const (
	linkNull     = 0
	linkEthernet = 1
	linkRaw      = 101
	linkRawBSD   = 12 // DLT_RAW on some BSDs
	linkRawBSD14 = 14
	linkLoop     = 108
	linkSLL      = 113
	linkIPv4     = 228
	linkIPv6     = 229
	linkSLL2     = 276
)

// Capture is the content of one capture file: its TCP and UDP packets in
// file order and what could not be read.
type Capture struct {
	File     string
	Packets  []nat.Packet
	Frames   int // frames read, including those that were not TCP or UDP
	Warnings []string
}

func (c *Capture) warnf(format string, a ...any) {
	c.Warnings = append(c.Warnings, c.File+": "+fmt.Sprintf(format, a...))
}

// ReadCaptureFile reads a pcap or pcapng file; capture is the index stored in
// its packets.
func ReadCaptureFile(path string, capture int32) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hint int
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		// Most captured frames take 70–1600 bytes with their record header;
		// a hint on the small side saves most of the slice's regrowth.
		hint = int(min(st.Size()/256, 1<<20))
	}
	return readCapture(f, path, capture, hint)
}

// ReadCapture reads a pcap or pcapng stream (recognised by its magic
// number). Damage stops the reading with a warning naming the packet number
// and byte offset; the packets before it are returned. The error is for
// input that is not a capture at all.
func ReadCapture(r io.Reader, file string, capture int32) (*Capture, error) {
	return readCapture(r, file, capture, 0)
}

func readCapture(r io.Reader, file string, capture int32, hint int) (*Capture, error) {
	pkts := make([]nat.Packet, 0, hint)
	c, err := streamCapture(r, file, capture, nil, func(p *nat.Packet) bool {
		pkts = append(pkts, *p)
		return true
	})
	if c != nil {
		c.Packets = pkts
	}
	return c, err
}

// streamCapture reads a pcap or pcapng stream packet by packet, in file
// order, handing each TCP or UDP packet to emit (which must not keep the
// pointer) until emit returns false. The Capture it returns has the frame
// count and warnings, no packets. keyed, when not nil, says which packets
// need their fingerprint (Packet.Key; the others keep 0): hashing the
// payload is a good part of decoding.
func streamCapture(r io.Reader, file string, capture int32, keyed func(*nat.Packet) bool, emit func(*nat.Packet) bool) (*Capture, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pcap or pcapng file (%d bytes)", file, len(magic))
	}
	c := &Capture{File: file}
	d := decoder{c: c, capture: capture, emit: emit, keyed: keyed}
	switch binary.LittleEndian.Uint32(magic) {
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		readPcap(br, &d)
	case 0x0a0d0d0a:
		readPcapng(br, &d)
	default:
		return nil, fmt.Errorf("%s: not a pcap or pcapng file (magic %08x)", file, binary.BigEndian.Uint32(magic))
	}
	d.finish()
	return c, nil
}

// counter tracks the byte offset for damage reports.
type counter struct {
	r   *bufio.Reader
	off int64
}

func (c *counter) full(b []byte) error {
	n, err := io.ReadFull(c.r, b)
	c.off += int64(n)
	return err
}

func (c *counter) skip(n int64) error {
	for n > 0 {
		k := int(min(n, 1<<30))
		m, err := c.r.Discard(k)
		c.off += int64(m)
		n -= int64(m)
		if err != nil {
			return err
		}
	}
	return nil
}

func readPcap(br *bufio.Reader, d *decoder) {
	in := counter{r: br}
	var hdr [24]byte
	if err := in.full(hdr[:]); err != nil {
		d.c.warnf("offset 0: truncated file header")
		return
	}
	var bo binary.ByteOrder = binary.LittleEndian
	magic := binary.LittleEndian.Uint32(hdr[:4])
	if magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1 {
		bo = binary.BigEndian
	}
	nano := magic == 0xa1b23c4d || magic == 0x4d3cb2a1
	link := int(bo.Uint32(hdr[20:]) & 0xffff)
	var rec [16]byte
	buf := make([]byte, 0, 2048)
	for n := 1; ; n++ {
		at := in.off
		if err := in.full(rec[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				d.c.warnf("packet %d (offset %d): truncated record header; stopped there", n, at)
			} else if err != io.EOF {
				d.c.warnf("packet %d (offset %d): %v", n, at, err)
			}
			return
		}
		sec, frac := int64(bo.Uint32(rec[0:])), int64(bo.Uint32(rec[4:]))
		caplen, orig := bo.Uint32(rec[8:]), bo.Uint32(rec[12:])
		if caplen > maxSnap || (frac >= 1e9) || (!nano && frac >= 1e6) {
			d.c.warnf("packet %d (offset %d): damaged record header (length %d, fraction %d); stopped there", n, at, caplen, frac)
			return
		}
		if cap(buf) < int(caplen) {
			buf = make([]byte, caplen)
		}
		data := buf[:caplen]
		if err := in.full(data); err != nil {
			d.c.warnf("packet %d (offset %d): truncated packet data (%d of %d bytes); stopped there", n, at, in.off-at-16, caplen)
			return
		}
		if !nano {
			frac *= 1000
		}
		d.frame(link, sec*1e9+frac, data, int(max(orig, caplen)), n)
		if d.stop {
			return
		}
	}
}

// pcapng block types.
const (
	ngSHB = 0x0a0d0d0a
	ngIDB = 1
	ngPB  = 2
	ngSPB = 3
	ngEPB = 6
)

type ngIface struct {
	link    int
	snap    uint32
	resol   uint8 // if_tsresol
	offsetS int64 // if_tsoffset, seconds
}

func readPcapng(br *bufio.Reader, d *decoder) {
	in := counter{r: br}
	var bo binary.ByteOrder = binary.LittleEndian
	var ifaces []ngIface
	var hdr [12]byte
	body := make([]byte, 0, 4096)
	badIface := map[uint32]bool{}
	for n, blk := 1, 1; ; blk++ {
		at := in.off
		if err := in.full(hdr[:8]); err != nil {
			if err != io.EOF {
				d.c.warnf("block %d (offset %d): truncated block header; stopped there", blk, at)
			}
			return
		}
		typ := binary.LittleEndian.Uint32(hdr[:4])
		if typ == ngSHB {
			if err := in.full(hdr[8:12]); err != nil {
				d.c.warnf("block %d (offset %d): truncated section header; stopped there", blk, at)
				return
			}
			switch {
			case binary.LittleEndian.Uint32(hdr[8:]) == 0x1a2b3c4d:
				bo = binary.LittleEndian
			case binary.BigEndian.Uint32(hdr[8:]) == 0x1a2b3c4d:
				bo = binary.BigEndian
			default:
				d.c.warnf("block %d (offset %d): section header with a bad byte-order magic; stopped there", blk, at)
				return
			}
			ifaces = ifaces[:0]
			clear(badIface)
		} else {
			typ = bo.Uint32(hdr[:4])
		}
		length := bo.Uint32(hdr[4:8])
		if length < 12 || length%4 != 0 || length > maxBlock || (typ == ngSHB && length < 28) {
			d.c.warnf("block %d (offset %d): damaged block length %d; stopped there", blk, at, length)
			return
		}
		read := int64(8)
		if typ == ngSHB {
			read = 12
		}
		bodyLen := int64(length) - read - 4
		if typ != ngIDB && typ != ngEPB && typ != ngSPB && typ != ngPB {
			if err := in.skip(bodyLen + 4); err != nil {
				d.c.warnf("block %d (offset %d): truncated block; stopped there", blk, at)
				return
			}
			continue
		}
		if cap(body) < int(bodyLen)+4 {
			body = make([]byte, bodyLen+4)
		}
		b := body[:bodyLen+4]
		if err := in.full(b); err != nil {
			d.c.warnf("block %d (offset %d): truncated block (packet %d); stopped there", blk, at, n)
			return
		}
		if trail := bo.Uint32(b[bodyLen:]); trail != length {
			d.c.warnf("block %d (offset %d): trailing length %d differs from %d; stopped there", blk, at, trail, length)
			return
		}
		b = b[:bodyLen]
		switch typ {
		case ngIDB:
			if len(b) < 8 {
				d.c.warnf("block %d (offset %d): interface description too short; stopped there", blk, at)
				return
			}
			ifc := ngIface{link: int(bo.Uint16(b[0:])), snap: bo.Uint32(b[4:]), resol: 6}
			for opts := b[8:]; len(opts) >= 4; {
				code, olen := bo.Uint16(opts[0:]), int(bo.Uint16(opts[2:]))
				if code == 0 || 4+olen > len(opts) {
					break
				}
				v := opts[4 : 4+olen]
				switch {
				case code == 9 && olen >= 1:
					ifc.resol = v[0]
				case code == 14 && olen >= 8:
					ifc.offsetS = int64(bo.Uint64(v))
				}
				opts = opts[min(len(opts), 4+(olen+3)&^3):]
			}
			if e := ifc.resol &^ 0x80; (ifc.resol&0x80 == 0 && e > 18) || (ifc.resol&0x80 != 0 && e > 63) {
				d.c.warnf("block %d (offset %d): interface %d has an impossible time resolution %#x; assuming microseconds", blk, at, len(ifaces), ifc.resol)
				ifc.resol = 6
			}
			ifaces = append(ifaces, ifc)
		case ngEPB, ngPB:
			if len(b) < 20 {
				d.c.warnf("block %d (offset %d): packet block too short; stopped there", blk, at)
				return
			}
			var ifid uint32
			if typ == ngEPB {
				ifid = bo.Uint32(b[0:])
			} else {
				ifid = uint32(bo.Uint16(b[0:]))
			}
			ts := uint64(bo.Uint32(b[4:]))<<32 | uint64(bo.Uint32(b[8:]))
			caplen, orig := bo.Uint32(b[12:]), bo.Uint32(b[16:])
			if uint64(caplen) > uint64(len(b)-20) {
				d.c.warnf("packet %d (block %d, offset %d): captured length %d exceeds its block; stopped there", n, blk, at, caplen)
				return
			}
			if int(ifid) >= len(ifaces) {
				if !badIface[ifid] {
					d.c.warnf("packet %d (block %d, offset %d): unknown interface %d; its packets are skipped", n, blk, at, ifid)
					badIface[ifid] = true
				}
				n++
				continue
			}
			ifc := ifaces[ifid]
			d.frame(ifc.link, ngTime(ts, ifc), b[20:20+caplen], int(max(orig, caplen)), n)
			n++
		case ngSPB:
			if len(b) < 4 || len(ifaces) == 0 {
				d.c.warnf("packet %d (block %d, offset %d): simple packet block without an interface; stopped there", n, blk, at)
				return
			}
			orig := bo.Uint32(b[0:])
			caplen := min(uint64(orig), uint64(len(b)-4))
			if ifaces[0].snap > 0 {
				caplen = min(caplen, uint64(ifaces[0].snap))
			}
			// A simple packet has no timestamp: it takes the previous one.
			d.frame(ifaces[0].link, d.last, b[4:4+caplen], int(orig), n)
			n++
		}
		if d.stop {
			return
		}
	}
}

// ngTime converts a pcapng timestamp to ns since the epoch.
func ngTime(ts uint64, ifc ngIface) int64 {
	e := uint(ifc.resol &^ 0x80)
	var ns int64
	if ifc.resol&0x80 != 0 { // 2^-e
		sec := ts >> e
		hi, lo := bits.Mul64(ts&(1<<e-1), 1e9)
		frac := lo >> e
		if e > 0 {
			frac |= hi << (64 - e)
		}
		ns = int64(sec)*1e9 + int64(frac)
	} else {
		p := uint64(1)
		for range e {
			p *= 10
		}
		sec, frac := ts/p, ts%p
		switch {
		case e <= 9:
			for range 9 - e {
				frac *= 10
			}
		default:
			for range e - 9 {
				frac /= 10
			}
		}
		ns = int64(sec)*1e9 + int64(frac)
	}
	return ns + ifc.offsetS*1e9
}

// decoder turns frames into packets and counts what it skips.
type decoder struct {
	c          *Capture
	emit       func(*nat.Packet) bool // false: stop reading
	keyed      func(*nat.Packet) bool // nil: every packet
	stop       bool
	capture    int32
	last       int64
	fragments  int
	short      int
	badLink    map[int]int
	nonIP      int
	otherProto int
	multicast  int
}

var errShort = errors.New("short")

// frame decodes one link-layer frame; orig is its length on the wire.
func (d *decoder) frame(link int, t int64, data []byte, orig, n int) {
	d.c.Frames++
	d.last = t
	var ip []byte
	switch link {
	case linkEthernet:
		if len(data) < 14 {
			d.short++
			return
		}
		et, off := binary.BigEndian.Uint16(data[12:]), 14
		for (et == 0x8100 || et == 0x88a8) && len(data) >= off+4 {
			et, off = binary.BigEndian.Uint16(data[off+2:]), off+4
		}
		if et != 0x0800 && et != 0x86dd {
			d.nonIP++
			return
		}
		ip, orig = data[off:], orig-off
	case linkSLL:
		if len(data) < 16 {
			d.short++
			return
		}
		if et := binary.BigEndian.Uint16(data[14:]); et != 0x0800 && et != 0x86dd {
			d.nonIP++
			return
		}
		ip, orig = data[16:], orig-16
	case linkSLL2:
		if len(data) < 20 {
			d.short++
			return
		}
		if et := binary.BigEndian.Uint16(data[0:]); et != 0x0800 && et != 0x86dd {
			d.nonIP++
			return
		}
		ip, orig = data[20:], orig-20
	case linkNull, linkLoop:
		if len(data) < 4 {
			d.short++
			return
		}
		ip, orig = data[4:], orig-4
	case linkRaw, linkRawBSD, linkRawBSD14, linkIPv4, linkIPv6:
		ip = data
	default:
		if d.badLink == nil {
			d.badLink = map[int]int{}
		}
		d.badLink[link]++
		return
	}
	var p nat.Packet
	switch err := decodeIP(ip, &p, d.keyed); err {
	case nil:
	case errFragment:
		d.fragments++
		return
	case errShort:
		d.short++
		return
	default:
		d.otherProto++
		return
	}
	if a := p.Dst.Addr(); a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		d.multicast++ // one-to-many datagrams (mDNS, DHCP...) are not messages between two nodes
		return
	}
	p.Time, p.Capture, p.Index = t, d.capture, int32(n)
	if !d.emit(&p) {
		d.stop = true
	}
}

func (d *decoder) finish() {
	for link, k := range d.badLink {
		d.c.warnf("%d frames of unsupported link type %d skipped", k, link)
	}
	if d.fragments > 0 {
		d.c.warnf("%d IP fragments skipped (fragmented datagrams are not reassembled)", d.fragments)
	}
	if d.multicast > 0 {
		d.c.warnf("%d multicast or broadcast datagrams skipped", d.multicast)
	}
	if d.short > 0 {
		d.c.warnf("%d frames too short for their headers skipped (snap length too small?)", d.short)
	}
}

var (
	errFragment = errors.New("fragment")
	errProto    = errors.New("not tcp or udp")
)

// decodeIP decodes an IPv4 or IPv6 packet carrying TCP or UDP. Lengths on
// the wire come from the IP header, so a snapped capture still counts every
// byte.
func decodeIP(b []byte, p *nat.Packet, keyed func(*nat.Packet) bool) error {
	if len(b) < 1 {
		return errShort
	}
	var src, dst netip.Addr
	var proto uint8
	var payload []byte
	var plen int // transport length on the wire
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return errShort
		}
		ihl := int(b[0]&15) * 4
		total := int(binary.BigEndian.Uint16(b[2:]))
		if total == 0 {
			total = len(b) // TSO/GRO super-packets over 64 KiB carry 0 here
		}
		if ihl < 20 || len(b) < ihl || total < ihl {
			return errShort
		}
		if frag := binary.BigEndian.Uint16(b[6:]); frag&0x3fff != 0 {
			return errFragment
		}
		p.IPID = uint32(binary.BigEndian.Uint16(b[4:]))
		p.TTL, proto = b[8], b[9]
		src = netip.AddrFrom4([4]byte(b[12:16]))
		dst = netip.AddrFrom4([4]byte(b[16:20]))
		payload, plen = b[ihl:min(len(b), total)], total-ihl
	case 6:
		if len(b) < 40 {
			return errShort
		}
		p.IPID = binary.BigEndian.Uint32(b[0:]) & 0xfffff
		p.TTL, proto = b[7], b[6]
		src = netip.AddrFrom16([16]byte(b[8:24]))
		dst = netip.AddrFrom16([16]byte(b[24:40]))
		plen = int(binary.BigEndian.Uint16(b[4:]))
		off := 40
		for hops := 0; proto == 0 || proto == 43 || proto == 60 || proto == 44; hops++ {
			if proto == 44 {
				return errFragment
			}
			if len(b) < off+8 || hops > 8 {
				return errShort
			}
			l := int(b[off+1])*8 + 8
			proto = b[off]
			off += l
			plen -= l
		}
		if off > len(b) || plen < 0 {
			return errShort
		}
		payload = b[off:min(len(b), off+plen)]
	default:
		return errProto
	}
	p.Proto = proto
	switch proto {
	case nat.ProtoTCP:
		if len(payload) < 20 {
			return errShort
		}
		hl := int(payload[12]>>4) * 4
		if hl < 20 || len(payload) < hl || plen < hl {
			return errShort
		}
		p.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(payload[0:]))
		p.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(payload[2:]))
		p.Seq = binary.BigEndian.Uint32(payload[4:])
		p.Ack = binary.BigEndian.Uint32(payload[8:])
		p.Flags = payload[13] & 0x3f
		p.Window = binary.BigEndian.Uint16(payload[14:])
		p.Len = int32(plen - hl)
		if keyed == nil || keyed(p) {
			p.Key = nat.Key(proto, p.IPID, p.Seq, p.Ack, p.Flags, p.Window, p.Len, payload[hl:])
		}
	case nat.ProtoUDP:
		if len(payload) < 8 {
			return errShort
		}
		p.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(payload[0:]))
		p.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(payload[2:]))
		if ul := int(binary.BigEndian.Uint16(payload[4:])); ul >= 8 && ul < plen {
			plen = ul
		}
		p.Len = int32(plen - 8)
		data := payload[8:min(len(payload), plen)]
		p.Sum = libsockcap.Checksum(data, int(p.Len))
		p.Snapped = len(data) < min(int(p.Len), 64)
		if keyed == nil || keyed(p) {
			p.Key = nat.Key(proto, p.IPID, 0, 0, 0, 0, p.Len, data)
		}
	default:
		return errProto
	}
	return nil
}
