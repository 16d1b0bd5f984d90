/* segment.c — the per-process log file: header, per-thread chunks, commit.
 *
 * The file is created 0600 (O_EXCL|O_NOFOLLOW|O_CLOEXEC), its header page is
 * fallocate'd and mapped MAP_SHARED, and the fd is closed at once: the library
 * holds no fd. A thread that needs room takes the next chunk index from the
 * header's atomic counter, fallocates and maps that chunk alone (open,
 * fallocate, mmap, close) and appends records to it without locks. A record is
 * committed by storing its kind byte last, so what a SIGKILL leaves behind is
 * a prefix of committed records in each chunk. Mappings carry MADV_DONTFORK:
 * a forked child starts its own log.
 *
 * The mapping is kept: when the chunk is full the thread copies it to its
 * own index with pwrite and starts the next chunk in the same pages (a
 * staged chunk: its header names the index it belongs at, FORMAT.md). A
 * fresh page costs a fault and, on a guest with shadow paging, a hypervisor
 * entry per page (~10 us here), a munmap ~100-400 us; a 64 KiB pwrite costs
 * ~15 us (bench/results-cap2.md). A thread that exits copies its chunk out
 * the same way and parks the cleared mapping for the next new thread, which
 * starts its first chunk there instead of mapping a fresh one. */
#include "sockcap.h"

#include <errno.h>
#include <stdlib.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { LOG_NONE = 0, LOG_OPENING, LOG_READY, LOG_FAILED };

static struct {
	int state;
	struct sc_file_header *hdr;
	char path[1024];
	int64_t retry_at;
	int reported;
} L;

SC_TLS struct sc_thread sc_t;
#ifdef SC_ABLATE_STATICBUF
uint8_t sc_abl_buf[SC_CHUNK_SIZE];
#endif
static uint64_t serial_counter;

/* Chunks mapped in advance when a root process drops its privileges: it may
 * not be able to reopen its own log afterwards. */
#define SC_POOL_CHUNKS 32
static struct {
	uint8_t *base;
	uint64_t first;
	uint32_t n, next;
} pool;
/* Mappings of exited threads, parked for new threads (a fresh mapping costs
 * ~550 us here: its pages' faults and the munmap at exit). A parked mapping
 * was copied out and cleared (magic 0, records zeroed); while parked its
 * header's index field holds its place. Not inherited by a forked child
 * (MADV_DONTFORK). */
#define SC_PARKED 16
static uint8_t *parked[SC_PARKED];
static int park_chunk(void);

static pthread_key_t thread_key;
static int thread_key_ok;
static SC_TLS int thread_key_set;


/* ---- the TSC clock (sockcap.h: struct sc_clk, sc_now) ---- */
static uint64_t clk_mult_shared; /* the last fit of any thread: a new thread starts with it */

#define CLK_SPAN_NS 1000000LL       /* an anchor serves 1 ms */
#define CLK_FIT_NS 10000000LL       /* the first fit of a window after 10 ms */
#define CLK_REFIT_NS 1000000000LL   /* then refitted every second */
#define CLK_MAX_ERR_NS 2000         /* an extrapolation further off than this: fit again */
#define CLK_TIGHT_NS 150            /* two TSC readings around the clock at most this far apart */
#define CLK_TIGHT_TICKS 600         /* the same before a fit: 150 ns at 4 GHz, 300 ns at 2 GHz */
#define CLK_LOOSE_MAX 8             /* readings in a row never tight: this thread stops using the TSC */

void sc_clock_setup(int clock_is_libc)
{
	int ok = 0;
#if defined(__x86_64__)
	unsigned a, b, c, d;
	const char *v = getenv("SOCKCAP_CLOCK");
	/* 1. only libc's own clock (libfaketime interposes clock_gettime: its
	 *    shifted clock is the one to record, so every read goes to it) */
	/* 2. only an invariant TSC (CPUID 0x80000007 EDX bit 8: constant rate in
	 *    every P- and C-state), and not when SOCKCAP_CLOCK=vdso */
	if (clock_is_libc && !(v && strcmp(v, "vdso") == 0) && __get_cpuid(0x80000007, &a, &b, &c, &d) &&
	    (d & (1u << 8)))
		ok = 1;
#else
	(void)clock_is_libc;
#endif
	__atomic_store_n(&sc_tsc_ok, ok, __ATOMIC_RELAXED);
}

