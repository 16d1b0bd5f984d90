/* fdtable.c — per-fd state: is it a socket, which transport, and whether the
 * calling thread's chunk already holds its endpoints (SC_K_FD record). Unknown
 * fds (inherited, passed over SCM_RIGHTS, created behind our back) are
 * classified once with fstat/getsockopt. */
#include "sockcap.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>


static uint8_t proto_of(int domain, int type)
{
	type &= 0xf; /* strip SOCK_NONBLOCK / SOCK_CLOEXEC */
	if (domain == AF_UNIX)
		return SC_PROTO_UNIX;
	if (domain == AF_INET || domain == AF_INET6) {
		if (type == SOCK_STREAM)
			return SC_PROTO_TCP;
		if (type == SOCK_DGRAM)
			return SC_PROTO_UDP;
	}
	return SC_PROTO_OTHER;
}

static void classify(int fd, struct sc_fd *f)
{
	struct stat st;
	memset(f, 0, sizeof *f);
	if (fstat(fd, &st) != 0) {
		f->kind = SC_FD_UNKNOWN; /* not open: try again next time */
		return;
	}
	if (!S_ISSOCK(st.st_mode)) {
		f->kind = SC_FD_OTHER;
		return;
	}
	int domain = 0, type = 0;
	socklen_t l = sizeof domain;
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l);
	l = sizeof type;
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l);
	f->kind = SC_FD_SOCKET;
	f->family = domain;
	f->sotype = (uint8_t)type;
	f->proto = proto_of(domain, type);
}

/* The overflow table's blocks, mapped on first use (zeroed: every entry
 * SC_FD_UNKNOWN). Threads racing to map one keep the first and unmap theirs.
 * A fork's child inherits the blocks with the fds. */
static struct sc_fd *fdhi[SC_FDHI_NBLOCKS];

struct sc_fd *sc_fd_hi(int fd, int create)
{
	unsigned i = (unsigned)fd - SC_FDMAX;
	if ((unsigned)fd < SC_FDMAX || i / SC_FDHI_BLOCK >= SC_FDHI_NBLOCKS)
		return NULL;
	struct sc_fd **slot = &fdhi[i / SC_FDHI_BLOCK];
	struct sc_fd *b = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!b && create) {
		int saved = errno;
		size_t len = SC_FDHI_BLOCK * sizeof(struct sc_fd);
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			struct sc_fd *expect = NULL;
			if (__atomic_compare_exchange_n(slot, &expect, (struct sc_fd *)m, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				b = m;
			else {
				munmap(m, len);
				b = expect;
			}
		}
		errno = saved;
	}
	return b ? &b[i % SC_FDHI_BLOCK] : NULL;
}

struct sc_fd *sc_fd_get(int fd, struct sc_fd *tmp)
{
	struct sc_fd *f = sc_fd_slot(fd, 1);
	if (!f) { /* fd < 0, or no block (beyond the overflow table, or no memory) */
		if (fd < 0) {
			memset(tmp, 0, sizeof *tmp);
			tmp->kind = SC_FD_OTHER;
			return tmp;
		}
		f = tmp;
		f->kind = SC_FD_UNKNOWN;
	}
	if (SC_UNLIKELY(f->kind == SC_FD_UNKNOWN)) {
		int saved = errno;
		classify(fd, f);
		errno = saved;
	}
	return f;
}

void sc_fd_forget(int fd)
{
	struct sc_fd *f = sc_fd_slot(fd, 0);
	if (f)
		memset(f, 0, sizeof *f);
}

struct sc_fd *sc_fd_set_socket(int fd, int domain, int type)
{
	static SC_TLS struct sc_fd big;
	struct sc_fd *f = sc_fd_slot(fd, 1);
	if (!f)
		f = &big;
	memset(f, 0, sizeof *f);
	f->kind = SC_FD_SOCKET;
	f->family = domain;
	f->sotype = (uint8_t)(type & 0xf);
	f->proto = proto_of(domain, type);
	return f;
}

