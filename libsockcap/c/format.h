/* format.h — the ONE definition of the libsockcap on-disk log format.
 *
 * libsockcap/FORMAT.md explains it in prose; the Go reader (package libsockcap,
 * format.go) mirrors these numbers and a cgo test checks that they agree.
 *
 * A log file (one per process image) is:
 *   [file header: SC_HDR_SIZE bytes][chunk 0][chunk 1]...   each chunk SC_CHUNK_SIZE bytes
 * Chunks are handed out to threads by an atomic counter in the header; a chunk
 * holds records of one thread only, in time order. Every record starts with
 * its kind byte, written LAST (release store): a zero kind byte is the end of
 * what was committed in that chunk. All integers in records are LEB128
 * varints; signed ones are zigzag-encoded first. Fixed header fields are
 * little-endian.
 */
#ifndef SOCKCAP_FORMAT_H
#define SOCKCAP_FORMAT_H

#include <stdint.h>

#define SC_MAGIC "SOCKCAP1"      /* 8 bytes at offset 0, written last */
#define SC_VERSION 2u /* 2: a chunk may be staged at another index's place (FORMAT.md) */
#define SC_HDR_SIZE 4096u
#define SC_CHUNK_SIZE 65536u
#define SC_CHUNK_MAGIC 0x4b434353u /* "SCCK" little-endian, written last */
#define SC_CHUNK_HDR_SIZE 32u

/* Clock ids as stored in the header (what record timestamps are). */
#define SC_CLOCK_REALTIME 0u
#define SC_CLOCK_MONOTONIC 1u

/* File header, fixed part. */
struct sc_file_header {
	char magic[8];          /*  0 */
	uint32_t version;       /*  8 */
	uint32_t hdr_size;      /* 12 */
	uint32_t chunk_size;    /* 16 */
	uint32_t clock;         /* 20  SC_CLOCK_* */
	uint64_t nchunks;       /* 24  chunks handed out (atomic) */
	uint64_t dropped;       /* 32  events lost (atomic) */
	int64_t start_wall;     /* 40  CLOCK_REALTIME at start, ns */
	int64_t start_clock;    /* 48  the record clock at start, ns */
	int64_t start_mono;     /* 56  CLOCK_MONOTONIC at start, ns */
	int32_t pid;            /* 64 */
	int32_t ppid;           /* 68 */
	uint32_t strings_len;   /* 72  bytes used in strings[] */
	uint32_t reserved;      /* 76 */
	uint8_t strings[];      /* 80  TLV: tag u8, len u16 LE, bytes */
};
#define SC_HDR_STRINGS_OFF 80u

/* String tags in the header TLV area. */
#define SC_STR_HOST 1
#define SC_STR_NODE 2
#define SC_STR_EXE 3
#define SC_STR_ARGV 4  /* /proc/self/cmdline: NUL-separated, bounded */
#define SC_STR_BOOTID 5
#define SC_STR_CLOCKNAME 6
#define SC_STR_NETNS 7 /* 8 bytes LE: inode of /proc/self/ns/net (the network namespace) */
#define SC_STR_MAX_LEN 1024u

/* Chunk header (SC_CHUNK_HDR_SIZE bytes). */
struct sc_chunk_header {
	uint32_t magic;         /*  0  SC_CHUNK_MAGIC, written last */
	int32_t tid;            /*  4 */
	int64_t base_time;      /*  8  first record's dt is relative to this */
	uint64_t index;         /* 16  this chunk's index in the file; != its place: staged there (version 2) */
	uint32_t thread_seq;    /* 24  n-th chunk of this thread in this file */
	uint32_t reserved;      /* 28 */
};

/* Record kinds (the first byte). Every record continues with
 * dt (zigzag: ns since the previous record of the chunk, or base_time). */
