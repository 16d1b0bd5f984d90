/* intercept.c — the interposed socket API.
 *
 * Every wrapper: resolve the real function (once, at load; lazily if called
 * before our constructor), call it, and when the fd is a socket and we are not
 * inside the library itself (per-thread guard), append a record. errno is
 * preserved. read/write/readv/writev on non-sockets cost one table lookup. */
#undef _FORTIFY_SOURCE
#include "sockcap.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* Fortified and recent glibc entry points, declared here so the file does not
 * depend on _FORTIFY_SOURCE or header versions. */
extern ssize_t __read_chk(int, void *, size_t, size_t);
extern ssize_t __recv_chk(int, void *, size_t, size_t, int);
extern ssize_t __recvfrom_chk(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
extern int fcntl64(int, int, ...);
extern ssize_t sendfile64(int, int, off64_t *, size_t);
extern char **environ;

static int exit_logged;
/* sc_ready, the real functions and clock_plain (1 when the record clock is
 * libc's own clock_gettime, the vDSO, which leaves errno alone; an
 * interposed one, libfaketime's, may change it) live on the hot page. */
#define sc_ready (sc_hot.ready)
#define clock_plain (sc_hot.clock_plain)

static void check_clock(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *bound = dlsym(RTLD_DEFAULT, "clock_gettime"); /* what our calls reach */
	int plain = libc && bound && dlsym(libc, "clock_gettime") == bound;
	__atomic_store_n(&clock_plain, plain, __ATOMIC_RELAXED);
	if (libc)
		dlclose(libc);
	sc_clock_setup(plain);
}

/* now_keep_errno reads the record clock after a call whose errno the caller
 * still needs: with libc's clock there is nothing to save. */
static inline int64_t now_keep_errno(struct sc_thread *T)
{
	if (SC_LIKELY(clock_plain))
		return sc_now_of(T);
	int e = errno;
	int64_t t = sc_now_of(T);
	errno = e;
	return t;
}

void sc_resolve_real(void)
{
#define R(name, ...) SC_REAL(name) = (__typeof__(SC_REAL(name)))dlsym(RTLD_NEXT, #name);
	SC_REAL_FUNCS(R)
#undef R
}

static void atfork_child(void) { sc_after_fork_child(); }

SC_COLD static void sc_init(void)
{
	sc_hot_init(); /* a constructor of another library may call us before ours ran */
	int expect = 0;
	if (!__atomic_compare_exchange_n(&sc_ready, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (!SC_REAL(read))
			sc_resolve_real(); /* another thread is initialising: resolve for ourselves */
		return;
	}
	sc_t.guard++;
	sc_resolve_real();
	check_clock();
	sc_config_load();
	pthread_atfork(NULL, NULL, atfork_child);
	sc_t.guard--;
	if (sc_cfg.enabled)
		sc_log_open();
	__atomic_store_n(&sc_ready, 2, __ATOMIC_RELEASE);
	if (sc_cfg.enabled) /* the transfer wrappers' fast paths from now on (0 off x86-64) */
		__atomic_store_n(&sc_hot.fast_off, sc_hot.tls_off, __ATOMIC_RELEASE);
}

__attribute__((constructor(102))) static void sc_ctor(void) { sc_init(); }

__attribute__((destructor)) static void sc_dtor(void)
{
	/* returning from main: libc calls exit internally, past our wrapper */
	if (sc_cfg.enabled && !exit_logged && !sc_t.guard) {
		exit_logged = 1;
		uint8_t body[16];
		struct sc_buf b = {body, 0, sizeof body, 0};
		struct sc_event e = {.op = SC_OP_EXIT, .fd = -1};
		sc_encode_event(&b, &e);
		sc_commit(SC_K_EVENT, sc_now(), body, b.n);
	}
}

#define ENSURE()                                          \
	do {                                              \
		if (SC_UNLIKELY(sc_ready != 2))           \
			sc_init();                        \
	} while (0)

static inline int active(void) { return sc_hot.enabled && !sc_self()->guard; }

/* The socket state of fd if it is to be recorded, else NULL (T: sc_self()). */
static inline struct sc_fd *sock_of_t(struct sc_thread *T, int fd, struct sc_fd *tmp)
{
	if (!sc_hot.enabled || T->guard || fd < 0)
		return NULL;
#if defined(SC_ABLATE_STOP) && SC_ABLATE_STOP == 1
	return NULL;
#elif defined(SC_ABLATE_STOP) && SC_ABLATE_STOP == 2
	if ((unsigned)fd < SC_FDMAX) {
		uint8_t k = sc_fds[fd].kind;
		__asm__ volatile("" ::"r"(k));
	}
	return NULL;
#endif
#ifdef SC_ABLATE_NOFD
	static SC_TLS struct sc_fd abl_fd[16];
	static SC_TLS uint16_t abl_have;
	if (fd < 16) {
		if (abl_have & (1u << fd))
			return &abl_fd[fd];
		if (sc_fds[fd].kind == SC_FD_SOCKET) {
			abl_fd[fd] = sc_fds[fd];
			abl_have |= (uint16_t)(1u << fd);
			return &abl_fd[fd];
		}
	}
#endif
	if (SC_LIKELY(fd < SC_FDMAX)) {
		uint8_t k = sc_fds[fd].kind;
		if (SC_LIKELY(k == SC_FD_OTHER))
			return NULL;
		if (k == SC_FD_SOCKET)
			return &sc_fds[fd];
	}
	struct sc_fd *f = sc_fd_get(fd, tmp);
	return f->kind == SC_FD_SOCKET ? f : NULL;
}

static inline struct sc_fd *sock_of(int fd, struct sc_fd *tmp) { return sock_of_t(sc_self(), fd, tmp); }

static inline int is_dgram(const struct sc_fd *f)
{
	return f->sotype == SOCK_DGRAM || f->sotype == SOCK_SEQPACKET;
}

static void event(int64_t t, const struct sc_event *e)
{
	uint8_t body[SC_RECORD_MAX];
	struct sc_buf b = {body, 0, sizeof body, 0};
	sc_encode_event(&b, e);
	if (!b.overflow)
		sc_commit(SC_K_EVENT, t, body, b.n);
}

/* cap: bytes readable at p (a recv with MSG_TRUNC returns more than it stored) */
static uint32_t sum_buf(const void *p, ssize_t n, size_t cap)
{
	size_t k = n < (ssize_t)SC_SUM_PREFIX ? (size_t)n : SC_SUM_PREFIX;
	if (k > cap)
		k = cap;
	return sc_sum_prefix(p, k, (uint64_t)n);
}

static uint32_t sum_iov(const struct iovec *iov, size_t cnt, ssize_t n)
{
	uint32_t h = sc_sum_init();
	size_t want = n < (ssize_t)SC_SUM_PREFIX ? (size_t)n : SC_SUM_PREFIX;
	for (size_t i = 0; i < cnt && want > 0; i++) {
		size_t k = iov[i].iov_len < want ? iov[i].iov_len : want; /* iovs bound what was stored */
		if (iov[i].iov_base)
			h = sc_sum_update(h, iov[i].iov_base, k);
		want -= k;
	}
	return sc_sum_final(h, (uint64_t)n);
}

/* put_inet4 writes a datagram record's IPv4 peer (7 bytes) and remembers it
 * as the fd's last peer in this chunk, so that the next record of the same
 * peer writes SC_AF_SAME. */
static inline __attribute__((always_inline)) uint8_t *put_inet4(uint8_t *q, const struct sc_thread *T, struct sc_fd *f,
								const struct sockaddr *ra, uint64_t key)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)ra;
	*q = SC_AF_INET;
	memcpy(q + 1, &in4->sin_addr, 4);
	memcpy(q + 5, &in4->sin_port, 2); /* network order = big-endian */
	f->dpeer_key = key;
	f->dpeer_serial = SC_SER32(T->serial);
	return q + 7;
}

/* dgram_fast writes the record of one datagram transfer in place — fd, ret,
 * the 4-byte sum, the peer (SC_AF_SAME when it repeats, 7 bytes for IPv4,
 * SC_AF_NONE when the call named none) — in the common case: the call
 * succeeded on a plain buffer, the peer is IPv4 or absent, and the chunk
 * needs nothing else (sc_fast_begin). Inlined into the wrappers, so a
 * datagram costs no call beyond the real function and the clock (one
 * shared out-of-line copy touched 6 more code lines per call, counted with
 * bench/capture-lines.py: its prologue, epilogue and arguments). Returns 0
 * to send the caller down log_io, which handles everything else. */
static inline __attribute__((always_inline)) int dgram_fast(struct sc_thread *T, uint8_t kind, int fd, struct sc_fd *f, int64_t t,
							   ssize_t r, const struct sockaddr *ra, socklen_t rl,
							   const void *buf, size_t cap)
{
	uint64_t key = 0;
	if (SC_UNLIKELY(r < 0 || !buf))
		return 0;
	if (ra) {
		if (SC_UNLIKELY(rl < sizeof(struct sockaddr_in) || ra->sa_family != AF_INET))
			return 0;
		key = sc_in4_key(ra); /* sc_addr_key's exact form for IPv4: one load */
	}
	uint8_t *q = sc_fast_begin(T, t, f);
	if (SC_UNLIKELY(!q))
		return 0;
	uint32_t sum = sum_buf(buf, r, cap);
	q = sc_raw_nn(q, fd);
	q = sc_raw_nn(q, r);
	q[0] = (uint8_t)sum;
	q[1] = (uint8_t)(sum >> 8);
	q[2] = (uint8_t)(sum >> 16);
	q[3] = (uint8_t)(sum >> 24);
	q += 4;
	if (!key) {
		*q++ = SC_AF_NONE;
	} else if (f->dpeer_key == key) {
		/* sc_fast_begin saw f->emitted == this chunk's serial, and writing
		 * the FD record cleared dpeer_key: a key here is of this chunk */
		*q++ = SC_AF_SAME;
	} else {
		q = put_inet4(q, T, f, ra, key);
	}
	sc_fast_end(T, kind, t, q);
	return 1;
}

