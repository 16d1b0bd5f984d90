package libsockcap

import "unsafe"

// Test hooks for the external test package.
var (
	NewScannerBytes = newScanner
	FrameEnd        = frameEnd
	DecodeSealed    = decodeSealed
	NewSealedBytes  = newSealedScanner
	FastPath        = &fastPath
	FormatConsts    = map[string]int{
		"SC_CHUNK_MAGIC": chunkMagic, "SC_VERSION": formatVersion, "SC_HDR_STRINGS_OFF": hdrStringsOff,
		"SC_K_SEND": kSend, "SC_K_RECV": kRecv, "SC_K_EVENT": kEvent, "SC_K_FD": kFd, "SC_K_DSEND": kDSend, "SC_K_DRECV": kDRecv, "SC_AF_SAME": afSame,
		"SC_OP_SOCKET": int(OpSocket), "SC_OP_GAP": int(OpGap), "SC_OP_RESOLVE": int(OpResolve), "SC_OP_SOCKETPAIR": int(OpSocketpair),
		"SC_F_RET": fRet, "SC_F_PEERPID": fPeerPid, "SC_F_ALL": fAll, "SC_FD_ALL": fdAll,
		"SC_AF_UNIX": afUnix, "SC_AF_INET": afInet, "SC_AF_INET6": afInet6,
		"SC_SUM_PREFIX": sumPrefix, "SC_NAME_MAX": nameMax,
		"SC_STR_HOST": strHost, "SC_STR_CLOCKNAME": strClockName, "SC_STR_NETNS": strNetNS,
	}
)

// ChunkByChunk reports whether a sealed log is read chunk by chunk (by its
// index) rather than decoded whole.
func (s *Scanner) ChunkByChunk() bool { return s.lazy != nil }

// recAddr is the address of st.data[pos] (as peekNext notes it).
func (s *Scanner) recAddr(st *stream, pos int) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(st.data))) + uintptr(pos)
}
