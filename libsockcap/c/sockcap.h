/* sockcap.h — internal declarations shared by the libsockcap sources. */
#ifndef SOCKCAP_H
#define SOCKCAP_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netdb.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "format.h"

#define SC_HIDDEN __attribute__((visibility("hidden")))
#define SC_EXPORT __attribute__((visibility("default")))
#define SC_LIKELY(x) __builtin_expect(!!(x), 1)
#define SC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SC_TLS __thread __attribute__((tls_model("initial-exec")))
/* The code of the calls' fast paths is kept together (SC_HOT: .text.hot,
 * grouped by the linker) and what they rarely run elsewhere (SC_COLD:
 * .text.unlikely; the blocks that call it leave the caller's hot part too):
 * after a system call each code page is one more TLB miss. */
#define SC_HOT __attribute__((hot))
#define SC_COLD __attribute__((cold, noinline))
/* SC_FAST(n): the transfer wrappers a request/response loop runs, in a
 * section of their own that the linker sorts by name (.text.sorted.*, after
 * .text.hot), so that their fast paths sit on as few pages as possible in
 * the order n (the first one page-aligned). A function in a named section
 * is not split into hot and cold parts: what it rarely runs sits at its end. */
#define SC_FAST(n) __attribute__((hot, section(".text.sorted.sockcap_" n)))

/* Bench-only ablations (bench/capture-attrib.sh builds libraries with them;
 * the Makefile's library has none), to attribute the cost of a call:
 *   SC_ABLATE_NORECORD   the fast path writes no record (the clock is read, the fd looked up)
 *   SC_ABLATE_NOCLOCK    no clock read: a record's time is the previous one's + 1
 *   SC_ABLATE_NOFD       fds 0-15: their state is a per-thread copy, the fd table is not read
 *   SC_ABLATE_STOP=1     every fd is taken for a non-socket after the enabled and guard
 *                        checks (ENSURE, the thread state, the checks, the call)
 *   SC_ABLATE_STOP=2     the same after reading the fd's table entry too
 *   SC_ABLATE_NOADDR     recv/recvfrom on an unconnected datagram socket do not ask the
 *                        kernel for the sender (the record's peer is then none)
 *   SC_ABLATE_STATICBUF  the fast path writes its records into a static buffer at
 *                        the chunk's offsets instead of the chunk
 *   SC_BENCH_ANY_TIGHT   every clock reading counts as tight, so that the TSC path runs
 *                        under valgrind too (bench/capture-lines.py counts its cache lines)
 *   SC_BENCH_TSC_SHIFT=k the TSC ticks since the anchor are divided by 2^k (6: valgrind runs
 *                        ~50x slower), so that under valgrind the ns between two records, and
 *                        with them the varints' sizes and branches, are the native ones */
#ifdef SC_BENCH_TSC_SHIFT
#define SC_TSC_SCALE(d) ((d) >> SC_BENCH_TSC_SHIFT)
#else
#define SC_TSC_SCALE(d) (d)
#endif

/* ---- fdtable.c: per-fd state ---- */
#ifndef SC_FDMAX /* a smaller one only in the test build of highfd (libsockcap/snippets_test.go) */
#define SC_FDMAX 65536
#endif
/* fds from SC_FDMAX on (a proxy holding tens of thousands of connections)
 * have their state in blocks of SC_FDHI_BLOCK entries mapped on first use,
 * up to SC_FDMAX + SC_FDHI_BLOCK * SC_FDHI_NBLOCKS (16.8M fds); beyond, each
 * call classifies the fd again (and the state does not last). */
#define SC_FDHI_BLOCK 4096
#define SC_FDHI_NBLOCKS 4096
enum { SC_FD_UNKNOWN = 0, SC_FD_OTHER = 1, SC_FD_SOCKET = 2 };
#define SC_FDF_CONNECTING 1 /* nonblocking connect in progress: refresh names at first I/O */
#define SC_FDF_CONNECTED 2  /* connect/accept done or peer known */
#define SC_FDF_UNNAMED 4    /* inet socket without a local port yet: name it after the first send */
/* 32 bytes, 32-aligned in the table: one fd's state is on one cache line
 * (40-byte entries straddled two lines for 3 fds in 8). Chunk serials are
 * kept as their low 32 bits (SC_SER32): two chunks of a process 2^32 chunks
 * (256 TiB of log) apart would compare equal. */