/* sc_now_anchor reads CLOCK_REALTIME, makes it the calling thread's anchor
 * and refits ns per tick when its window is long enough. Async-signal-safe:
 * while it runs, span is 0 and busy is set, so a signal handler's sc_now
 * reads the clock without touching the state; an anchor taken by a handler
 * between the loads of sc_now's fast path bumps seq, which sends that
 * sc_now here again. */
int64_t sc_now_anchor(void)
{
#if defined(__x86_64__)
	struct sc_clk *K = &sc_t.clk;
	if (K->busy || K->loose >= CLK_LOOSE_MAX)
		return sc_now_vdso();
	K->busy = 1;
	K->span = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* 1. the clock between two TSC readings: the midpoint is its tick, to
	 *    within half their distance — read again once when they are too far
	 *    apart (the thread was interrupted); a reading not that tight is
	 *    used for this timestamp only (no extrapolation, no fit), and after
	 *    CLK_LOOSE_MAX of them in a row (a slow clock: no vDSO, valgrind)
	 *    the thread reads the clock for every record */
	uint64_t mult = K->mult ? K->mult : __atomic_load_n(&clk_mult_shared, __ATOMIC_RELAXED);
	uint64_t tight = mult ? ((uint64_t)CLK_TIGHT_NS << 32) / mult : CLK_TIGHT_TICKS;
	uint64_t c0, c1;
	int64_t ns;
	int tries = 0;
	do {
		c0 = __builtin_ia32_rdtsc();
		ns = sc_now_vdso();
		c1 = __builtin_ia32_rdtsc();
	} while (c1 - c0 > tight && ++tries < 2);
#ifdef SC_BENCH_ANY_TIGHT
	c1 = c0; /* bench-only: every reading counts as tight (the TSC path under valgrind) */
#endif
	if (c1 - c0 > tight) {
		K->loose++;
		K->seq++;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		K->busy = 0; /* span stays 0: the next read anchors again */
		return ns;
	}
	uint64_t c = c0 + (c1 - c0) / 2;
	K->loose = 0;
	/* 2. a recent anchor's extrapolation far from the clock (the clock was
	 *    set, the TSC jumped, the fit is off): no extrapolation until a new
	 *    fit, and the shared fit is dropped too */
	int bad = 0;
	if (mult && K->anc_ns) {
		uint64_t d = c - K->anc_tsc;
		if (d <= ((uint64_t)4 * CLK_SPAN_NS << 32) / mult) {
			int64_t pred = K->anc_ns + (int64_t)(((unsigned __int128)d * mult) >> 32);
			int64_t err = pred - ns;
			if (err > CLK_MAX_ERR_NS || err < -CLK_MAX_ERR_NS)
				bad = 1;
		}
	}
	if (bad) {
		mult = 0;
		__atomic_store_n(&clk_mult_shared, 0, __ATOMIC_RELAXED);
	}
	/* 3. the fit: ns per tick over this thread's window, once it spans
	 *    10 ms, then every second (a window restarts when the clock went
	 *    back or after a bad extrapolation) */
	uint64_t cal_tsc = K->cal_tsc;
	int64_t cal_ns = K->cal_ns;
	if (bad || !cal_ns || ns < cal_ns || c < cal_tsc) {
		cal_tsc = c;
		cal_ns = ns;
	} else {
		int64_t dn = ns - cal_ns;
		uint64_t dc = c - cal_tsc;
		if (dn >= CLK_FIT_NS && dc > 0 && (!K->mult || dn >= CLK_REFIT_NS)) {
			uint64_t m = (uint64_t)(((unsigned __int128)(uint64_t)dn << 32) / dc);
			/* a plausible rate: 62.5 MHz to 16 GHz */
			if (m >= (1ULL << 32) / 16 && m <= (1ULL << 32) * 16) {
				mult = m;
				__atomic_store_n(&clk_mult_shared, m, __ATOMIC_RELAXED);
			}
			if (dn >= CLK_REFIT_NS) {
				cal_tsc = c;
				cal_ns = ns;
			}
		}
	}
	/* 4. the new anchor; span last, after the fields it guards */
	K->anc_tsc = c;
	K->anc_ns = ns;
	K->mult = mult; /* 0 after a bad extrapolation; else this thread's fit or the shared one */
	K->cal_tsc = cal_tsc;
	K->cal_ns = cal_ns;
	K->seq++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	K->span = mult ? ((uint64_t)CLK_SPAN_NS << 32) / mult : 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	K->busy = 0;
	return ns;
#else
	return sc_now_vdso();
#endif
}