/* io_fast records a transfer on the fast path when it can (the stream
 * record of log_io's fast path, or dgram_fast); 0: call log_io. */
static inline __attribute__((always_inline)) int io_fast_dg(struct sc_thread *T, int op, int fd, struct sc_fd *f, int64_t t,
							   ssize_t r, const struct sockaddr *ra, socklen_t rl,
							   const void *buf, size_t cap, int dgram_first)
{
#ifdef SC_ABLATE_NORECORD
	__asm__ volatile("" ::"r"(t), "r"(f), "r"(r));
	(void)op, (void)fd, (void)ra, (void)rl, (void)buf, (void)cap, (void)dgram_first;
	return 1;
#endif
	/* sendto mostly sends datagrams: its datagram record first, so that
	 * its fast path is the function's first lines (the page recv's is on) */
	if (dgram_first && SC_LIKELY(is_dgram(f)))
		return dgram_fast(T, op == SC_OP_SEND ? SC_K_DSEND : SC_K_DRECV, fd, f, t, r, ra, rl, buf, cap);
	if (SC_LIKELY(f->sotype == SOCK_STREAM)) {
		if (SC_UNLIKELY(ra || r < 0))
			return 0;
		uint8_t *q = sc_fast_begin(T, t, f);
		if (SC_UNLIKELY(!q))
			return 0;
		q = sc_raw_nn(q, fd);
		q = sc_raw_nn(q, r);
		sc_fast_end(T, op == SC_OP_SEND ? SC_K_SEND : SC_K_RECV, t, q);
		return 1;
	}
	if (is_dgram(f))
		return dgram_fast(T, op == SC_OP_SEND ? SC_K_DSEND : SC_K_DRECV, fd, f, t, r, ra, rl, buf, cap);
	return 0;
}

#define io_fast(T, op, fd, f, t, r, ra, rl, buf, cap) io_fast_dg(T, op, fd, f, t, r, ra, rl, buf, cap, 0)

/* log_io records one send or recv. For datagram sockets it adds the payload
 * checksum and the address the call named. */
SC_COLD static void log_io(int op, int fd, struct sc_fd *f, int64_t t, ssize_t r, int err, const struct sockaddr *ra,
		   socklen_t rl, const void *buf, size_t cap, const struct iovec *iov, size_t iovcnt)
{
	struct sc_thread *T = sc_self();
	if (SC_LIKELY(!ra && f->sotype == SOCK_STREAM && r >= 0)) {
		uint8_t *q = sc_fast_begin(T, t, f);
		if (SC_LIKELY(q != NULL)) {
			q = sc_raw_nn(q, fd);
			q = sc_raw_nn(q, r);
			sc_fast_end(T, op == SC_OP_SEND ? SC_K_SEND : SC_K_RECV, t, q);
			return;
		}
	} else if (is_dgram(f) && (buf || iov || r < 0)) {
		/* the key of an IPv4 peer is the sockaddr's first 8 bytes
		 * (sc_addr_key's exact form), computed here without a call */
		const struct sockaddr_in *in4 = ra && rl >= sizeof(struct sockaddr_in) && ra->sa_family == AF_INET
							? (const struct sockaddr_in *)ra
							: NULL;
		uint64_t key = 0;
		if (in4) {
			key = sc_in4_key(ra);
		} else if (ra && rl > 0) {
			key = sc_addr_key(ra, rl);
		}
		uint8_t *q = sc_fast_begin(T, t, f);
		if (SC_LIKELY(q != NULL)) {
			int same = key && f->dpeer_key == key && f->dpeer_serial == SC_SER32(T->serial);
			if (SC_LIKELY(r >= 0 && (same || in4 || !key))) {
				/* the record written in place: fd, ret, sum (4 bytes LE), peer */
				uint32_t sum = buf ? sum_buf(buf, r, cap) : sum_iov(iov, iovcnt, r);
				q = sc_raw_nn(q, fd);
				q = sc_raw_nn(q, r);
				q[0] = (uint8_t)sum;
				q[1] = (uint8_t)(sum >> 8);
				q[2] = (uint8_t)(sum >> 16);
				q[3] = (uint8_t)(sum >> 24);
				q += 4;
				if (same) {
					*q++ = SC_AF_SAME;
				} else if (in4) {
					*q = SC_AF_INET;
					memcpy(q + 1, &in4->sin_addr, 4);
					memcpy(q + 5, &in4->sin_port, 2); /* network order = big-endian */
					q += 7;
				} else {
					*q++ = SC_AF_NONE;
				}
				sc_fast_end(T, op == SC_OP_SEND ? SC_K_DSEND : SC_K_DRECV, t, q);
			} else {
				uint32_t sum = r >= 0 ? (buf ? sum_buf(buf, r, cap) : sum_iov(iov, iovcnt, r)) : 0;
				/* the chunk has room for the largest record: encode in place */
				struct sc_buf b = {q, 0, 48 + SC_UNIX_PATH_MAX, 0};
				sc_encode_dgram(&b, fd, r, err, sum, key ? ra : NULL, rl, same);
				sc_fast_end(T, op == SC_OP_SEND ? SC_K_DSEND : SC_K_DRECV, t, q + b.n);
			}
			if (key) {
				f->dpeer_key = key;
				f->dpeer_serial = SC_SER32(T->serial);
			}
			return;
		}
	}
	if (SC_UNLIKELY(f->flags & SC_FDF_UNNAMED) && r >= 0)
		sc_fd_describe(fd, f, t, NULL, 0); /* the kernel bound a port at the first send */
	else
		sc_fd_ensure(fd, f, t);
	int dg = is_dgram(f);
	if (SC_LIKELY(!dg && !ra)) {
		uint8_t body[32];
		struct sc_buf b = {body, 0, sizeof body, 0};
		sc_put_zz(&b, fd);
		sc_put_zz(&b, r);
		if (r < 0)
			sc_put_uv(&b, (uint64_t)(uint32_t)err);
		sc_commit(op == SC_OP_SEND ? SC_K_SEND : SC_K_RECV, t, body, b.n);
		return;
	}
	if (dg && (buf || iov || r < 0)) {
		/* a datagram: checksum, and the peer unless it is the previous one */
		uint32_t sum = r >= 0 ? (buf ? sum_buf(buf, r, cap) : sum_iov(iov, iovcnt, r)) : 0;
		uint64_t key = 0, serial = sc_chunk_serial();
		int same = 0;
		if (ra && rl > 0) {
			key = sc_addr_key(ra, rl);
			same = key && f->dpeer_key == key && f->dpeer_serial == SC_SER32(serial) && serial;
		}
		uint8_t body[48 + SC_UNIX_PATH_MAX];
		struct sc_buf b = {body, 0, sizeof body, 0};
		sc_encode_dgram(&b, fd, r, err, sum, ra && rl > 0 ? ra : NULL, rl, same);
		if (!b.overflow && sc_commit(op == SC_OP_SEND ? SC_K_DSEND : SC_K_DRECV, t, body, b.n) && key) {
			f->dpeer_key = key;
			f->dpeer_serial = SC_SER32(sc_chunk_serial());
		}
		return;
	}
	struct sc_event e = {.op = (uint8_t)op, .fd = fd, .mask = SC_F_RET, .ret = r};
	if (r < 0) {
		e.mask |= SC_F_ERRNO;
		e.err = err;
	}
	if (dg && r >= 0 && (buf || iov)) {
		e.mask |= SC_F_SUM;
		e.sum = buf ? sum_buf(buf, r, cap) : sum_iov(iov, iovcnt, r);
	}
	if (ra && rl > 0) {
		e.mask |= SC_F_REMOTE;
		e.remote = ra;
		e.remote_len = rl;
	}
	event(t, &e);
}

static void simple_event(int op, int fd, int64_t t, int64_t ret, int err, uint32_t extra_mask, int64_t arg)
{
	struct sc_event e = {.op = (uint8_t)op, .fd = fd, .mask = SC_F_RET | extra_mask, .ret = ret, .arg = arg};
	if (ret < 0) {
		e.mask |= SC_F_ERRNO;
		e.err = err;
	}
	event(t, &e);
}

/* ---------------- socket lifecycle ---------------- */

SC_EXPORT int socket(int domain, int type, int protocol)
{
	ENSURE();
	int r = SC_REAL(socket)(domain, type, protocol);
	if (!sc_cfg.enabled)
		return r;
	int e = errno;
	if (r >= 0) {
		struct sc_fd *f = sc_fd_set_socket(r, domain, type);
		if (active()) {
			int64_t t = sc_now();
			sc_fd_describe(r, f, t, NULL, 0);
			simple_event(SC_OP_SOCKET, r, t, r, e, SC_F_ARG, type);
		}
	} else if (active())
		simple_event(SC_OP_SOCKET, -1, sc_now(), r, e, SC_F_ARG, type);
	errno = e;
	return r;
}