struct sc_fd { /* what the fast paths read first */
	uint8_t kind;
	uint8_t proto;
	uint8_t flags;
	uint8_t sotype;
	int32_t family;
	uint32_t emitted;        /* SC_SER32 of the chunk where the SC_K_FD record was last written */
	uint32_t dpeer_serial;   /* SC_SER32 of the chunk of... */
	uint64_t dpeer_key;      /* ...the peer of the last datagram record */
	uint64_t peer_ino;       /* socketpair: the other end's inode */
};
#define SC_SER32(serial) ((uint32_t)(serial))

/* ---- the hot page ----
 * With PTI and no PCID every system call flushes the TLB, so each 4 KiB page
 * an intercepted call touches costs a page walk per call (about 4 ns here,
 * bench/results-cap3.md). Everything the calls read besides the thread's
 * state and its chunk is therefore on one page: the flags, the real
 * functions, the offset of the thread's state, and then the fd table, whose
 * entries for fds 0-111 share that page. */
struct mmsghdr; /* declared by <sys/socket.h> only with _GNU_SOURCE (the cgo tests include it before) */
#define SC_REAL_FUNCS(X) /* the fast paths' calls first: on the hot page's first lines */               \
	X(send, ssize_t, int, const void *, size_t, int)                                                \
	X(recv, ssize_t, int, void *, size_t, int)                                                      \
	X(sendto, ssize_t, int, const void *, size_t, int, const struct sockaddr *, socklen_t)          \
	X(recvfrom, ssize_t, int, void *, size_t, int, struct sockaddr *, socklen_t *)                  \
	X(read, ssize_t, int, void *, size_t)                                                           \
	X(write, ssize_t, int, const void *, size_t)                                                    \
	X(readv, ssize_t, int, const struct iovec *, int)                                               \
	X(writev, ssize_t, int, const struct iovec *, int)                                              \
	X(sendmsg, ssize_t, int, const struct msghdr *, int)                                            \
	X(recvmsg, ssize_t, int, struct msghdr *, int)                                                  \
	X(__read_chk, ssize_t, int, void *, size_t, size_t)                                             \
	X(__recv_chk, ssize_t, int, void *, size_t, size_t, int)                                        \
	X(__recvfrom_chk, ssize_t, int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *)    \
	X(close, int, int)                                                                              \
	X(socket, int, int, int, int)                                                                   \
	X(socketpair, int, int, int, int, int *)                                                        \
	X(bind, int, int, const struct sockaddr *, socklen_t)                                           \
	X(listen, int, int, int)                                                                        \
	X(connect, int, int, const struct sockaddr *, socklen_t)                                        \
	X(accept, int, int, struct sockaddr *, socklen_t *)                                             \
	X(accept4, int, int, struct sockaddr *, socklen_t *, int)                                       \
	X(sendmmsg, int, int, struct mmsghdr *, unsigned int, int)                                      \
	X(recvmmsg, int, int, struct mmsghdr *, unsigned int, int, struct timespec *)                   \
	X(sendfile, ssize_t, int, int, off_t *, size_t)                                                 \
	X(sendfile64, ssize_t, int, int, __off64_t *, size_t)                                           \
	X(splice, ssize_t, int, __loff_t *, int, __loff_t *, size_t, unsigned int)                      \
	X(close_range, int, unsigned int, unsigned int, int)                                            \
	X(closefrom, void, int)                                                                         \
	X(shutdown, int, int, int)                                                                      \
	X(dup, int, int)                                                                                \
	X(dup2, int, int, int)                                                                          \
	X(dup3, int, int, int, int)                                                                     \
	X(fcntl, int, int, int, ...)                                                                    \
	X(fcntl64, int, int, int, ...)                                                                  \
	X(fork, pid_t, void)                                                                            \
	X(_Fork, pid_t, void)                                                                           \
	X(posix_spawn, int, pid_t *, const char *, const posix_spawn_file_actions_t *,                  \
	  const posix_spawnattr_t *, char *const[], char *const[])                                      \
	X(posix_spawnp, int, pid_t *, const char *, const posix_spawn_file_actions_t *,                 \
	  const posix_spawnattr_t *, char *const[], char *const[])                                      \
	X(execve, int, const char *, char *const[], char *const[])                                      \
	X(execvpe, int, const char *, char *const[], char *const[])                                     \
	X(fexecve, int, int, char *const[], char *const[])                                              \
	X(execveat, int, int, const char *, char *const[], char *const[], int)                          \
	X(exit, void, int)                                                                              \
	X(_exit, void, int)                                                                             \
	X(_Exit, void, int)                                                                             \
	X(setuid, int, uid_t)                                                                           \
	X(setreuid, int, uid_t, uid_t)                                                                  \
	X(setresuid, int, uid_t, uid_t, uid_t)                                                          \
	X(seteuid, int, uid_t)                                                                          \
	X(getaddrinfo, int, const char *, const char *, const struct addrinfo *, struct addrinfo **)    \
	X(gethostbyname, struct hostent *, const char *)                                                \
	X(gethostbyname2, struct hostent *, const char *, int)                                          \
	X(gethostbyname_r, int, const char *, struct hostent *, char *, size_t, struct hostent **, int *)