static int64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int sys_close(int fd) { return (int)syscall(SYS_close, fd); }
static ssize_t sys_read(int fd, void *p, size_t n) { return syscall(SYS_read, fd, p, n); }
static ssize_t sys_write(int fd, const void *p, size_t n) { return syscall(SYS_write, fd, p, n); }

/* ---- small string helpers (no stdio) ---- */
static size_t put_str(char *dst, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		dst[at++] = *s++;
	dst[at < cap ? at : cap - 1] = '\0';
	return at;
}

static size_t put_num(char *dst, size_t at, size_t cap, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n > 0 && at + 1 < cap)
		dst[at++] = tmp[--n];
	dst[at < cap ? at : cap - 1] = '\0';
	return at;
}

static void report_once(const char *what, int err)
{
	if (L.reported)
		return;
	L.reported = 1;
	char msg[900];
	size_t n = put_str(msg, 0, sizeof msg, "libsockcap: ");
	n = put_str(msg, n, sizeof msg, what);
	n = put_str(msg, n, sizeof msg, " under ");
	n = put_str(msg, n, sizeof msg, sc_cfg.dir);
	n = put_str(msg, n, sizeof msg, ": errno ");
	n = put_num(msg, n, sizeof msg, (uint64_t)err);
	n = put_str(msg, n, sizeof msg, "; events of pid ");
	n = put_num(msg, n, sizeof msg, (uint64_t)getpid());
	n = put_str(msg, n, sizeof msg, " are not recorded (counted as dropped if logging resumes)\n");
	(void)!sys_write(2, msg, n);
}

/* mkdir -p with mode 0700 for the parts we create. */
static int mkdirs(const char *path)
{
	char p[1024];
	size_t n = put_str(p, 0, sizeof p, path);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] == '/' || p[i] == '\0') {
			char c = p[i];
			p[i] = '\0';
			if (mkdir(p, 0700) != 0 && errno != EEXIST)
				return -1;
			p[i] = c;
		}
	}
	return 0;
}

static int fsize_allows(uint64_t end)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1;
	return end <= rl.rlim_cur;
}

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	while (n < cap) {
		ssize_t r = sys_read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	sys_close(fd);
	return n;
}

static void put_tlv(struct sc_file_header *h, uint8_t tag, const void *p, size_t n)
{
	if (n > SC_STR_MAX_LEN)
		n = SC_STR_MAX_LEN;
	size_t room = SC_HDR_SIZE - SC_HDR_STRINGS_OFF - h->strings_len;
	if (room < 3 + n)
		return;
	uint8_t *d = h->strings + h->strings_len;
	d[0] = tag;
	d[1] = (uint8_t)n;
	d[2] = (uint8_t)(n >> 8);
	memcpy(d + 3, p, n);
	h->strings_len += (uint32_t)(3 + n);
}

static size_t cstrlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