SC_EXPORT int socketpair(int domain, int type, int protocol, int sv[2])
{
	ENSURE();
	int r = SC_REAL(socketpair)(domain, type, protocol, sv);
	if (!sc_cfg.enabled)
		return r;
	int e = errno;
	if (r == 0) {
		struct sc_fd *a = sc_fd_set_socket(sv[0], domain, type);
		uint64_t ia = 0, ib = 0;
		struct stat st;
		if (fstat(sv[0], &st) == 0)
			ia = st.st_ino;
		if (fstat(sv[1], &st) == 0)
			ib = st.st_ino;
		a->peer_ino = ib;
		a->flags |= SC_FDF_CONNECTED;
		struct sc_fd *b = sc_fd_set_socket(sv[1], domain, type);
		b->peer_ino = ia;
		b->flags |= SC_FDF_CONNECTED;
		if (active()) {
			int64_t t = sc_now();
			sc_fd_describe(sv[0], a, t, NULL, 0);
			sc_fd_describe(sv[1], b, t, NULL, 0);
			struct sc_event ev = {.op = SC_OP_SOCKETPAIR, .fd = sv[0], .fd2 = sv[1], .ret = 0,
					      .mask = SC_F_RET | SC_F_FD2 | SC_F_ARG, .arg = type};
			event(t, &ev);
		}
	} else if (active())
		simple_event(SC_OP_SOCKETPAIR, -1, sc_now(), r, e, SC_F_ARG, type);
	errno = e;
	errno = e;
	return r;
}

SC_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	ENSURE();
	int r = SC_REAL(bind)(fd, addr, len);
	struct sc_fd tmp, *f = sock_of(fd, &tmp);
	if (!f)
		return r;
	int e = errno;
	int64_t t = sc_now();
	if (r == 0)
		sc_fd_describe(fd, f, t, NULL, 0);
	struct sc_event ev = {.op = SC_OP_BIND, .fd = fd, .mask = SC_F_RET | SC_F_LOCAL, .ret = r,
			      .local = addr, .local_len = len};
	if (r < 0) {
		ev.mask |= SC_F_ERRNO;
		ev.err = e;
	}
	event(t, &ev);
	errno = e;
	return r;
}

SC_EXPORT int listen(int fd, int backlog)
{
	ENSURE();
	int r = SC_REAL(listen)(fd, backlog);
	struct sc_fd tmp, *f = sock_of(fd, &tmp);
	if (!f)
		return r;
	int e = errno;
	int64_t t = sc_now();
	if (r == 0)
		sc_fd_describe(fd, f, t, NULL, 0); /* the port listen chose when there was no bind */
	simple_event(SC_OP_LISTEN, fd, t, r, e, SC_F_ARG, backlog);
	errno = e;
	return r;
}

SC_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	ENSURE();
	struct sc_fd tmp, *f = sock_of(fd, &tmp);
	if (!f)
		return SC_REAL(connect)(fd, addr, len);
	int64_t t = sc_now();
	int r = SC_REAL(connect)(fd, addr, len);
	int e = errno;
	int64_t t2 = sc_now();
	if (r == 0 || e == EINPROGRESS || e == EALREADY) {
		f->flags &= (uint8_t)~SC_FDF_CONNECTING;
		if (r == 0 && addr && len >= sizeof(sa_family_t) && addr->sa_family == AF_UNSPEC)
			f->flags &= (uint8_t)~SC_FDF_CONNECTED; /* a datagram socket dissolving its association */
		else if (r == 0)
			f->flags |= SC_FDF_CONNECTED;
		sc_fd_describe(fd, f, t, addr, len); /* the local name connect chose */
		if (r != 0)
			f->flags |= SC_FDF_CONNECTING; /* peer confirmed at first I/O */
	}
	struct sc_event ev = {.op = SC_OP_CONNECT, .fd = fd, .mask = SC_F_RET | SC_F_REMOTE | SC_F_DUR, .ret = r,
			      .remote = addr, .remote_len = len, .dur = (uint64_t)(t2 - t)};
	if (r < 0) {
		ev.mask |= SC_F_ERRNO;
		ev.err = e;
	}
	event(t, &ev);
	errno = e;
	return r;
}

static int after_accept(int lfd, int r, int e, int flags, const struct sockaddr *addr, const socklen_t *len,
			socklen_t cap)
{
	/* the peer accept wrote, when it fit in the caller's buffer */
	socklen_t hint_len = r >= 0 && addr && len && *len > 0 && *len <= cap ? *len : 0;
	if (!sc_cfg.enabled)
		return r;
	struct sc_fd ltmp, *lf = NULL;
	if (lfd >= 0)
		lf = sc_fd_get(lfd, &ltmp);
	if (r >= 0) {
		struct sc_fd *f = sc_fd_set_socket(r, lf ? lf->family : 0, (lf ? lf->sotype : SOCK_STREAM) | flags);
		f->flags |= SC_FDF_CONNECTED;
		if (active()) {
			int64_t t = sc_now();
			/* the peer even when accept did not ask */
			sc_fd_describe(r, f, t, hint_len ? addr : NULL, hint_len);
			struct sc_event ev = {.op = SC_OP_ACCEPT, .fd = r, .fd2 = lfd, .ret = r,
					      .mask = SC_F_RET | SC_F_FD2};
			event(t, &ev);
		}
	} else if (active() && lf && lf->kind == SC_FD_SOCKET) {
		struct sc_event ev = {.op = SC_OP_ACCEPT, .fd = -1, .fd2 = lfd, .ret = r, .err = e,
				      .mask = SC_F_RET | SC_F_FD2 | SC_F_ERRNO};
		event(sc_now(), &ev);
	}
	return r;
}

SC_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	ENSURE();
	socklen_t cap = len ? *len : 0;
	int r = SC_REAL(accept)(fd, addr, len);
	int e = errno;
	after_accept(fd, r, e, 0, addr, len, cap);
	errno = e;
	return r;
}

SC_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	ENSURE();
	socklen_t cap = len ? *len : 0;
	int r = SC_REAL(accept4)(fd, addr, len, flags);
	int e = errno;
	after_accept(fd, r, e, 0, addr, len, cap);
	errno = e;
	return r;
}

SC_EXPORT int shutdown(int fd, int how)
{
	ENSURE();
	struct sc_fd tmp, *f = sock_of(fd, &tmp);
	int r = SC_REAL(shutdown)(fd, how);
	if (!f)
		return r;
	int e = errno;
	int64_t t = sc_now();
	sc_fd_ensure(fd, f, t);
	simple_event(SC_OP_SHUTDOWN, fd, t, r, e, SC_F_ARG, how);
	errno = e;
	return r;
}

/* ---------------- close and dup ---------------- */

__attribute__((noinline)) static int close_slow(int fd)
{
	ENSURE();
	struct sc_fd *f = sc_fd_slot(fd, 0);
	if (!f)
		return SC_REAL(close)(fd);
	uint8_t kind = f->kind;
	if (kind != SC_FD_SOCKET) {
		if (kind != SC_FD_UNKNOWN)
			f->kind = SC_FD_UNKNOWN;
		return SC_REAL(close)(fd);
	}
	if (!active()) {
		sc_fd_forget(fd);
		return SC_REAL(close)(fd);
	}
	int64_t t = sc_now();
	sc_fd_ensure(fd, f, t); /* the close record carries the endpoints */
	sc_fd_forget(fd);
	int r = SC_REAL(close)(fd);
	int e = errno;
	simple_event(SC_OP_CLOSE, fd, t, r, e, 0, 0);
	errno = e;
	return r;
}

/* close of a file or pipe (a server closes its per-request file) is a
 * check and a tail call, like write's: the other fields of an UNKNOWN or
 * OTHER entry are zero, so forgetting it is at most the store of its kind. */
SC_EXPORT SC_HOT int close(int fd)
{
	if (SC_LIKELY(sc_ready == 2) && (unsigned)fd < SC_FDMAX) {
		uint8_t kind = sc_fds[fd].kind;
		if (SC_LIKELY(kind != SC_FD_SOCKET)) {
			if (kind != SC_FD_UNKNOWN)
				sc_fds[fd].kind = SC_FD_UNKNOWN;
			return SC_REAL(close)(fd);
		}
	}
	return close_slow(fd);
}

static void closed_range(unsigned first, unsigned last, int64_t t)
{
	if (last > INT_MAX)
		last = INT_MAX;
	for (unsigned fd = first; fd <= last; fd++) {
		struct sc_fd *f = sc_fd_slot((int)fd, 0);
		if (!f) { /* no overflow block here: skip to the next one */
			if (fd < SC_FDMAX || (fd - SC_FDMAX) / SC_FDHI_BLOCK >= SC_FDHI_NBLOCKS - 1)
				break;
			fd = SC_FDMAX + ((fd - SC_FDMAX) / SC_FDHI_BLOCK + 1) * SC_FDHI_BLOCK - 1;
			continue;
		}
		if (f->kind == SC_FD_SOCKET && active())
			simple_event(SC_OP_CLOSE, (int)fd, t, 0, 0, 0, 0);
		sc_fd_forget((int)fd);
	}
}

SC_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	ENSURE();
	if (!SC_REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	int r = SC_REAL(close_range)(first, last, flags);
	int e = errno;
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
		closed_range(first, last, sc_now());
	errno = e;
	return r;
}

