package libsockcap

import (
	"encoding/binary"
	"hash/crc32"
)

// Numbers of the on-disk format, mirrored from c/format.h (the one
// definition; FORMAT.md explains it). internal/sockcapenc's test checks that
// the two agree.
const (
	fileMagic      = "SOCKCAP1"
	formatVersion  = 2 // 2: staged chunks (FORMAT.md, "Layout"); 1 is read too
	hdrStringsOff  = 80
	chunkMagic     = 0x4b434353 // "SCCK"
	chunkHdrSize   = 32
	minChunkSize   = 4096
	maxChunkSize   = 1 << 24
	clockRealtime  = 0
	clockMonotonic = 1

	strHost      = 1
	strNode      = 2
	strExe       = 3
	strArgv      = 4
	strBootID    = 5
	strClockName = 6
	strNetNS     = 7

	kSend  = 1
	kRecv  = 2
	kEvent = 3
	kFd    = 4
	kDSend = 5
	kDRecv = 6

	fRet     = 1 << 0
	fErrno   = 1 << 1
	fBytes   = 1 << 2
	fFd2     = 1 << 3
	fChild   = 1 << 4
	fDur     = 1 << 5
	fName    = 1 << 6
	fSum     = 1 << 7
	fRemote  = 1 << 8
	fLocal   = 1 << 9
	fArg     = 1 << 10
	fPeerPid = 1 << 11
	fAll     = 0xfff
	nameMax  = 255

	fdLocal   = 1 << 0
	fdRemote  = 1 << 1
	fdPeerPid = 1 << 2
	fdAll     = 0x7

	afNone  = 0
	afUnix  = 1
	afInet  = 4
	afInet6 = 6
	afSame  = 0xff // datagram peer: same as the previous datagram record of the fd in the chunk

	unixPathMax = 108
	sumPrefix   = 64
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum computes the UDP payload checksum the library records (FORMAT.md):
// CRC32C over the first 64 payload bytes followed by the 4 little-endian
// bytes of the datagram's full length. payload may be longer or shorter than
// 64 bytes (a capture's snap length); length is the datagram's real length.
// Readers of pcaps use it to match datagrams.
func Checksum(payload []byte, length int) uint32 {
	n := len(payload)
	if n > sumPrefix {
		n = sumPrefix
	}
	if n > length {
		n = length
	}
	c := crc32.Checksum(payload[:n], castagnoli)
	var l [4]byte
	binary.LittleEndian.PutUint32(l[:], uint32(length))
	return crc32.Update(c, castagnoli, l[:])
}