#define SC_K_SEND 1  /* fd zz, ret zz, [errno uv if ret < 0] */
#define SC_K_RECV 2  /* same as SC_K_SEND */
#define SC_K_EVENT 3 /* op u8, fd zz, mask uv, fields in SC_F_* bit order */
#define SC_K_FD 4    /* fd zz, proto u8, sotype uv, mask uv, fields in SC_FD_* order */
#define SC_K_DSEND 5 /* datagram: fd zz, ret zz, errno uv if ret < 0 else sum (4 bytes LE), peer */
#define SC_K_DRECV 6 /* same as SC_K_DSEND */
#define SC_K_MAX 6
/* The peer of a datagram record is an address, or SC_AF_SAME: the same peer as
 * the previous datagram record of this fd in this chunk. */
#define SC_AF_SAME 0xff

/* Operations, numbered as Go's libsockcap.Op. */
#define SC_OP_SOCKET 1
#define SC_OP_BIND 2
#define SC_OP_LISTEN 3
#define SC_OP_CONNECT 4
#define SC_OP_ACCEPT 5
#define SC_OP_SEND 6
#define SC_OP_RECV 7
#define SC_OP_CLOSE 8
#define SC_OP_SHUTDOWN 9
#define SC_OP_DUP 10
#define SC_OP_FORK 11
#define SC_OP_EXEC 12
#define SC_OP_EXIT 13
#define SC_OP_SOCKETPAIR 14
#define SC_OP_RESOLVE 15
#define SC_OP_GAP 16
#define SC_OP_MAX 16

/* SC_K_EVENT optional fields, present when their bit is set, in this order. */
#define SC_F_RET (1u << 0)     /* zz */
#define SC_F_ERRNO (1u << 1)   /* uv */
#define SC_F_BYTES (1u << 2)   /* uv */
#define SC_F_FD2 (1u << 3)     /* zz */
#define SC_F_CHILD (1u << 4)   /* uv pid */
#define SC_F_DUR (1u << 5)     /* uv ns */
#define SC_F_NAME (1u << 6)    /* uv len (<= SC_NAME_MAX), bytes */
#define SC_F_SUM (1u << 7)     /* uv (32-bit CRC32C, see FORMAT.md) */
#define SC_F_REMOTE (1u << 8)  /* addr */
#define SC_F_LOCAL (1u << 9)   /* addr */
#define SC_F_ARG (1u << 10)    /* zz: shutdown how, exit status, fcntl cmd... */
#define SC_F_PEERPID (1u << 11) /* uv */
#define SC_F_ALL 0xfffu
#define SC_NAME_MAX 255u

/* SC_K_FD optional fields. */
#define SC_FD_LOCAL (1u << 0)   /* addr */
#define SC_FD_REMOTE (1u << 1)  /* addr */
#define SC_FD_PEERPID (1u << 2) /* uv */
#define SC_FD_ALL 0x7u

/* Protocols (Go's libsockcap.Proto). */
#define SC_PROTO_OTHER 0
#define SC_PROTO_TCP 1
#define SC_PROTO_UDP 2
#define SC_PROTO_UNIX 3

/* Address encoding: family u8, then
 *   SC_AF_INET:  4 bytes address, port u16 big-endian
 *   SC_AF_INET6: 16 bytes address, port u16 big-endian, scope uv
 *   SC_AF_UNIX:  uv path length (<= 108; abstract names start with '@'), bytes, uv inode
 *   SC_AF_NONE:  nothing (unknown / unnamed) */
#define SC_AF_NONE 0
#define SC_AF_INET 4
#define SC_AF_INET6 6
#define SC_AF_UNIX 1
#define SC_UNIX_PATH_MAX 108u

/* The largest record the writer produces (an SC_K_EVENT with every field). */
#define SC_RECORD_MAX 640u

/* UDP payload checksum: CRC32C (Castagnoli; init ~0, final ~) over the first
 * SC_SUM_PREFIX payload bytes followed by the 4 little-endian bytes of the
 * full datagram length. */
#define SC_SUM_PREFIX 64u

#endif