#define SC_REAL_MEMBER(name, ret, ...) ret (*name)(__VA_ARGS__);
struct sc_real {
	SC_REAL_FUNCS(SC_REAL_MEMBER)
};
#undef SC_REAL_MEMBER

struct sc_hot {
	int ready;              /* 2: set up (intercept.c) */
	int enabled;            /* sc_cfg.enabled, read by every call */
	volatile uint32_t gen;  /* bumped in a forked child: thread states are stale (never 0 once set up) */
	uint8_t tsc_ok;         /* the TSC record clock is on (segment.c) */
	uint8_t clock_plain;    /* the record clock is libc's own (intercept.c) */
	uint8_t crc_mode;       /* 0 unset, 1 table, 2 SSE4.2 (encode.c) */
	intptr_t tls_off;       /* &sc_t minus the thread pointer (0: not known yet) */
	intptr_t fast_off;      /* tls_off once set up (ready 2) and enabled, else 0: the transfer
				 * wrappers' one check before their fast path (intercept.c) */
	struct sc_real real;    /* the functions we wrap, resolved with dlsym(RTLD_NEXT); send, recv,
				 * sendto and recvfrom on the first cache line with the fields above */
	struct sc_fd fds[SC_FDMAX] __attribute__((aligned(64)));
};
_Static_assert(sizeof(struct sc_fd) == 32, "an fd's state is one half cache line");
_Static_assert(offsetof(struct sc_hot, real) + 4 * sizeof(void *) <= 64, "the fast paths' fields on one line");
SC_HIDDEN extern struct sc_hot sc_hot;
#define sc_fds (sc_hot.fds)
#define sc_gen (sc_hot.gen)
#define sc_tsc_ok (sc_hot.tsc_ok)
#define sc_crc_mode (sc_hot.crc_mode)
#define SC_REAL(name) (sc_hot.real.name)

/* ---- config.c: the environment, read once ---- */
struct sc_config {
	int enabled;             /* SOCKCAP_DIR set and usable */
	int reinject;            /* SOCKCAP_REINJECT (default 1) */
	char dir[512];           /* SOCKCAP_DIR */
	char node[256];          /* SOCKCAP_NODE or hostname, '/' replaced */
	char host[256];          /* hostname */
	char self_path[512];     /* this library's path (for re-injection) */
	/* "NAME=value" strings re-inserted into envp on exec when missing. */
	char env_preload[1100];  /* LD_PRELOAD=... as seen at start */
	char env_dir[530];
	char env_node[280];
	int has_env_node;
};
SC_HIDDEN extern struct sc_config sc_cfg;
SC_HIDDEN void sc_config_load(void);