SC_EXPORT void closefrom(int low)
{
	ENSURE();
	int e = errno;
	int64_t t = sc_now();
	if (SC_REAL(closefrom))
		SC_REAL(closefrom)(low);
	closed_range(low < 0 ? 0 : (unsigned)low, ~0u, t);
	errno = e;
}

/* newfd now refers to what oldfd refers to. */
static void duped(int oldfd, int newfd, int implicit_close)
{
	if (!sc_cfg.enabled || newfd < 0)
		return;
	int64_t t = sc_now();
	struct sc_fd *nf = sc_fd_slot(newfd, 1);
	if (implicit_close && newfd != oldfd && nf && nf->kind == SC_FD_SOCKET && active())
		simple_event(SC_OP_CLOSE, newfd, t, 0, 0, SC_F_ARG, 2); /* arg 2: closed by dup2 */
	struct sc_fd tmp, *o = sc_fd_get(oldfd, &tmp);
	if (nf && newfd != oldfd) {
		*nf = *o;
		nf->emitted = 0;
	}
	if (o->kind == SC_FD_SOCKET && active()) {
		struct sc_event ev = {.op = SC_OP_DUP, .fd = oldfd, .fd2 = newfd, .ret = newfd,
				      .mask = SC_F_RET | SC_F_FD2};
		sc_fd_ensure(oldfd, o, t);
		event(t, &ev);
	}
}

SC_EXPORT int dup(int fd)
{
	ENSURE();
	int r = SC_REAL(dup)(fd);
	int e = errno;
	duped(fd, r, 0);
	errno = e;
	return r;
}

SC_EXPORT int dup2(int fd, int fd2)
{
	ENSURE();
	int r = SC_REAL(dup2)(fd, fd2);
	int e = errno;
	if (r >= 0)
		duped(fd, r, 1);
	errno = e;
	return r;
}

SC_EXPORT int dup3(int fd, int fd2, int flags)
{
	ENSURE();
	int r = SC_REAL(dup3)(fd, fd2, flags);
	int e = errno;
	if (r >= 0)
		duped(fd, r, 1);
	errno = e;
	return r;
}

static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	int r = real(fd, cmd, arg);
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0) {
		int e = errno;
		duped(fd, r, 0);
		errno = e;
	}
	return r;
}

SC_EXPORT int fcntl(int fd, int cmd, ...)
{
	ENSURE();
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(SC_REAL(fcntl), fd, cmd, arg);
}

SC_EXPORT int fcntl64(int fd, int cmd, ...)
{
	ENSURE();
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(SC_REAL(fcntl64) ? SC_REAL(fcntl64) : SC_REAL(fcntl), fd, cmd, arg);
}

/* ---------------- data transfer ---------------- */

/* The fast paths of send, recv, sendto and recvfrom: with PTI and no PCID
 * every system call empties the TLB and most of L1, so what a call costs
 * beyond the kernel is mostly the code and data lines it touches after one
 * (bench/results-cap3.md, results-cap4.md). Their common case — the library
 * set up and enabled, an fd known to be a stream or datagram socket that
 * needs no FD record in this chunk, a record that fits — runs straight
 * through: one hot-page load for the thread state, one for the fd's kind,
 * flags and type, and the record written with one store per field. Anything
 * else tail-calls the general wrapper before the system call, or hands the
 * result to log_io (transfer_logged) after it, both out of line. */

/* fast_thread is the calling thread's state when the library is set up and
 * enabled, else NULL (then take the general path). */
static inline struct sc_thread *fast_thread(void)
{
#if defined(__x86_64__)
	intptr_t off = sc_hot.fast_off;
	if (SC_LIKELY(off != 0))
		return (struct sc_thread *)((char *)__builtin_thread_pointer() + off);
#endif
	return NULL;
}

/* fd_word: an fd's kind, flags and socket type (its state's first 4 bytes in
 * one load), the flags reduced to those that need the general path. */
#define FD_WORD(kind, sotype) ((uint32_t)(kind) | (uint32_t)(sotype) << 24)
#define FD_WORD_MASK (FD_WORD(0xff, 0xff) | (uint32_t)(SC_FDF_CONNECTING | SC_FDF_UNNAMED) << 16)
_Static_assert(offsetof(struct sc_fd, kind) == 0 && offsetof(struct sc_fd, flags) == 2 &&
		       offsetof(struct sc_fd, sotype) == 3,
	       "fd_word's layout");
static inline uint32_t fd_word(int fd)
{
	uint32_t w;
	memcpy(&w, &sc_fds[fd], 4);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	w = __builtin_bswap32(w);
#endif
	return w & FD_WORD_MASK;
}

/* now_general reads the record clock when the TSC extrapolation cannot
 * (vDSO clock, an anchor due), keeping errno (an interposed clock may set it). */
SC_COLD static int64_t now_general(struct sc_thread *T)
{
	int e = errno;
	int64_t t = sc_now_of(T);
	errno = e;
	return t;
}

/* fast_now is sc_now_of's TSC path inline, the rest out of line. */
static inline __attribute__((always_inline)) int64_t fast_now(struct sc_thread *T)
{
#if defined(__x86_64__) && !defined(SC_ABLATE_NOCLOCK)
	if (SC_LIKELY(sc_tsc_ok)) {
		struct sc_clk *K = &T->clk;
		uint32_t s = K->seq;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		uint64_t d = SC_TSC_SCALE(__builtin_ia32_rdtsc() - K->anc_tsc);
		int64_t t = K->anc_ns + (int64_t)((d * K->mult) >> 32);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (SC_LIKELY(d < K->span && K->seq == s)) /* within the anchor's span, no anchor in between */
			return t;
	}
#endif
	return now_general(T);
}

/* uv14 writes the varint of u < 2^14 at q with one 2-byte store: for u < 128
 * the second byte is 0 — the next field's first byte, or the byte after the
 * record, which is 0 until a record is written there. */
static inline __attribute__((always_inline)) uint8_t *uv14(uint8_t *q, uint32_t u)
{
	uint32_t two = (u + 0x3f80) >> 14; /* 1 when u >= 128 (u < 2^14): no branch */
	uint16_t w = (uint16_t)((u + (u & ~0x7fu)) | two << 7);
	memcpy(q, &w, 2);
	return q + 1 + two;
}
/* record_head writes dt, fd and ret of a transfer record at q (sc_fast_begin
 * reserved the room): each field one store when all three are below 2^14
 * (dt within 8 us, the usual), fd and ret without a branch, else the
 * general varints. */
static inline __attribute__((always_inline)) uint8_t *record_head(uint8_t *q, int64_t dt, int fd, ssize_t r)
{
	uint64_t dz = ((uint64_t)dt << 1) ^ (uint64_t)(dt >> 63), fz = (uint64_t)(unsigned)fd << 1, rz = (uint64_t)r << 1;
	if (SC_LIKELY((dz | fz | rz) < 0x4000)) {
		/* dt's size by a branch: dt comes from the clock (rdtsc), and with
		 * its size a data dependence every later store address and the
		 * chunk position wait for it (+8 ns per call in capture-stub); a
		 * predicted branch lets them go ahead. Two bytes (64 ns to 8 us) is
		 * the usual size. */
		if (SC_LIKELY(dz >= 0x80)) {
			uint16_t w = (uint16_t)((dz + (dz & ~(uint64_t)0x7f)) | 0x80);
			memcpy(q, &w, 2);
			q += 2;
		} else {
			*q++ = (uint8_t)dz;
		}
		q = uv14(q, (uint32_t)fz);
		return uv14(q, (uint32_t)rz);
	}
	q = sc_raw_uv(q, dz);
	q = sc_raw_uv(q, fz);
	return sc_raw_uv(q, rz);
}

/* fast_ok: the thread's chunk can take the record of a transfer on f now
 * (sc_fast_begin's conditions). T->chunk stands for the generation check:
 * a forked child's only thread has it cleared (sc_after_fork_child), and
 * other threads' states do not exist there. f's flags were checked before
 * the system call; only a signal handler's connect on the same fd could
 * change them since. */
static inline __attribute__((always_inline)) int fast_ok(const struct sc_thread *T, const struct sc_fd *f)
{
	return SC_LIKELY(T->chunk != NULL) && SC_LIKELY(!(T->lost | (uint64_t)(unsigned)T->crit)) &&
	       SC_LIKELY(T->pos <= SC_CHUNK_SIZE - 2 * SC_RECORD_MAX) && SC_LIKELY(f->emitted == SC_SER32(T->serial));
}

/* fast_start sets the critical flag and returns where the record starts. */
static inline __attribute__((always_inline)) uint8_t *fast_start(struct sc_thread *T)
{
	T->crit = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return SC_FAST_BASE(T) + T->pos;
}

/* stream_record writes the SEND/RECV record of a transfer that returned r >= 0
 * on a stream socket; 0: nothing written, call log_io. */
static inline __attribute__((always_inline)) int stream_record(struct sc_thread *T, uint8_t kind, int fd, int64_t t, ssize_t r)
{
#ifdef SC_ABLATE_NORECORD
	__asm__ volatile("" ::"r"(t), "r"(r), "r"(T), "r"(kind), "r"(fd));
	return 1;
#endif
	if (SC_UNLIKELY(r < 0 || !fast_ok(T, &sc_fds[fd])))
		return 0;
	uint8_t *p = fast_start(T);
	sc_fast_end(T, kind, t, record_head(p + 1, t - T->last, fd, r));
	return 1;
}

