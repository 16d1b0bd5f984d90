package nat

import (
	"encoding/binary"
	"net/netip"
)

// Protocol numbers of the transports NAT detection and reconcile handle.
const (
	ProtoTCP uint8 = 6
	ProtoUDP uint8 = 17
)

// TCP flag bits as they appear in the header.
const (
	FlagFIN uint8 = 1 << iota
	FlagSYN
	FlagRST
	FlagPSH
	FlagACK
)

// KeyPrefix is how many payload bytes the fingerprint covers: enough to tell
// packets apart, few enough that captures with different snap lengths agree.
const KeyPrefix = 128

// Packet is one captured TCP or UDP packet as NAT detection and reconcile's
// packet layer see it. Time is nanoseconds since the Unix epoch on the
// capture point's own clock.
type Packet struct {
	Time     int64
	Src, Dst netip.AddrPort
	Capture  int32  // index of the capture point (a pcap file or pcapng interface)
	Index    int32  // packet number within its capture, from 1
	Seq, Ack uint32 // TCP
	Len      int32  // transport payload length on the wire
	Sum      uint32 // UDP: libsockcap's payload checksum (libsockcap.Checksum: CRC32C of the first 64 bytes and the length)
	Key      uint64 // fingerprint over the fields NAT leaves alone, see Key
	IPID     uint32 // IPv4 identification, IPv6 flow label
	Window   uint16
	Proto    uint8
	TTL      uint8 // IPv4 TTL or IPv6 hop limit
	Flags    uint8 // TCP flags
	// Snapped: the capture kept fewer payload bytes than Sum needs, so Sum
	// cannot be compared with a log's checksum.
	Snapped bool
}

// Key fingerprints a packet over the header fields that neither routing nor
// address translation change, and the first KeyPrefix bytes of its payload
// (step 1). Addresses, ports, checksums and the TTL are deliberately left out.
func Key(proto uint8, ipid uint32, seq, ack uint32, flags uint8, window uint16, length int32, payload []byte) uint64 {
	var h uint64 = 14695981039346656037
	var b [20]byte
	b[0] = proto
	binary.LittleEndian.PutUint32(b[1:], ipid)
	binary.LittleEndian.PutUint32(b[5:], seq)
	binary.LittleEndian.PutUint32(b[9:], ack)
	b[13] = flags
	binary.LittleEndian.PutUint16(b[14:], window)
	binary.LittleEndian.PutUint32(b[16:], uint32(length))
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	if len(payload) > KeyPrefix {
		payload = payload[:KeyPrefix]
	}
	for _, c := range payload {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