/* ---- encode.c: varints and records ---- */
struct sc_buf {
	uint8_t *p;
	size_t n, cap;
	int overflow;
};
static inline void sc_put_u8(struct sc_buf *b, uint8_t v)
{
	if (SC_UNLIKELY(b->n >= b->cap)) {
		b->overflow = 1;
		return;
	}
	b->p[b->n++] = v;
}

static inline void sc_put_uv(struct sc_buf *b, uint64_t v)
{
	if (SC_UNLIKELY(b->n + 10 > b->cap)) {
		b->overflow = 1;
		return;
	}
	uint8_t *p = b->p + b->n;
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	b->n += n;
}

static inline void sc_put_zz(struct sc_buf *b, int64_t v)
{
	sc_put_uv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

SC_HIDDEN void sc_put_bytes(struct sc_buf *b, const void *p, size_t n);
/* sc_put_addr encodes a sockaddr (NULL or unknown family: SC_AF_NONE). */
SC_HIDDEN void sc_put_addr(struct sc_buf *b, const struct sockaddr *sa, socklen_t len, uint64_t inode);
SC_HIDDEN uint32_t sc_sum_init(void);
SC_HIDDEN uint32_t sc_sum_update(uint32_t h, const void *p, size_t n);
SC_HIDDEN uint32_t sc_sum_final(uint32_t h, uint64_t total_len);

/* sc_sum_slow is sc_sum_prefix without SSE4.2 (or before the CPU was checked). */
SC_HIDDEN SC_COLD uint32_t sc_sum_slow(const void *p, size_t k, uint64_t total);

/* sc_sum_prefix is the datagram checksum (FORMAT.md) of k stored payload
 * bytes at p (k <= SC_SUM_PREFIX) of a datagram of total bytes: CRC32C over
 * the k bytes, then over total's 4 little-endian bytes. Inline: with SSE4.2
 * (the crc32 instruction through asm, so no target attribute blocks
 * inlining) 8 bytes per instruction and the length as one 4-byte step.
 * (A loop instead of the unrolled common case: 2 code lines fewer, but +50
 * instructions per datagram call, measured.) */
static inline uint32_t sc_sum_prefix(const void *p, size_t k, uint64_t total)
{
#if defined(__x86_64__)
	if (SC_LIKELY(sc_crc_mode == 2)) {
		const uint8_t *s = p;
		uint64_t c = 0xffffffffu;
		if (k == SC_SUM_PREFIX) { /* the common case, unrolled */
			typedef uint64_t __attribute__((may_alias, aligned(1))) u64u;
			const u64u *v = (const u64u *)s;
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[0]));
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[1]));
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[2]));
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[3]));
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[4]));
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[5]));
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[6]));
			__asm__("crc32q %1, %0" : "+r"(c) : "m"(v[7]));
			s += 64;
			k = 0;
		}
		while (k >= 8) {
			uint64_t v;
			memcpy(&v, s, 8);
			__asm__("crc32q %1, %0" : "+r"(c) : "rm"(v));
			s += 8;
			k -= 8;
		}
		uint32_t c32 = (uint32_t)c;
		while (k--) {
			uint8_t v = *s++;
			__asm__("crc32b %1, %0" : "+r"(c32) : "rm"(v));
		}
		uint32_t l = (uint32_t)total; /* x86 is little-endian: the 4 LE bytes */
		__asm__("crc32l %1, %0" : "+r"(c32) : "rm"(l));
		return ~c32;
	}
#endif
	return sc_sum_slow(p, k, total);
}

/* An SC_K_EVENT record under construction. */
struct sc_event {
	uint8_t op;
	int fd;
	uint32_t mask;
	int64_t ret;
	int err;
	uint64_t bytes;
	int fd2;
	int child;
	uint64_t dur;
	const char *name;
	uint32_t sum;
	const struct sockaddr *remote;
	socklen_t remote_len;
	const struct sockaddr *local;
	socklen_t local_len;
	int64_t arg;
	int peerpid;
};
/* sc_encode_dgram writes the body of an SC_K_DSEND/SC_K_DRECV record; peer
 * NULL with same set writes SC_AF_SAME, NULL without it SC_AF_NONE. */