/* sum_short: the checksum of a datagram shorter than the prefix (or
 * truncated) — out of line, to keep the 64-byte case straight. */
__attribute__((noinline)) static uint32_t sum_short(const void *p, ssize_t n, size_t cap)
{
	return sum_buf(p, n, cap);
}

/* dgram_record writes the DSEND/DRECV record of a datagram transfer that
 * returned r >= 0 on a plain buffer, the peer ra an IPv4 address of at
 * least sizeof(struct sockaddr_in) bytes (the caller checked) or none — the
 * same record as dgram_fast; 0: nothing written, call log_io. */
static inline __attribute__((always_inline)) int dgram_record(struct sc_thread *T, uint8_t kind, int fd, int64_t t,
							      ssize_t r, const struct sockaddr *ra, const void *buf, size_t cap)
{
#ifdef SC_ABLATE_NORECORD
	__asm__ volatile("" ::"r"(t), "r"(r), "r"(T), "r"(kind), "r"(fd), "r"(ra), "r"(buf), "r"(cap));
	return 1;
#endif
	if (SC_UNLIKELY(r < 0 || !buf))
		return 0;
	struct sc_fd *f = &sc_fds[fd];
	if (SC_UNLIKELY(!fast_ok(T, f)))
		return 0;
	uint32_t sum = SC_LIKELY(r >= SC_SUM_PREFIX && cap >= SC_SUM_PREFIX) ? sc_sum_prefix(buf, SC_SUM_PREFIX, (uint64_t)r)
									      : sum_short(buf, r, cap);
	uint8_t *p = fast_start(T);
	uint8_t *q = record_head(p + 1, t - T->last, fd, r);
	memcpy(q, &sum, 4); /* little-endian */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	q[0] = (uint8_t)sum, q[1] = (uint8_t)(sum >> 8), q[2] = (uint8_t)(sum >> 16), q[3] = (uint8_t)(sum >> 24);
#endif
	q += 4;
	uint64_t key = ra ? sc_in4_key(ra) : 0; /* sc_addr_key's exact form for IPv4: one load */
	if (SC_LIKELY(key && f->dpeer_key == key)) {
		/* fast_reserve saw f->emitted == this chunk's serial, and writing
		 * the FD record cleared dpeer_key: a key here is of this chunk */
		*q++ = SC_AF_SAME;
	} else if (!key) {
		*q++ = SC_AF_NONE;
	} else {
		q = put_inet4(q, T, f, ra, key);
	}
	sc_fast_end(T, kind, t, q);
	return 1;
}

/* transfer_logged records a transfer the fast path could not (log_io),
 * keeping errno. */
SC_COLD static ssize_t transfer_logged(int op, int fd, int64_t t, ssize_t r, const struct sockaddr *ra, socklen_t rl,
				       const void *buf, size_t cap)
{
	int e = errno;
	log_io(op, fd, &sc_fds[fd], t, r, e, ra, rl, buf, cap, NULL, 0);
	errno = e;
	return r;
}


#define SEND_BODY(op, fd, callexpr, ra, rl, buf, cap, iov, iovcnt) SEND_BODY_DG(op, fd, callexpr, ra, rl, buf, cap, iov, iovcnt, 0)
#define SEND_BODY_DG(op, fd, callexpr, ra, rl, buf, cap, iov, iovcnt, dgfirst)                            \
	ENSURE();                                                                                      \
	struct sc_thread *T_ = sc_self();                                                              \
	struct sc_fd tmp_, *f_ = sock_of_t(T_, fd, &tmp_);                                             \
	if (SC_LIKELY(!f_))                                                                            \
		return callexpr;                                                                       \
	int64_t t_ = sc_now_of(T_);                                                                    \
	ssize_t r_ = callexpr;                                                                         \
	/* the fast path makes no call that could change errno */                                     \
	if (SC_LIKELY(io_fast_dg(T_, op, fd, f_, t_, r_, ra, rl, buf, cap, dgfirst)))                 \
		return r_;                                                                             \
	int e_ = errno;                                                                                \
	log_io(op, fd, f_, t_, r_, e_, ra, rl, buf, cap, iov, iovcnt);                                 \
	errno = e_;                                                                                    \
	return r_;

#define RECV_BODY(fd, callexpr, ra, rl, buf, cap, iov, iovcnt)                                              \
	ENSURE();                                                                                      \
	struct sc_thread *T_ = sc_self();                                                              \
	struct sc_fd tmp_, *f_ = sock_of_t(T_, fd, &tmp_);                                             \
	if (SC_LIKELY(!f_))                                                                            \
		return callexpr;                                                                       \
	ssize_t r_ = callexpr;                                                                         \
	int64_t t_ = now_keep_errno(T_); /* after the call */                                         \
	if (SC_LIKELY(io_fast(T_, SC_OP_RECV, fd, f_, t_, r_, ra, rl, buf, cap)))                     \
		return r_;                                                                             \
	int e_ = errno;                                                                                \
	log_io(SC_OP_RECV, fd, f_, t_, r_, e_, ra, rl, buf, cap, iov, iovcnt);                         \
	errno = e_;                                                                                    \
	return r_;

/* The general forms of send and sendto: the fast paths below hand them every
 * call they do not take before the system call. */
SC_COLD static ssize_t send_general(int fd, const void *buf, size_t n, int flags)
{
	SEND_BODY(SC_OP_SEND, fd, SC_REAL(send)(fd, buf, n, flags), NULL, 0, buf, n, NULL, 0)
}

SC_COLD static ssize_t sendto_general(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a, socklen_t al)
{
	SEND_BODY_DG(SC_OP_SEND, fd, SC_REAL(sendto)(fd, buf, n, flags, a, al), a, a ? al : 0, buf, n, NULL, 0, 1)
}

/* dgram_send: the datagram fast path of send (to 0: the socket's peer) and
 * sendto (to 1: a, IPv4, or none) on an fd fd_word found a datagram socket. */
static inline __attribute__((always_inline)) ssize_t dgram_send_body(struct sc_thread *T, int fd, const void *buf, size_t n,
								    int flags, const struct sockaddr *a, socklen_t al, int to)
{
	int64_t t = fast_now(T);
	ssize_t r = to ? SC_REAL(sendto)(fd, buf, n, flags, a, al) : SC_REAL(send)(fd, buf, n, flags);
	if (SC_LIKELY(dgram_record(T, SC_K_DSEND, fd, t, r, a, buf, n)))
		return r;
	return transfer_logged(SC_OP_SEND, fd, t, r, a, a ? al : 0, buf, n);
}

SC_FAST("1b") __attribute__((noinline)) static ssize_t dgram_send(struct sc_thread *T, int fd, const void *buf, size_t n,
								  int flags)
{
	return dgram_send_body(T, fd, buf, n, flags, NULL, 0, 0);
}

SC_EXPORT SC_FAST("1") __attribute__((aligned(4096))) ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct sc_thread *T = fast_thread();
	if (SC_LIKELY(T && !T->guard && (unsigned)fd < SC_FDMAX)) {
		uint32_t w = fd_word(fd);
		if (SC_LIKELY(w == FD_WORD(SC_FD_SOCKET, SOCK_STREAM))) {
			int64_t t = fast_now(T);
			ssize_t r = SC_REAL(send)(fd, buf, n, flags);
			if (SC_LIKELY(stream_record(T, SC_K_SEND, fd, t, r)))
				return r;
			return transfer_logged(SC_OP_SEND, fd, t, r, NULL, 0, NULL, 0); /* a stream record has no sum */
		}
		if (w == FD_WORD(SC_FD_SOCKET, SOCK_DGRAM))
			return dgram_send(T, fd, buf, n, flags);
	}
	return send_general(fd, buf, n, flags);
}

SC_EXPORT SC_FAST("3") __attribute__((aligned(64))) ssize_t sendto(int fd, const void *buf, size_t n, int flags,
								   const struct sockaddr *a, socklen_t al)
{
	struct sc_thread *T = fast_thread();
	/* sendto mostly sends datagrams: to an IPv4 address, or (a connected
	 * socket) to none */
	if (SC_LIKELY(T && !T->guard && (unsigned)fd < SC_FDMAX && fd_word(fd) == FD_WORD(SC_FD_SOCKET, SOCK_DGRAM) &&
		      (!a || (al >= sizeof(struct sockaddr_in) && a->sa_family == AF_INET))))
		return dgram_send_body(T, fd, buf, n, flags, a, al, 1);
	return sendto_general(fd, buf, n, flags, a, al);
}

/* read/write and their vector forms mostly see files and pipes: the check for
 * a non-socket is kept small so that it ends in a tail call of the real
 * function; the rest lives out of line. */
#define NOT_TRACED(fd) (SC_LIKELY(sc_ready == 2) && ((unsigned)(fd) >= SC_FDMAX ? (fd) < 0 : \
	(sc_fds[fd].kind == SC_FD_OTHER || !sc_hot.enabled)))

__attribute__((noinline)) SC_HOT static ssize_t write_slow(int fd, const void *buf, size_t n)
{
	SEND_BODY(SC_OP_SEND, fd, SC_REAL(write)(fd, buf, n), NULL, 0, buf, n, NULL, 0)
}

SC_EXPORT SC_HOT ssize_t write(int fd, const void *buf, size_t n)
{
	if (NOT_TRACED(fd))
		return SC_REAL(write)(fd, buf, n);
	return write_slow(fd, buf, n);
}