static int create_log(void)
{
	char dir[1024];
	size_t n = put_str(dir, 0, sizeof dir, sc_cfg.dir);
	if (mkdirs(dir) != 0) {
		report_once("cannot create log directory", errno);
		return -1;
	}
	n = put_str(dir, n, sizeof dir, "/");
	n = put_str(dir, n, sizeof dir, sc_cfg.node);
	if (mkdir(dir, 0700) == 0) {
		/* the node directory is as open as SOCKCAP_DIR (0700 unless the user
		 * made it wider, e.g. for daemons that run as another user) */
		struct stat st;
		if (stat(sc_cfg.dir, &st) == 0 && (st.st_mode & 07777) != 0700)
			chmod(dir, st.st_mode & 07777);
	} else if (errno != EEXIST) {
		report_once("cannot create log directory", errno);
		return -1;
	}
	int64_t wall = sc_now(), mono = mono_now();
	pid_t pid = getpid();
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		size_t m = put_str(L.path, 0, sizeof L.path, dir);
		m = put_str(L.path, m, sizeof L.path, "/");
		m = put_num(L.path, m, sizeof L.path, (uint64_t)pid);
		m = put_str(L.path, m, sizeof L.path, "-");
		m = put_num(L.path, m, sizeof L.path, (uint64_t)mono);
		if (attempt) {
			m = put_str(L.path, m, sizeof L.path, "-");
			m = put_num(L.path, m, sizeof L.path, (uint64_t)attempt);
		}
		put_str(L.path, m, sizeof L.path, ".sclog");
		fd = open(L.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		report_once("cannot create log file", errno);
		return -1;
	}
	int err;
	if (!fsize_allows(SC_HDR_SIZE))
		err = EFBIG;
	else
		err = posix_fallocate(fd, 0, SC_HDR_SIZE);
	void *p = MAP_FAILED;
	if (err == 0) {
		p = mmap(NULL, SC_HDR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			err = errno;
	}
	sys_close(fd);
	if (err) {
		unlink(L.path);
		report_once("cannot allocate log file", err);
		return -1;
	}
	madvise(p, SC_HDR_SIZE, MADV_DONTFORK);
	struct sc_file_header *h = p;
	h->version = SC_VERSION;
	h->hdr_size = SC_HDR_SIZE;
	h->chunk_size = SC_CHUNK_SIZE;
	h->clock = SC_CLOCK_REALTIME;
	h->start_wall = wall;
	h->start_clock = wall;
	h->start_mono = mono;
	h->pid = pid;
	h->ppid = getppid();

	static uint8_t buf[SC_STR_MAX_LEN]; /* only under LOG_OPENING: one thread */
	put_tlv(h, SC_STR_HOST, sc_cfg.host, cstrlen(sc_cfg.host));
	put_tlv(h, SC_STR_NODE, sc_cfg.node, cstrlen(sc_cfg.node));
	ssize_t r = readlink("/proc/self/exe", (char *)buf, sizeof buf);
	if (r > 0)
		put_tlv(h, SC_STR_EXE, buf, (size_t)r);
	size_t an = read_file("/proc/self/cmdline", buf, sizeof buf);
	put_tlv(h, SC_STR_ARGV, buf, an);
	size_t bn = read_file("/proc/sys/kernel/random/boot_id", buf, 64);
	while (bn > 0 && (buf[bn - 1] == '\n' || buf[bn - 1] == ' '))
		bn--;
	put_tlv(h, SC_STR_BOOTID, buf, bn);
	put_tlv(h, SC_STR_CLOCKNAME, "CLOCK_REALTIME", 14);
	/* The network namespace: loopback addresses mean something only within
	 * it. stat, not open: no fd kept. */
	struct stat ns;
	if (stat("/proc/self/ns/net", &ns) == 0) {
		uint64_t ino = (uint64_t)ns.st_ino;
		uint8_t le[8];
		for (int i = 0; i < 8; i++)
			le[i] = (uint8_t)(ino >> (8 * i));
		put_tlv(h, SC_STR_NETNS, le, 8);
	}
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, SC_MAGIC, 8);
	L.hdr = h;
	return 0;
}