SC_HIDDEN void sc_encode_dgram(struct sc_buf *b, int fd, int64_t ret, int err, uint32_t sum,
			       const struct sockaddr *peer, socklen_t peer_len, int same);
/* sc_addr_key identifies an address (to elide repeated datagram peers). */
SC_HIDDEN uint64_t sc_addr_key(const struct sockaddr *sa, socklen_t len);
/* sc_in4_key is sc_addr_key's exact form for an IPv4 address: the first 8
 * bytes of the sockaddr_in as they are (family, port, address; one load). The
 * family AF_INET in its first two bytes keeps it nonzero and apart from other
 * families' keys (sc_addr_key sets bit 63 of those). The caller has checked len >= sizeof(struct sockaddr_in). */
static inline uint64_t sc_in4_key(const struct sockaddr *sa)
{
	uint64_t k;
	memcpy(&k, sa, 8);
	return k;
}
/* sc_encode_event writes the fields after dt into b. */
SC_HIDDEN void sc_encode_event(struct sc_buf *b, const struct sc_event *e);

/* ---- segment.c: log file, chunks, commit ---- */
/* The TSC clock (sc_now): per thread, an anchor — a TSC reading and the
 * CLOCK_REALTIME read next to it — and ns per tick (mult, 32.32 fixed
 * point) fitted by the thread itself against CLOCK_REALTIME over >= 10 ms
 * windows, refitted every second. Between anchors a timestamp is the anchor
 * plus the ticks since, scaled; an anchor is used for at most span ticks
 * (1 ms), then CLOCK_REALTIME is read again. */
struct sc_clk { /* what sc_now_of reads first */
	uint64_t anc_tsc;  /* TSC at the anchor */
	int64_t anc_ns;    /* CLOCK_REALTIME at the anchor */
	uint64_t span;     /* ticks the anchor serves; 0: read the clock */
	uint64_t mult;     /* ns per tick << 32; 0: not fitted yet */
	uint32_t seq;      /* bumped by every anchor (a signal handler's too) */
	int busy;          /* inside sc_now_anchor */
	int loose;         /* clock readings in a row not tight between their TSC readings */
	uint64_t cal_tsc;  /* start of the fitting window */
	int64_t cal_ns;
};
/* sc_tsc_ok (on the hot page): the TSC clock is on (x86-64 with an invariant TSC, the clock
 * is libc's own clock_gettime — not libfaketime's —, SOCKCAP_CLOCK not
 * "vdso"); set once at start by sc_clock_setup. */