__attribute__((noinline)) SC_HOT static ssize_t writev_slow(int fd, const struct iovec *iov, int cnt)
{
	SEND_BODY(SC_OP_SEND, fd, SC_REAL(writev)(fd, iov, cnt), NULL, 0, NULL, 0, iov, cnt > 0 ? (size_t)cnt : 0)
}

SC_EXPORT SC_HOT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	if (NOT_TRACED(fd))
		return SC_REAL(writev)(fd, iov, cnt);
	return writev_slow(fd, iov, cnt);
}

SC_EXPORT SC_HOT ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	SEND_BODY(SC_OP_SEND, fd, SC_REAL(sendmsg)(fd, m, flags), m ? (const struct sockaddr *)m->msg_name : NULL,
		  m && m->msg_name ? m->msg_namelen : 0, NULL, 0, m ? m->msg_iov : NULL, m ? m->msg_iovlen : 0)
}

__attribute__((noinline)) SC_HOT static ssize_t read_slow(int fd, void *buf, size_t n)
{
	RECV_BODY(fd, SC_REAL(read)(fd, buf, n), NULL, 0, buf, n, NULL, 0)
}

SC_EXPORT SC_HOT ssize_t read(int fd, void *buf, size_t n)
{
	if (NOT_TRACED(fd))
		return SC_REAL(read)(fd, buf, n);
	return read_slow(fd, buf, n);
}

__attribute__((noinline)) SC_HOT static ssize_t read_chk_slow(int fd, void *buf, size_t n, size_t buflen)
{
	RECV_BODY(fd, SC_REAL(__read_chk)(fd, buf, n, buflen), NULL, 0, buf, n, NULL, 0)
}

SC_EXPORT SC_HOT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (NOT_TRACED(fd))
		return SC_REAL(__read_chk)(fd, buf, n, buflen);
	return read_chk_slow(fd, buf, n, buflen);
}

__attribute__((noinline)) SC_HOT static ssize_t readv_slow(int fd, const struct iovec *iov, int cnt)
{
	RECV_BODY(fd, SC_REAL(readv)(fd, iov, cnt), NULL, 0, NULL, 0, iov, cnt > 0 ? (size_t)cnt : 0)
}

SC_EXPORT SC_HOT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	if (NOT_TRACED(fd))
		return SC_REAL(readv)(fd, iov, cnt);
	return readv_slow(fd, iov, cnt);
}

/* recv/recvfrom on a datagram socket: learn the sender even when the caller
 * does not ask, by passing our own address buffer. */
static inline __attribute__((always_inline)) ssize_t recvfrom_logged(struct sc_thread *T, int fd, struct sc_fd *f,
									void *buf, size_t n, int flags, struct sockaddr *a,
									socklen_t *al, size_t buflen, int chk);

static inline __attribute__((always_inline)) ssize_t recvfrom_impl(int fd, void *buf, size_t n, int flags,
								      struct sockaddr *a, socklen_t *al,
			     size_t buflen, int chk)
{
	ENSURE();
	struct sc_thread *T = sc_self();
	struct sc_fd tmp, *f = sock_of_t(T, fd, &tmp);
	if (SC_LIKELY(!f)) {
		if (chk)
			return SC_REAL(__recvfrom_chk)(fd, buf, n, buflen, flags, a, al);
		return SC_REAL(recvfrom)(fd, buf, n, flags, a, al);
	}
	return recvfrom_logged(T, fd, f, buf, n, flags, a, al, buflen, chk);
}

static inline __attribute__((always_inline)) ssize_t recvfrom_logged(struct sc_thread *T, int fd, struct sc_fd *f,
									void *buf, size_t n, int flags, struct sockaddr *a,
									socklen_t *al, size_t buflen, int chk)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	struct sockaddr *ua = a;
	socklen_t *ul = al;
#ifdef SC_ABLATE_NOADDR
	if (0) {
#else
	if (!a && is_dgram(f) && !(f->flags & SC_FDF_CONNECTED)) {
#endif
		/* a connected datagram socket receives from its peer only: the
		 * fd's remote (its FD record) is the sender, no need to ask */
		ua = (struct sockaddr *)&ss;
		ul = &sl;
	}
	ssize_t r = chk ? SC_REAL(__recvfrom_chk)(fd, buf, n, buflen, flags, ua, ul)
			: SC_REAL(recvfrom)(fd, buf, n, flags, ua, ul);
	int64_t t = now_keep_errno(T); /* after the call */
	socklen_t rl = 0;
	if (r >= 0 && ua && ul && *ul > 0)
		rl = *ul;
	if (rl > sizeof ss)
		rl = sizeof ss;
	if (SC_LIKELY(io_fast(T, SC_OP_RECV, fd, f, t, r, rl ? ua : NULL, rl, buf, n)))
		return r;
	int e = errno;
	log_io(SC_OP_RECV, fd, f, t, r, e, rl ? ua : NULL, rl, buf, n, NULL, 0);
	errno = e;
	return r;
}

SC_COLD static ssize_t recv_general(int fd, void *buf, size_t n, int flags)
{
	ENSURE();
	struct sc_thread *T = sc_self();
	struct sc_fd tmp, *f = sock_of_t(T, fd, &tmp);
	if (SC_LIKELY(!f))
		return SC_REAL(recv)(fd, buf, n, flags);
	if (f->sotype != SOCK_STREAM && is_dgram(f)) /* a stream socket: one compare */
		return recvfrom_logged(T, fd, f, buf, n, flags, NULL, NULL, 0, 0);
	ssize_t r = SC_REAL(recv)(fd, buf, n, flags);
	int64_t t = now_keep_errno(T);
	if (SC_LIKELY(io_fast(T, SC_OP_RECV, fd, f, t, r, NULL, 0, buf, n)))
		return r;
	int e = errno;
	log_io(SC_OP_RECV, fd, f, t, r, e, NULL, 0, buf, n, NULL, 0);
	errno = e;
	return r;
}

/* dgram_recv: recv's datagram fast path. The sender of an unconnected IPv4
 * socket's datagram is asked for (ask: the kernel copies it out); a
 * connected socket receives from its peer only. One copy per case, each
 * straight through. */
static inline __attribute__((always_inline)) ssize_t dgram_recv_body(struct sc_thread *T, int fd, void *buf, size_t n,
								    int flags, int ask)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof sa;
	ssize_t r = ask ? SC_REAL(recvfrom)(fd, buf, n, flags, (struct sockaddr *)&sa, &sl) : SC_REAL(recv)(fd, buf, n, flags);
	int64_t t = fast_now(T);
	const struct sockaddr *ra = ask && r >= 0 && sl > 0 ? (const struct sockaddr *)&sa : NULL;
	if (SC_LIKELY(!ra || (sl >= sizeof sa && sa.sin_family == AF_INET)) &&
	    SC_LIKELY(dgram_record(T, SC_K_DRECV, fd, t, r, ra, buf, n)))
		return r;
	return transfer_logged(SC_OP_RECV, fd, t, r, ra, ra ? (sl < sizeof sa ? sl : sizeof sa) : 0, buf, n);
}

SC_FAST("2b") __attribute__((noinline)) static ssize_t dgram_recv_from(struct sc_thread *T, int fd, void *buf, size_t n,
								       int flags)
{
	return dgram_recv_body(T, fd, buf, n, flags, 1);
}

SC_FAST("2c") __attribute__((noinline)) static ssize_t dgram_recv_peer(struct sc_thread *T, int fd, void *buf, size_t n,
								       int flags)
{
	return dgram_recv_body(T, fd, buf, n, flags, 0);
}

SC_EXPORT SC_FAST("2") __attribute__((aligned(64))) ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	struct sc_thread *T = fast_thread();
	if (SC_LIKELY(T && !T->guard && (unsigned)fd < SC_FDMAX)) {
		uint32_t w = fd_word(fd);
		if (SC_LIKELY(w == FD_WORD(SC_FD_SOCKET, SOCK_STREAM))) {
			ssize_t r = SC_REAL(recv)(fd, buf, n, flags);
			int64_t t = fast_now(T); /* after the call */
			if (SC_LIKELY(stream_record(T, SC_K_RECV, fd, t, r)))
				return r;
			return transfer_logged(SC_OP_RECV, fd, t, r, NULL, 0, NULL, 0);
		}
		if (w == FD_WORD(SC_FD_SOCKET, SOCK_DGRAM)) {
			if (sc_fds[fd].flags & SC_FDF_CONNECTED)
				return dgram_recv_peer(T, fd, buf, n, flags);
			if (SC_LIKELY(sc_fds[fd].family == AF_INET))
				return dgram_recv_from(T, fd, buf, n, flags);
		}
	}
	return recv_general(fd, buf, n, flags);
}

SC_COLD static ssize_t recvfrom_general(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *al)
{
	return recvfrom_impl(fd, buf, n, flags, a, al, 0, 0);
}