void sc_log_open(void)
{
	if (!sc_cfg.enabled)
		return;
	int s = __atomic_load_n(&L.state, __ATOMIC_ACQUIRE);
	if (s == LOG_READY || s == LOG_OPENING)
		return;
	if (s == LOG_FAILED && sc_now() < L.retry_at)
		return;
	if (!__atomic_compare_exchange_n(&L.state, &s, LOG_OPENING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	int saved = errno;
	sc_t.guard++;
	int ok = create_log() == 0;
	sc_t.guard--;
	errno = saved;
	if (!ok)
		L.retry_at = sc_now() + 1000000000;
	__atomic_store_n(&L.state, ok ? LOG_READY : LOG_FAILED, __ATOMIC_RELEASE);
}

/* Called in the child right after fork (our wrappers and pthread_atfork). */
void sc_after_fork_child(void)
{
	pool.base = NULL; /* not mapped in the child (MADV_DONTFORK) */
	pool.n = pool.next = 0;
	L.state = LOG_NONE;
	L.hdr = NULL; /* not mapped in the child (MADV_DONTFORK) */
	L.reported = 0;
	for (int i = 0; i < SC_PARKED; i++)
		parked[i] = NULL; /* not mapped in the child (MADV_DONTFORK) */
	sc_gen++;
	if (sc_gen == 0)
		sc_gen = 1;
	sc_t.gen = 0;
	sc_t.chunk = NULL; /* not mapped in the child; the transfer fast paths check only this */
}

static void thread_exit(void *arg)
{
	(void)arg;
	if (sc_t.gen == sc_gen) {
		if (sc_t.chunk && !park_chunk())
			munmap(sc_t.chunk, SC_CHUNK_SIZE);
		if (sc_t.pending_unmap)
			munmap(sc_t.pending_unmap, SC_CHUNK_SIZE);
	}
	sc_t.chunk = NULL;
	sc_t.pending_unmap = NULL;
}

/* sc_hot_init sets up what the hot page holds besides zeros: the
 * generation (never 0: a thread state of 0 is one never set up) and the
 * offset of the thread state from the thread pointer (the same in every
 * thread: static TLS). Idempotent; runs before any other code of ours. */
void sc_hot_init(void)
{
	if (!sc_gen)
		sc_gen = 1;
#if defined(__x86_64__)
	__atomic_store_n(&sc_hot.tls_off, (intptr_t)((char *)&sc_t - (char *)__builtin_thread_pointer()),
			 __ATOMIC_RELEASE);
#endif
}

__attribute__((constructor(101))) static void segment_init(void)
{
	sc_hot_init();
	thread_key_ok = pthread_key_create(&thread_key, thread_exit) == 0;
}

static void reset_thread(void)
{
	struct sc_thread *T = &sc_t;
	int guard = T->guard;
	memset(T, 0, sizeof *T);
	T->guard = guard;
	T->gen = sc_gen;
	T->tid = (int32_t)syscall(SYS_gettid);
	thread_key_set = 0;
}

static void count_lost(void)
{
	struct sc_thread *T = &sc_t;
	__atomic_fetch_add(&T->lost, 1, __ATOMIC_RELAXED);
	if (L.hdr)
		__atomic_fetch_add(&L.hdr->dropped, 1, __ATOMIC_RELAXED);
	else
		T->lost_nohdr++;
}


/* zero_records clears the records of a copied chunk: n bytes at p (16-byte
 * aligned; n rounded up to 16 stays inside the chunk). A store loop rather
 * than memset: glibc's rep stosb would count one instruction per byte under
 * callgrind, where bench/capture-overhead.sh counts the library's. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void zero_records(uint8_t *p, size_t n)
{
	typedef long long v2 __attribute__((vector_size(16)));
	v2 *q = (v2 *)(void *)p, *end = q + (n + 15) / 16;
	const v2 z = {0, 0};
	for (; end - q >= 4; q += 4) {
		q[0] = z;
		q[1] = z;
		q[2] = z;
		q[3] = z;
	}
	for (; q < end; q++)
		*q = z;
}

/* rotate copies the calling thread's full chunk to its index (pwrite: the
 * kernel copies, no page is mapped) and starts the next chunk in the same
 * mapping. Called with crit set and no interrupted writer (filling 0).
 * Returns 0 when it could not copy (the chunk stays as it is). */
static int copy_out(void)
{
	struct sc_thread *T = &sc_t;
	struct sc_file_header *h = L.hdr;
	struct sc_chunk_header *c = (struct sc_chunk_header *)T->chunk;
	/* 1. where the chunk goes: the index its header names, or, for the
	 *    chunk that lives at its own place (the first one mapped there), a
	 *    new index — named in its header first, so that from now on the
	 *    place reads as a staged copy of that index */
	if (c->index == T->place) {
		uint64_t d = __atomic_fetch_add(&h->nchunks, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&c->index, d, __ATOMIC_RELEASE);
	}
	uint64_t off = SC_HDR_SIZE + c->index * (uint64_t)SC_CHUNK_SIZE;
	if (!fsize_allows(off + SC_CHUNK_SIZE))
		return 0;
	/* 2. the copy: body first, header (its magic) last, so that a copy
	 *    with a header is whole; a process killed in between leaves the
	 *    staged chunk, which the reader takes instead */
	int fd = open(L.path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	int ok = pwrite(fd, T->chunk + SC_CHUNK_HDR_SIZE, SC_CHUNK_SIZE - SC_CHUNK_HDR_SIZE,
			(off_t)(off + SC_CHUNK_HDR_SIZE)) == (ssize_t)(SC_CHUNK_SIZE - SC_CHUNK_HDR_SIZE) &&
		 pwrite(fd, T->chunk, SC_CHUNK_HDR_SIZE, (off_t)off) == (ssize_t)SC_CHUNK_HDR_SIZE;
	sys_close(fd);
	return ok;
}

/* rotate copies the chunk out (copy_out) and starts the next one in place. */
static int rotate(int64_t t)
{
	struct sc_thread *T = &sc_t;
	struct sc_file_header *h = L.hdr;
	struct sc_chunk_header *c = (struct sc_chunk_header *)T->chunk;
	if (!copy_out())
		return 0;
	/* 3. the next chunk in the same pages: the old header's magic cleared
	 *    first (a copy exists), the records zeroed (a zero kind byte ends
	 *    a chunk), the new header with its magic last */
	__atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	zero_records(T->chunk + SC_CHUNK_HDR_SIZE, T->pos - SC_CHUNK_HDR_SIZE);
	c->tid = T->tid;
	c->base_time = t;
	c->index = __atomic_fetch_add(&h->nchunks, 1, __ATOMIC_RELAXED);
	c->thread_seq = T->seq++;
	__atomic_store_n(&c->magic, SC_CHUNK_MAGIC, __ATOMIC_RELEASE);
	T->pos = SC_CHUNK_HDR_SIZE;
	T->last = t;
	T->serial = __atomic_add_fetch(&serial_counter, 1, __ATOMIC_RELAXED);
	return 1;
}

/* park_chunk, at thread exit: copy the thread's chunk out, clear it and
 * park the mapping for the next new thread. 0: not parked (the caller
 * unmaps it). */
static int park_chunk(void)
{
	struct sc_thread *T = &sc_t;
	struct sc_chunk_header *c = (struct sc_chunk_header *)T->chunk;
	if (!L.hdr || T->crit || T->filling)
		return 0;
	int saved = errno;
	T->crit = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	int ok = 0;
	/* 1. the records to their index (an empty chunk has none to keep) */
	if (T->pos <= SC_CHUNK_HDR_SIZE || copy_out()) {
		/* 2. cleared as rotate clears it, its place in the index field */
		__atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		zero_records(T->chunk + SC_CHUNK_HDR_SIZE, T->pos - SC_CHUNK_HDR_SIZE);
		c->index = T->place;
		/* 3. into a free slot; none free: unmapped (its records are copied) */
		for (int i = 0; i < SC_PARKED && !ok; i++) {
			uint8_t *none = NULL;
			ok = __atomic_compare_exchange_n(&parked[i], &none, T->chunk, 0, __ATOMIC_RELEASE,
							 __ATOMIC_RELAXED);
		}
	}
	if (ok)
		T->chunk = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	T->crit = 0;
	errno = saved;
	return ok;
}

/* take_parked gives the calling thread a parked mapping, its first chunk
 * staged there under a new index. */
static uint8_t *take_parked(uint64_t *place)
{
	for (int i = 0; i < SC_PARKED; i++) {
		if (!__atomic_load_n(&parked[i], __ATOMIC_RELAXED))
			continue;
		uint8_t *p = __atomic_exchange_n(&parked[i], NULL, __ATOMIC_ACQUIRE);
		if (p) {
			*place = ((struct sc_chunk_header *)p)->index;
			return p;
		}
	}
	return NULL;
}

static int new_chunk(int64_t t)
{
	struct sc_thread *T = &sc_t;
	struct sc_file_header *h = L.hdr;
	if (!h || t < T->retry_at)
		return 0;
	int saved = errno;
	if (T->chunk && T->filling == 0 && rotate(t)) {
		errno = saved;
		return 1;
	}
	uint64_t idx, place;
	void *p = MAP_FAILED;
	uint8_t *pk = T->chunk ? NULL : take_parked(&place);
	if (pk) {
		/* an exited thread's mapping: no fresh pages, no munmap later */
		struct sc_chunk_header *c = (struct sc_chunk_header *)pk;
		c->tid = T->tid;
		c->base_time = t;
		c->index = __atomic_fetch_add(&h->nchunks, 1, __ATOMIC_RELAXED);
		c->thread_seq = T->seq++;
		__atomic_store_n(&c->magic, SC_CHUNK_MAGIC, __ATOMIC_RELEASE);
		T->chunk = pk;
		T->place = place;
		goto started;
	}
	uint32_t k = __atomic_load_n(&pool.next, __ATOMIC_RELAXED);
	while (k < pool.n) {
		/* chunks reserved before the process gave up its privileges */
		if (__atomic_compare_exchange_n(&pool.next, &k, k + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			p = pool.base + (size_t)k * SC_CHUNK_SIZE;
			idx = pool.first + k;
			break;
		}
	}
	if (p == MAP_FAILED) {
		idx = __atomic_fetch_add(&h->nchunks, 1, __ATOMIC_RELAXED);
		uint64_t off = SC_HDR_SIZE + idx * (uint64_t)SC_CHUNK_SIZE;
		if (fsize_allows(off + SC_CHUNK_SIZE)) {
			int fd = open(L.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
			if (fd >= 0) {
				if (posix_fallocate(fd, (off_t)off, SC_CHUNK_SIZE) == 0)
					p = mmap(NULL, SC_CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
				sys_close(fd);
			}
		}
		if (p == MAP_FAILED) {
			T->retry_at = t + 100000000; /* back off 100 ms: no syscalls per event on a full disk */
			errno = saved;
			return 0;
		}
	}
	madvise(p, SC_CHUNK_SIZE, MADV_DONTFORK);
	struct sc_chunk_header *c = p;
	c->tid = T->tid;
	c->base_time = t;
	c->index = idx;
	c->thread_seq = T->seq++;
	__atomic_store_n(&c->magic, SC_CHUNK_MAGIC, __ATOMIC_RELEASE);

	uint8_t *old = T->chunk;
	if (old) {
		if (T->filling == 0)
			munmap(old, SC_CHUNK_SIZE);
		else if (!T->pending_unmap)
			T->pending_unmap = old; /* an interrupted writer still fills it */
	}
	T->chunk = p;
	T->place = idx;
started:
	T->pos = SC_CHUNK_HDR_SIZE;
	T->last = t;
	T->serial = __atomic_add_fetch(&serial_counter, 1, __ATOMIC_RELAXED);
	if (thread_key_ok && !thread_key_set) {
		thread_key_set = 1;
		pthread_setspecific(thread_key, (void *)1);
	}
	errno = saved;
	return 1;
}

static int commit_raw(uint8_t kind, int64_t t, const uint8_t *body, size_t len)
{
	struct sc_thread *T = &sc_t;
	if (T->crit || len > SC_RECORD_MAX)
		return 0; /* a signal handler interrupted our own reservation */
	T->crit = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!T->chunk || T->pos + 11 + len > SC_CHUNK_SIZE) {
		if (!new_chunk(t)) {
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			T->crit = 0;
			return 0;
		}
	}
	uint8_t dtb[10];
	struct sc_buf b = {dtb, 0, sizeof dtb, 0};
	sc_put_zz(&b, t - T->last);
	uint8_t *p = T->chunk + T->pos;
	T->pos += (uint32_t)(1 + b.n + len);
	T->last = t;
	T->filling++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	T->crit = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* records are short: a byte loop beats a call to memcpy */
	uint8_t *q = p + 1;
	for (size_t i = 0; i < b.n; i++)
		*q++ = dtb[i];
	for (size_t i = 0; i < len; i++)
		*q++ = body[i];
	__atomic_store_n(p, kind, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	T->filling--;
	if (T->filling == 0 && T->pending_unmap) {
		uint8_t *old = T->pending_unmap;
		T->pending_unmap = NULL;
		munmap(old, SC_CHUNK_SIZE);
	}
	return 1;
}

int sc_commit(uint8_t kind, int64_t t, const uint8_t *body, size_t len)
{
	struct sc_thread *T = &sc_t;
	if (SC_UNLIKELY(T->gen != sc_gen))
		reset_thread();
	if (SC_UNLIKELY(__atomic_load_n(&L.state, __ATOMIC_ACQUIRE) != LOG_READY)) {
		sc_log_open();
		if (__atomic_load_n(&L.state, __ATOMIC_ACQUIRE) != LOG_READY) {
			count_lost();
			return 0;
		}
	}
	if (SC_UNLIKELY(T->lost_nohdr)) {
		__atomic_fetch_add(&L.hdr->dropped, T->lost_nohdr, __ATOMIC_RELAXED);
		T->lost_nohdr = 0;
	}
	if (SC_UNLIKELY(T->lost) && !T->crit) {
		/* take the count first: a signal handler running in between must not
		 * report the same losses again */
		uint64_t n = __atomic_exchange_n(&T->lost, 0, __ATOMIC_RELAXED);
		uint8_t gb[32];
		struct sc_buf b = {gb, 0, sizeof gb, 0};
		struct sc_event e = {.op = SC_OP_GAP, .fd = -1, .mask = SC_F_BYTES, .bytes = n};
		sc_encode_event(&b, &e);
		if (!commit_raw(SC_K_EVENT, t, gb, b.n))
			__atomic_fetch_add(&T->lost, n, __ATOMIC_RELAXED);
	}
	if (!commit_raw(kind, t, body, len)) {
		count_lost();
		return 0;
	}
	return 1;
}

void sc_make_room(int64_t t, uint32_t need)
{
	struct sc_thread *T = &sc_t;
	if (T->gen != sc_gen)
		reset_thread();
	if (__atomic_load_n(&L.state, __ATOMIC_ACQUIRE) != LOG_READY)
		sc_log_open();
	if (__atomic_load_n(&L.state, __ATOMIC_ACQUIRE) != LOG_READY || T->crit)
		return;
	T->crit = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!T->chunk || T->pos + need > SC_CHUNK_SIZE)
		new_chunk(t);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	T->crit = 0;
}

/* sc_before_setuid runs while the process is still privileged, just before it
 * switches to uid: hand the log file to uid (so it can reopen it when the
 * directories let it) and map a reserve of chunks (for when they do not). */
void sc_before_setuid(uid_t uid)
{
	if (geteuid() != 0 || uid == (uid_t)-1 || uid == 0 || !sc_cfg.enabled)
		return;
	int saved = errno;
	sc_log_open();
	struct sc_file_header *h = L.hdr;
	if (__atomic_load_n(&L.state, __ATOMIC_ACQUIRE) != LOG_READY || !h) {
		errno = saved;
		return;
	}
	if (chown(L.path, uid, (gid_t)-1) != 0) {
		/* keep going: the reserve below still works */
	}
	if (pool.n == 0) {
		uint64_t first = __atomic_fetch_add(&h->nchunks, SC_POOL_CHUNKS, __ATOMIC_RELAXED);
		uint64_t off = SC_HDR_SIZE + first * (uint64_t)SC_CHUNK_SIZE;
		size_t len = (size_t)SC_POOL_CHUNKS * SC_CHUNK_SIZE;
		int fd = fsize_allows(off + len) ? open(L.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) : -1;
		if (fd >= 0) {
			void *p = MAP_FAILED;
			if (posix_fallocate(fd, (off_t)off, (off_t)len) == 0)
				p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
			sys_close(fd);
			if (p != MAP_FAILED) {
				madvise(p, len, MADV_DONTFORK);
				pool.base = p;
				pool.first = first;
				pool.next = 0;
				__atomic_store_n(&pool.n, SC_POOL_CHUNKS, __ATOMIC_RELEASE);
			}
		}
	}
	errno = saved;
}