SC_HIDDEN void sc_clock_setup(int clock_is_libc);
SC_HIDDEN SC_COLD int64_t sc_now_anchor(void);
static inline int64_t sc_now_vdso(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
/* sc_commit appends one record (kind, then dt, then body) to the calling
 * thread's chunk. Async-signal-safe; never fails visibly (losses are counted). */
SC_HIDDEN int sc_commit(uint8_t kind, int64_t t, const uint8_t *body, size_t len);
SC_HIDDEN void sc_log_open(void);       /* create this process's log (idempotent) */
SC_HIDDEN void sc_after_fork_child(void);
SC_HIDDEN void sc_before_setuid(uid_t uid); /* reserve chunks before privileges go */
SC_HIDDEN SC_COLD void sc_make_room(int64_t t, uint32_t need); /* start a new chunk if fewer bytes are free */

/* Per-thread state; what a call's fast path reads first (two cache lines). */
struct sc_thread {
	uint8_t *chunk;          /* mapped chunk or NULL */
	uint32_t pos;            /* next free byte in chunk */
	uint32_t gen;            /* sc_gen when this state was set up */
	int64_t last;            /* time of the last record in chunk */
	uint64_t serial;         /* process-unique chunk serial */
	uint64_t lost;           /* events lost since the last committed record */
	int crit, guard;         /* guard >0: inside the library or a resolver; do not record */
	struct sc_clk clk;       /* the TSC clock's anchor */
	int filling;
	uint32_t seq;            /* chunks this thread took in this file */
	int32_t tid;
	uint64_t place;          /* the index of the file's chunk that chunk maps (the staging place) */
	uint64_t lost_nohdr;     /* of those, not yet counted in the header */
	int64_t retry_at;        /* no chunk allocation before this time (after failure) */
	uint8_t *pending_unmap;
} __attribute__((aligned(64)));
SC_HIDDEN extern SC_TLS struct sc_thread sc_t;
SC_HIDDEN void sc_hot_init(void);

/* sc_self is &sc_t for the calling thread, from the thread pointer and the
 * offset on the hot page: the initial-exec access would load the offset
 * from the GOT, a page of its own. */
static inline struct sc_thread *sc_self(void)
{
#if defined(__x86_64__)
	intptr_t off = sc_hot.tls_off;
	if (SC_LIKELY(off != 0))
		return (struct sc_thread *)((char *)__builtin_thread_pointer() + off);
#endif
	return &sc_t;
}

/* sc_now_of reads the record clock (T is sc_self(): the wrappers look it up
 * once): CLOCK_REALTIME as the process sees it —
 * through the vDSO, or (sc_tsc_ok) extrapolated from the TSC within 1 ms of
 * a vDSO reading (see struct sc_clk). With libfaketime preloaded too the
 * TSC clock is off and libfaketime's clock_gettime shifts every timestamp. */
static inline int64_t sc_now_of(struct sc_thread *T)
{
#ifdef SC_ABLATE_NOCLOCK
	return T->last + 1;
#endif
#if defined(__x86_64__)
	if (SC_LIKELY(sc_tsc_ok)) {
		struct sc_clk *K = &T->clk;
		uint32_t s = K->seq;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		uint64_t d = SC_TSC_SCALE(__builtin_ia32_rdtsc() - K->anc_tsc);
		if (SC_LIKELY(d < K->span)) {
			int64_t t = K->anc_ns + (int64_t)((d * K->mult) >> 32);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			if (SC_LIKELY(K->seq == s)) /* no anchor in between (a signal handler's) */
				return t;
		}
		return sc_now_anchor();
	}
#endif
	return sc_now_vdso();
}

static inline int64_t sc_now(void) { return sc_now_of(sc_self()); }

/* the calling thread's current chunk serial (0: none) */
static inline uint64_t sc_chunk_serial(void)
{
	return sc_t.gen == sc_gen ? sc_t.serial : 0;
}

/* the calling thread's chunk has need bytes free */
static inline int sc_room(uint32_t need)
{
	return sc_t.gen == sc_gen && sc_t.chunk && sc_t.pos + need <= SC_CHUNK_SIZE;
}

/* sc_raw_uv writes an unsigned varint at q (no bounds check: the caller has
 * room). The one-, two- and three-byte forms — an fd, a length, the ns since
 * the previous record of a busy thread — are written without the loop; every
 * store lands inside the varint (the byte after a record must stay zero). */
static inline __attribute__((always_inline)) uint8_t *sc_raw_uv(uint8_t *q, uint64_t u)
{
	/* one and two bytes are both common (a 64-byte transfer is 2 bytes, and
	 * so is dt up to 8 us): both inline, side by side */
	if (SC_LIKELY(u < 0x4000)) {
		if (u < 0x80) {
			q[0] = (uint8_t)u;
			return q + 1;
		}
		/* low 7 bits | 0x80, then bits 7..13 one byte up: u + (u & ~0x7f) */
		uint16_t w = (uint16_t)((u + (u & ~(uint64_t)0x7f)) | 0x80);
		memcpy(q, &w, 2);
		return q + 2;
	}
	if (u < 0x200000) {
		uint16_t w = (uint16_t)(((u & 0x3fff) + (u & 0x3f80)) | 0x8080);
		memcpy(q, &w, 2);
		q[2] = (uint8_t)(u >> 14);
		return q + 3;
	}
	while (u >= 0x80) {
		*q++ = (uint8_t)(u | 0x80);
		u >>= 7;
	}
	*q++ = (uint8_t)u;
	return q;
}

/* sc_raw_zz writes a zigzag varint at q (no bounds check: the caller has room). */
static inline __attribute__((always_inline)) uint8_t *sc_raw_zz(uint8_t *q, int64_t v)
{
	return sc_raw_uv(q, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* sc_raw_nn writes the zigzag varint of v >= 0 (an fd, a byte count) at q. */
static inline __attribute__((always_inline)) uint8_t *sc_raw_nn(uint8_t *q, int64_t v)
{
	return sc_raw_uv(q, (uint64_t)v << 1);
}

/* sc_fd_get returns the state of fd, classifying it on first use (fstat).
 * For fds >= SC_FDMAX it fills *tmp and returns tmp. */
SC_HIDDEN SC_COLD struct sc_fd *sc_fd_get(int fd, struct sc_fd *tmp);
SC_HIDDEN void sc_fd_forget(int fd);
/* sc_fd_slot is where fd's state lives: the direct table below SC_FDMAX, a
 * block of the overflow table above (mapped when create is set and it is
 * missing), or NULL (fd < 0, or no block). */
SC_HIDDEN SC_COLD struct sc_fd *sc_fd_hi(int fd, int create);
static inline struct sc_fd *sc_fd_slot(int fd, int create)
{
	if (SC_LIKELY((unsigned)fd < SC_FDMAX))
		return &sc_fds[fd];
	return fd < 0 ? NULL : sc_fd_hi(fd, create);
}
/* sc_fd_set_socket marks fd as a socket created or accepted by the program. */
SC_HIDDEN struct sc_fd *sc_fd_set_socket(int fd, int domain, int type);
/* sc_fd_describe writes an SC_K_FD record for fd into the caller's chunk.
 * A hint is the peer (connect's target, accept's result): getpeername is skipped. */
SC_HIDDEN SC_COLD void sc_fd_describe(int fd, struct sc_fd *f, int64_t t, const struct sockaddr *remote_hint, socklen_t hint_len);
/* sc_fd_ensure writes the SC_K_FD record if this chunk does not have it yet. */
SC_HIDDEN SC_COLD void sc_fd_ensure(int fd, struct sc_fd *f, int64_t t);

/* The fast path for transfers: sc_fast_begin reserves the rest of the
 * calling thread's chunk (T is sc_self()) for one record when nothing special is pending
 * (chunk with room, fd described in it, no losses to report) and writes dt;
 * the caller writes the body at the returned cursor and sc_fast_end commits
 * it by storing the kind byte. It returns NULL to send the caller down the
 * general path. The whole write happens inside the thread's critical flag,
 * so a signal handler's record cannot interleave (it is counted as lost). */
#ifdef SC_ABLATE_STATICBUF
SC_HIDDEN extern uint8_t sc_abl_buf[SC_CHUNK_SIZE];
#define SC_FAST_BASE(T) sc_abl_buf
#else
#define SC_FAST_BASE(T) ((T)->chunk)
#endif
static inline uint8_t *sc_fast_begin(struct sc_thread *T, int64_t t, const struct sc_fd *f)
{
	if (SC_UNLIKELY(T->gen != sc_gen || !T->chunk || T->lost || T->crit ||
			T->pos + 2 * SC_RECORD_MAX > SC_CHUNK_SIZE || f->emitted != SC_SER32(T->serial) ||
			(f->flags & (SC_FDF_CONNECTING | SC_FDF_UNNAMED))))
		return NULL;
	T->crit = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return sc_raw_zz(SC_FAST_BASE(T) + T->pos + 1, t - T->last);
}

static inline void sc_fast_end(struct sc_thread *T, uint8_t kind, int64_t t, uint8_t *end)
{
	uint8_t *p = SC_FAST_BASE(T) + T->pos;
	T->pos = (uint32_t)(end - SC_FAST_BASE(T));
	T->last = t;
	__atomic_store_n(p, kind, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	T->crit = 0;
}

/* ---- intercept.c ---- */
SC_HIDDEN void sc_resolve_real(void);

#endif