SC_EXPORT SC_FAST("4") ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *al)
{
	struct sc_thread *T = fast_thread();
	if (SC_LIKELY(T && !T->guard && (unsigned)fd < SC_FDMAX)) {
		uint32_t w = fd_word(fd);
		/* a datagram on an unconnected IPv4 socket whose sender the caller
		 * asks for, or a stream transfer without an address */
		if (SC_LIKELY(w == FD_WORD(SC_FD_SOCKET, SOCK_DGRAM) && a && al && sc_fds[fd].family == AF_INET &&
			      !(sc_fds[fd].flags & SC_FDF_CONNECTED))) {
			ssize_t r = SC_REAL(recvfrom)(fd, buf, n, flags, a, al);
			int64_t t = fast_now(T);
			socklen_t rl = r >= 0 && *al > 0 ? *al : 0;
			if (rl > sizeof(struct sockaddr_storage))
				rl = sizeof(struct sockaddr_storage);
			if (SC_LIKELY(rl == 0 || (rl >= sizeof(struct sockaddr_in) && a->sa_family == AF_INET)) &&
			    SC_LIKELY(dgram_record(T, SC_K_DRECV, fd, t, r, rl ? a : NULL, buf, n)))
				return r;
			return transfer_logged(SC_OP_RECV, fd, t, r, rl ? a : NULL, rl, buf, n);
		}
		if (w == FD_WORD(SC_FD_SOCKET, SOCK_STREAM) && !a) {
			ssize_t r = SC_REAL(recvfrom)(fd, buf, n, flags, a, al);
			int64_t t = fast_now(T);
			if (SC_LIKELY(stream_record(T, SC_K_RECV, fd, t, r)))
				return r;
			return transfer_logged(SC_OP_RECV, fd, t, r, NULL, 0, NULL, 0);
		}
	}
	return recvfrom_general(fd, buf, n, flags, a, al);
}

SC_EXPORT SC_HOT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		return SC_REAL(__recv_chk)(fd, buf, n, buflen, flags); /* let glibc report the overflow */
	return recvfrom_impl(fd, buf, n, flags, NULL, NULL, buflen, 1);
}

SC_EXPORT SC_HOT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *a,
				 socklen_t *al)
{
	return recvfrom_impl(fd, buf, n, flags, a, al, buflen, 1);
}

/* fds received over SCM_RIGHTS are unknown to us: classify them at first use. */
static void forget_passed_fds(const struct msghdr *m)
{
	if (!m || !m->msg_control || m->msg_controllen < sizeof(struct cmsghdr))
		return;
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[64];
		for (size_t i = 0; i < n; i += 64) {
			size_t k = n - i < 64 ? n - i : 64;
			memcpy(fds, (char *)CMSG_DATA(c) + i * sizeof(int), k * sizeof(int));
			for (size_t j = 0; j < k; j++)
				sc_fd_forget(fds[j]);
		}
	}
}

SC_EXPORT SC_HOT ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	ENSURE();
	struct sc_fd tmp, *f = sock_of(fd, &tmp);
	if (SC_LIKELY(!f)) {
		ssize_t r = SC_REAL(recvmsg)(fd, m, flags);
		if (r >= 0 && sc_hot.enabled) {
			int e = errno;
			forget_passed_fds(m);
			errno = e;
		}
		return r;
	}
	struct sockaddr_storage ss;
	struct msghdr local;
	struct msghdr *use = m;
	if (m && !m->msg_name && is_dgram(f) && !(f->flags & SC_FDF_CONNECTED)) {
		local = *m;
		local.msg_name = &ss;
		local.msg_namelen = sizeof ss;
		use = &local;
	}
	ssize_t r = SC_REAL(recvmsg)(fd, use, flags);
	int e = errno;
	int64_t t = sc_now();
	if (use != m && m) {
		m->msg_controllen = local.msg_controllen;
		m->msg_flags = local.msg_flags;
	}
	const struct sockaddr *ra = NULL;
	socklen_t rl = 0;
	if (r >= 0 && use && use->msg_name && use->msg_namelen > 0) {
		ra = use->msg_name;
		rl = use->msg_namelen;
	}
	if (r >= 0)
		forget_passed_fds(m);
	log_io(SC_OP_RECV, fd, f, t, r, e, ra, rl, NULL, 0, m ? m->msg_iov : NULL, m ? m->msg_iovlen : 0);
	errno = e;
	return r;
}

SC_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	ENSURE();
	struct sc_fd tmp, *f = sock_of(fd, &tmp);
	if (SC_LIKELY(!f))
		return SC_REAL(sendmmsg)(fd, v, n, flags);
	int64_t t = sc_now();
	int r = SC_REAL(sendmmsg)(fd, v, n, flags);
	int e = errno;
	if (r < 0)
		log_io(SC_OP_SEND, fd, f, t, r, e, NULL, 0, NULL, 0, NULL, 0);
	for (int i = 0; i < r; i++) {
		const struct msghdr *m = &v[i].msg_hdr;
		log_io(SC_OP_SEND, fd, f, t, v[i].msg_len, 0, m->msg_name, m->msg_name ? m->msg_namelen : 0, NULL, 0,
		       m->msg_iov, m->msg_iovlen);
	}
	errno = e;
	return r;
}

SC_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *tmo)
{
	ENSURE();
	struct sc_fd tmp, *f = sock_of(fd, &tmp);
	if (SC_LIKELY(!f))
		return SC_REAL(recvmmsg)(fd, v, n, flags, tmo);
	int r = SC_REAL(recvmmsg)(fd, v, n, flags, tmo);
	int e = errno;
	int64_t t = sc_now();
	if (r < 0)
		log_io(SC_OP_RECV, fd, f, t, r, e, NULL, 0, NULL, 0, NULL, 0);
	for (int i = 0; i < r; i++) {
		const struct msghdr *m = &v[i].msg_hdr;
		forget_passed_fds(m);
		log_io(SC_OP_RECV, fd, f, t, v[i].msg_len, 0, m->msg_name,
		       m->msg_name ? m->msg_namelen : 0, NULL, 0, m->msg_iov, m->msg_iovlen);
	}
	errno = e;
	return r;
}

SC_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	SEND_BODY(SC_OP_SEND, out, SC_REAL(sendfile)(out, in, off, count), NULL, 0, NULL, 0, NULL, 0)
}

SC_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
	SEND_BODY(SC_OP_SEND, out, (SC_REAL(sendfile64) ? SC_REAL(sendfile64) : SC_REAL(sendfile))(out, in, off, count), NULL, 0,
		  NULL, 0, NULL, 0)
}

SC_EXPORT ssize_t splice(int in, loff_t *offin, int out, loff_t *offout, size_t len, unsigned int flags)
{
	ENSURE();
	struct sc_fd ti, to, *fi = sock_of(in, &ti), *fo = sock_of(out, &to);
	if (SC_LIKELY(!fi && !fo))
		return SC_REAL(splice)(in, offin, out, offout, len, flags);
	int64_t t = sc_now();
	ssize_t r = SC_REAL(splice)(in, offin, out, offout, len, flags);
	int e = errno;
	if (fi)
		log_io(SC_OP_RECV, in, fi, t, r, e, NULL, 0, NULL, 0, NULL, 0);
	if (fo)
		log_io(SC_OP_SEND, out, fo, t, r, e, NULL, 0, NULL, 0, NULL, 0);
	errno = e;
	return r;
}

/* ---------------- processes ---------------- */

static pid_t after_fork(pid_t r, int e, int64_t t)
{
	if (r == 0) {
		sc_after_fork_child();
		if (sc_cfg.enabled)
			sc_log_open();
		errno = e;
		return 0;
	}
	if (active()) {
		struct sc_event ev = {.op = SC_OP_FORK, .fd = -1, .ret = r, .err = e, .child = r,
				      .mask = SC_F_RET | (r > 0 ? SC_F_CHILD : SC_F_ERRNO)};
		event(t, &ev);
	}
	errno = e;
	return r;
}

SC_EXPORT pid_t fork(void)
{
	ENSURE();
	int64_t t = sc_now();
	pid_t r = SC_REAL(fork)();
	return after_fork(r, errno, t);
}

SC_EXPORT pid_t _Fork(void)
{
	ENSURE();
	int64_t t = sc_now();
	pid_t r = SC_REAL(_Fork) ? SC_REAL(_Fork)() : SC_REAL(fork)();
	return after_fork(r, errno, t);
}

/* vfork's child would run our wrappers on the parent's stack and memory; give
 * it fork semantics instead (its own copy, its own log). */
SC_EXPORT pid_t vfork(void)
{
	ENSURE();
	int64_t t = sc_now();
	pid_t r = SC_REAL(fork)();
	return after_fork(r, errno, t);
}

static size_t env_count(char *const envp[])
{
	size_t n = 0;
	if (envp)
		while (envp[n])
			n++;
	return n;
}

static int has_prefix(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return 0;
	return 1;
}

static int preload_has_us(const char *v)
{
	/* the configured LD_PRELOAD value (after "LD_PRELOAD=") or our own path */
	const char *ours = sc_cfg.self_path;
	if (ours[0] && strstr(v, ours))
		return 1;
	return strstr(v, "libsockcap") != NULL;
}

/* fix_env returns envp, or out filled with envp plus what the program removed
 * of LD_PRELOAD / SOCKCAP_* (SOCKCAP_REINJECT=0 turns this off). */
