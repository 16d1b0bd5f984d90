/* encode.c — varint and record encoding (format.h). Pure functions over a
 * caller-owned buffer: no allocation, async-signal-safe. */
#include "sockcap.h"

/* The hot page (sockcap.h): page-aligned, the flags and the real functions
 * first, then the fd table. Defined here because every build of the encoder
 * links this file (the library, bench/capture-stub.c, the cgo tests). */
struct sc_hot sc_hot __attribute__((aligned(4096)));

#include <string.h>
#include <sys/un.h>
#include <netinet/in.h>

void sc_put_bytes(struct sc_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (b->n + n > b->cap) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

void sc_put_addr(struct sc_buf *b, const struct sockaddr *sa, socklen_t len, uint64_t inode)
{
	if (sa && len >= sizeof(sa_family_t) && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		sc_put_u8(b, SC_AF_INET);
		sc_put_bytes(b, &in->sin_addr, 4);
		sc_put_bytes(b, &in->sin_port, 2); /* already big-endian */
		return;
	}
	if (sa && len >= sizeof(sa_family_t) && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		sc_put_u8(b, SC_AF_INET6);
		sc_put_bytes(b, &in6->sin6_addr, 16);
		sc_put_bytes(b, &in6->sin6_port, 2);
		sc_put_uv(b, in6->sin6_scope_id);
		return;
	}
	if (sa && len >= sizeof(sa_family_t) && sa->sa_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
		size_t max = len > offsetof(struct sockaddr_un, sun_path) ? len - offsetof(struct sockaddr_un, sun_path) : 0;
		if (max > SC_UNIX_PATH_MAX)
			max = SC_UNIX_PATH_MAX;
		char path[SC_UNIX_PATH_MAX];
		size_t n = 0;
		if (max > 0 && un->sun_path[0] == '\0') {
			/* abstract: '@' then the name bytes (not NUL-terminated) */
			path[n++] = '@';
			for (size_t i = 1; i < max && n < SC_UNIX_PATH_MAX; i++)
				path[n++] = un->sun_path[i] ? un->sun_path[i] : '@';
		} else {
			for (size_t i = 0; i < max && un->sun_path[i]; i++)
				path[n++] = un->sun_path[i];
		}
		sc_put_u8(b, SC_AF_UNIX);
		sc_put_uv(b, n);
		sc_put_bytes(b, path, n);
		sc_put_uv(b, inode);
		return;
	}
	if (inode) {
		/* unnamed Unix socket known only by inode */
		sc_put_u8(b, SC_AF_UNIX);
		sc_put_uv(b, 0);
		sc_put_uv(b, inode);
		return;
	}
	sc_put_u8(b, SC_AF_NONE);
}

/* UDP payload checksum: CRC32C (Castagnoli), with the SSE4.2 instruction
 * when the CPU has it (8 bytes per instruction), else a table. */
static uint32_t crc_table[256];

static void crc_setup(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		crc_table[i] = c;
	}
	int mode = 1;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		mode = 2;
#endif
	__atomic_store_n(&sc_crc_mode, mode, __ATOMIC_RELEASE);
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64 = c;
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

uint32_t sc_sum_init(void)
{
	if (SC_UNLIKELY(!__atomic_load_n(&sc_crc_mode, __ATOMIC_ACQUIRE)))
		crc_setup();
	return 0xffffffffu;
}

uint32_t sc_sum_update(uint32_t c, const void *p, size_t n)
{
	const uint8_t *s = p;
#if defined(__x86_64__)
	if (sc_crc_mode == 2)
		return crc_hw(c, s, n);
#endif
	for (size_t i = 0; i < n; i++)
		c = (c >> 8) ^ crc_table[(c ^ s[i]) & 0xff];
	return c;
}

uint32_t sc_sum_final(uint32_t c, uint64_t total_len)
{
	uint8_t l[4] = {(uint8_t)total_len, (uint8_t)(total_len >> 8), (uint8_t)(total_len >> 16),
			(uint8_t)(total_len >> 24)};
	return ~sc_sum_update(c, l, 4);
}

uint32_t sc_sum_slow(const void *p, size_t k, uint64_t total)
{
	return sc_sum_final(sc_sum_update(sc_sum_init(), p, k), total);
}

void sc_encode_dgram(struct sc_buf *b, int fd, int64_t ret, int err, uint32_t sum, const struct sockaddr *peer,
		     socklen_t peer_len, int same)
{
	sc_put_zz(b, fd);
	sc_put_zz(b, ret);
	if (ret < 0) {
		sc_put_uv(b, (uint64_t)(uint32_t)err);
	} else {
		uint8_t s4[4] = {(uint8_t)sum, (uint8_t)(sum >> 8), (uint8_t)(sum >> 16), (uint8_t)(sum >> 24)};
		sc_put_bytes(b, s4, 4);
	}
	if (same)
		sc_put_u8(b, SC_AF_SAME);
	else
		sc_put_addr(b, peer, peer ? peer_len : 0, 0);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

uint64_t sc_addr_key(const struct sockaddr *sa, socklen_t len)
{
	if (!sa || len < sizeof(sa_family_t))
		return 0;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return sc_in4_key(sa); /* exact */
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
	const uint8_t *p = (const uint8_t *)sa;
	for (socklen_t i = 0; i < len && i < 128; i++)
		h = mix64(h ^ p[i]);
	return h | (1ULL << 63);
}

void sc_encode_event(struct sc_buf *b, const struct sc_event *e)
{
	sc_put_u8(b, e->op);
	sc_put_zz(b, e->fd);
	sc_put_uv(b, e->mask & SC_F_ALL);
	if (e->mask & SC_F_RET)
		sc_put_zz(b, e->ret);
	if (e->mask & SC_F_ERRNO)
		sc_put_uv(b, (uint64_t)(uint32_t)e->err);
	if (e->mask & SC_F_BYTES)
		sc_put_uv(b, e->bytes);
	if (e->mask & SC_F_FD2)
		sc_put_zz(b, e->fd2);
	if (e->mask & SC_F_CHILD)
		sc_put_uv(b, (uint64_t)(uint32_t)e->child);
	if (e->mask & SC_F_DUR)
		sc_put_uv(b, e->dur);
	if (e->mask & SC_F_NAME) {
		size_t n = 0;
		if (e->name)
			while (n < SC_NAME_MAX && e->name[n])
				n++;
		sc_put_uv(b, n);
		if (n)
			sc_put_bytes(b, e->name, n);
	}
	if (e->mask & SC_F_SUM)
		sc_put_uv(b, e->sum);
	if (e->mask & SC_F_REMOTE)
		sc_put_addr(b, e->remote, e->remote_len, 0);
	if (e->mask & SC_F_LOCAL)
		sc_put_addr(b, e->local, e->local_len, 0);
	if (e->mask & SC_F_ARG)
		sc_put_zz(b, e->arg);
	if (e->mask & SC_F_PEERPID)
		sc_put_uv(b, (uint64_t)(uint32_t)e->peerpid);
}