void sc_fd_describe(int fd, struct sc_fd *f, int64_t t, const struct sockaddr *hint, socklen_t hint_len)
{
	int saved = errno;
	struct sockaddr_storage ls, rs;
	socklen_t ll = sizeof ls, rl = sizeof rs;
	uint32_t mask = 0;
	uint64_t inode = 0;
	int peerpid = 0;

	f->flags &= (uint8_t)~SC_FDF_UNNAMED;
	if (getsockname(fd, (struct sockaddr *)&ls, &ll) == 0) {
		mask |= SC_FD_LOCAL;
		if ((ls.ss_family == AF_INET && ((struct sockaddr_in *)&ls)->sin_port == 0) ||
		    (ls.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&ls)->sin6_port == 0))
			f->flags |= SC_FDF_UNNAMED;
	}
	int hint_ok = hint && hint_len >= sizeof(sa_family_t) && hint_len <= sizeof rs;
	if (hint_ok && hint->sa_family != AF_UNIX) {
		/* an IP peer as connect named it or accept returned it: no getpeername
		 * (Unix paths are taken from the kernel: the server's name for it) */
		memcpy(&rs, hint, hint_len);
		rl = hint_len;
		mask |= SC_FD_REMOTE;
	} else if (getpeername(fd, (struct sockaddr *)&rs, &rl) == 0) {
		mask |= SC_FD_REMOTE;
		f->flags |= SC_FDF_CONNECTED;
	} else if (f->peer_ino) {
		rs.ss_family = AF_UNIX;
		rl = sizeof(sa_family_t);
		mask |= SC_FD_REMOTE;
	} else if (hint_ok) {
		memcpy(&rs, hint, hint_len);
		rl = hint_len;
		mask |= SC_FD_REMOTE;
	}
	if (f->family == AF_UNIX) {
		struct stat st;
		if (fstat(fd, &st) == 0)
			inode = st.st_ino;
		mask |= SC_FD_LOCAL;
		if (f->flags & SC_FDF_CONNECTED) {
			struct ucred cr;
			socklen_t cl = sizeof cr;
			if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid > 0) {
				peerpid = cr.pid;
				mask |= SC_FD_PEERPID;
			}
		}
	}
	uint8_t body[3 * SC_UNIX_PATH_MAX + 64];
	struct sc_buf b = {body, 0, sizeof body, 0};
	sc_put_zz(&b, fd);
	sc_put_u8(&b, f->proto);
	sc_put_uv(&b, f->sotype);
	sc_put_uv(&b, mask);
	if (mask & SC_FD_LOCAL)
		sc_put_addr(&b, (struct sockaddr *)&ls, (mask & SC_FD_LOCAL) && ll <= sizeof ls ? ll : 0, inode);
	if (mask & SC_FD_REMOTE)
		sc_put_addr(&b, (struct sockaddr *)&rs, rl <= sizeof rs ? rl : 0, f->peer_ino);
	if (mask & SC_FD_PEERPID)
		sc_put_uv(&b, (uint64_t)peerpid);
	if (!b.overflow && sc_commit(SC_K_FD, t, body, b.n)) {
		f->emitted = SC_SER32(sc_chunk_serial());
		/* no datagram peer of this fd in this chunk yet: a nonzero
		 * dpeer_key with emitted equal to the caller's chunk serial is
		 * a peer of that chunk (dgram_fast relies on it) */
		f->dpeer_key = 0;
	}
	errno = saved;
}

void sc_fd_ensure(int fd, struct sc_fd *f, int64_t t)
{
	if (SC_UNLIKELY(f->flags & SC_FDF_CONNECTING)) {
		f->flags &= (uint8_t)~SC_FDF_CONNECTING;
		sc_fd_describe(fd, f, t, NULL, 0);
		return;
	}
	/* Each chunk carries the endpoints of the fds it mentions, so that a
	 * chunk can be read on its own; keep room for the event that follows. */
	if (SC_UNLIKELY(!sc_room(2 * SC_RECORD_MAX)))
		sc_make_room(t, 2 * SC_RECORD_MAX);
	if (SC_UNLIKELY(f->emitted != SC_SER32(sc_chunk_serial()) || !f->emitted))
		sc_fd_describe(fd, f, t, NULL, 0);
}