static char *const *fix_env(char *const envp[], char **out, size_t cap, char *pbuf, size_t pcap)
{
	if (!sc_cfg.enabled || !sc_cfg.reinject || !sc_cfg.env_preload[0])
		return envp;
	size_t n = env_count(envp);
	if (n + 4 > cap)
		return envp;
	int has_dir = 0, has_node = !sc_cfg.has_env_node, pre_at = -1, pre_ok = 0, dir_at = -1;
	for (size_t i = 0; i < n; i++) {
		if (has_prefix(envp[i], "SOCKCAP_DIR=")) {
			has_dir = 1;
			if (envp[i][12] != '/')
				dir_at = (int)i; /* relative: replaced by the absolute form */
		}
		else if (has_prefix(envp[i], "SOCKCAP_NODE="))
			has_node = 1;
		else if (has_prefix(envp[i], "LD_PRELOAD=")) {
			pre_at = (int)i;
			pre_ok = preload_has_us(envp[i] + 11);
		}
	}
	if (has_dir && has_node && pre_ok && dir_at < 0)
		return envp;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		out[k++] = envp[i];
	if (dir_at >= 0)
		out[dir_at] = sc_cfg.env_dir;
	if (!pre_ok) {
		if (pre_at >= 0) {
			/* theirs kept, ours first */
			size_t a = strlen(sc_cfg.env_preload), b = strlen(envp[pre_at] + 11);
			if (a + 1 + b + 1 <= pcap) {
				memcpy(pbuf, sc_cfg.env_preload, a);
				pbuf[a] = ' ';
				memcpy(pbuf + a + 1, envp[pre_at] + 11, b + 1);
				out[pre_at] = pbuf;
			}
		} else
			out[k++] = sc_cfg.env_preload;
	}
	if (!has_dir)
		out[k++] = sc_cfg.env_dir;
	if (!has_node)
		out[k++] = sc_cfg.env_node;
	out[k] = NULL;
	return out;
}

#define ENV_FIXED(envp, name)                                                                          \
	size_t cnt_##name = env_count(envp);                                                           \
	size_t cap_##name = cnt_##name < 4096 ? cnt_##name + 4 : 4; /* huge environments: left alone */                                   \
	char *arr_##name[cap_##name];                                                                  \
	char pbuf_##name[sizeof sc_cfg.env_preload + 4096];                                            \
	char *const *name = fix_env(envp, arr_##name, cap_##name, pbuf_##name, sizeof pbuf_##name);

static void exec_event(const char *what)
{
	if (!active())
		return;
	struct sc_event ev = {.op = SC_OP_EXEC, .fd = -1, .mask = SC_F_NAME, .name = what};
	event(sc_now(), &ev);
}

static void exec_failed(const char *what, int e)
{
	if (!active())
		return;
	struct sc_event ev = {.op = SC_OP_EXEC, .fd = -1, .mask = SC_F_NAME | SC_F_RET | SC_F_ERRNO, .name = what,
			      .ret = -1, .err = e};
	event(sc_now(), &ev);
}

SC_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	ENSURE();
	exec_event(path);
	ENV_FIXED(envp, env);
	int r = SC_REAL(execve)(path, argv, env);
	int e = errno;
	exec_failed(path, e);
	errno = e;
	return r;
}

SC_EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

SC_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	ENSURE();
	exec_event(file);
	ENV_FIXED(envp, env);
	int r = SC_REAL(execvpe)(file, argv, env);
	int e = errno;
	exec_failed(file, e);
	errno = e;
	return r;
}

SC_EXPORT int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

SC_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	ENSURE();
	exec_event("fexecve");
	ENV_FIXED(envp, env);
	int r = SC_REAL(fexecve)(fd, argv, env);
	int e = errno;
	exec_failed("fexecve", e);
	errno = e;
	return r;
}

SC_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	ENSURE();
	if (!SC_REAL(execveat)) {
		errno = ENOSYS;
		return -1;
	}
	exec_event(path);
	ENV_FIXED(envp, env);
	int r = SC_REAL(execveat)(dirfd, path, argv, env, flags);
	int e = errno;
	exec_failed(path, e);
	errno = e;
	return r;
}

/* execl*: collect the variadic arguments into an array on the stack. */
#define COLLECT_ARGS(arg0, last, argv)                                                                 \
	size_t n_ = 1;                                                                                 \
	va_list ap_;                                                                                   \
	va_start(ap_, last);                                                                           \
	while (va_arg(ap_, char *))                                                                    \
		n_++;                                                                                  \
	va_end(ap_);                                                                                   \
	char *argv[n_ + 1];                                                                            \
	argv[0] = (char *)(arg0);                                                                      \
	va_start(ap_, last);                                                                           \
	for (size_t i_ = 1; i_ <= n_; i_++)                                                            \
		argv[i_] = va_arg(ap_, char *);

SC_EXPORT int execl(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv)
	va_end(ap_);
	return execve(path, argv, environ);
}

SC_EXPORT int execlp(const char *file, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv)
	va_end(ap_);
	return execvpe(file, argv, environ);
}

SC_EXPORT int execle(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv)
	char *const *envp = va_arg(ap_, char *const *);
	va_end(ap_);
	return execve(path, argv, envp);
}

static int spawn(int p, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	ENSURE();
	int64_t t = sc_now();
	pid_t child = 0;
	ENV_FIXED(envp, env);
	int r = p ? SC_REAL(posix_spawnp)(&child, path, fa, at, argv, env) : SC_REAL(posix_spawn)(&child, path, fa, at, argv, env);
	int e = errno;
	if (pid && r == 0)
		*pid = child;
	if (active()) {
		struct sc_event ev = {.op = SC_OP_FORK, .fd = -1, .name = path, .ret = r == 0 ? child : -1, .err = r,
				      .child = child, .mask = SC_F_RET | SC_F_NAME | (r == 0 ? SC_F_CHILD : SC_F_ERRNO)};
		event(t, &ev);
	}
	errno = e;
	return r;
}

SC_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	return spawn(0, pid, path, fa, at, argv, envp);
}

SC_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	return spawn(1, pid, file, fa, at, argv, envp);
}

static void exit_event(int status)
{
	if (!active() || exit_logged)
		return;
	exit_logged = 1;
	struct sc_event ev = {.op = SC_OP_EXIT, .fd = -1, .mask = SC_F_ARG, .arg = status};
	event(sc_now(), &ev);
}

SC_EXPORT void exit(int status)
{
	ENSURE();
	exit_event(status);
	SC_REAL(exit)(status);
	__builtin_unreachable();
}

SC_EXPORT void _exit(int status)
{
	ENSURE();
	exit_event(status);
	SC_REAL(_exit)(status);
	__builtin_unreachable();
}

SC_EXPORT void _Exit(int status)
{
	ENSURE();
	exit_event(status);
	(SC_REAL(_Exit) ? SC_REAL(_Exit) : SC_REAL(_exit))(status);
	__builtin_unreachable();
}

/* ---------------- privileges ---------------- */

/* A root process about to become another user could not reopen its root-owned
 * log afterwards: hand it over and reserve chunks while still privileged. */
SC_EXPORT int setuid(uid_t uid)
{
	ENSURE();
	sc_before_setuid(uid);
	return SC_REAL(setuid)(uid);
}

SC_EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	ENSURE();
	sc_before_setuid(euid != (uid_t)-1 ? euid : ruid);
	return SC_REAL(setreuid)(ruid, euid);
}

SC_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	ENSURE();
	sc_before_setuid(euid != (uid_t)-1 ? euid : ruid);
	return SC_REAL(setresuid)(ruid, euid, suid);
}

SC_EXPORT int seteuid(uid_t euid)
{
	ENSURE();
	sc_before_setuid(euid);
	return SC_REAL(seteuid)(euid);
}

/* ---------------- resolver ---------------- */

static void resolve_event(const char *name, int64_t t0, int ret)
{
	int64_t t1 = sc_now();
	struct sc_event ev = {.op = SC_OP_RESOLVE, .fd = -1, .name = name ? name : "", .ret = ret,
			      .dur = (uint64_t)(t1 - t0), .mask = SC_F_NAME | SC_F_RET | SC_F_DUR};
	event(t0, &ev);
}

SC_EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
			  struct addrinfo **res)
{
	ENSURE();
	if (!active())
		return SC_REAL(getaddrinfo)(node, service, hints, res);
	int64_t t0 = sc_now();
	sc_t.guard++; /* NSS modules' own sockets are part of this call */
	int r = SC_REAL(getaddrinfo)(node, service, hints, res);
	sc_t.guard--;
	int e = errno;
	resolve_event(node, t0, r);
	errno = e;
	return r;
}

SC_EXPORT struct hostent *gethostbyname(const char *name)
{
	ENSURE();
	if (!active())
		return SC_REAL(gethostbyname)(name);
	int64_t t0 = sc_now();
	sc_t.guard++;
	struct hostent *h = SC_REAL(gethostbyname)(name);
	sc_t.guard--;
	int e = errno;
	resolve_event(name, t0, h ? 0 : h_errno);
	errno = e;
	return h;
}

SC_EXPORT struct hostent *gethostbyname2(const char *name, int af)
{
	ENSURE();
	if (!active())
		return SC_REAL(gethostbyname2)(name, af);
	int64_t t0 = sc_now();
	sc_t.guard++;
	struct hostent *h = SC_REAL(gethostbyname2)(name, af);
	sc_t.guard--;
	int e = errno;
	resolve_event(name, t0, h ? 0 : h_errno);
	errno = e;
	return h;
}

SC_EXPORT int gethostbyname_r(const char *name, struct hostent *ret, char *buf, size_t buflen,
			      struct hostent **result, int *h_errnop)
{
	ENSURE();
	if (!active())
		return SC_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
	int64_t t0 = sc_now();
	sc_t.guard++;
	int r = SC_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
	sc_t.guard--;
	int e = errno;
	resolve_event(name, t0, r);
	errno = e;
	return r;
}
