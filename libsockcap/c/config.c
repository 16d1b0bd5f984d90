/* config.c — the environment, read once at load time into sc_cfg. */
#include "sockcap.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

struct sc_config sc_cfg;

static void copy(char *dst, size_t cap, const char *src)
{
	size_t n = 0;
	if (src)
		for (; src[n] && n + 1 < cap; n++)
			dst[n] = src[n];
	dst[n] = '\0';
}

static void join(char *dst, size_t cap, const char *a, const char *b)
{
	copy(dst, cap, a);
	size_t n = strlen(dst);
	copy(dst + n, cap - n, b);
}

void sc_config_load(void)
{
	const char *dir = getenv("SOCKCAP_DIR");
	const char *node = getenv("SOCKCAP_NODE");
	const char *re = getenv("SOCKCAP_REINJECT");
	const char *pre = getenv("LD_PRELOAD");
	struct utsname u;

	memset(&sc_cfg, 0, sizeof sc_cfg);
	sc_hot.enabled = 0;
	if (uname(&u) == 0)
		copy(sc_cfg.host, sizeof sc_cfg.host, u.nodename);
	if (!sc_cfg.host[0])
		copy(sc_cfg.host, sizeof sc_cfg.host, "localhost");
	copy(sc_cfg.node, sizeof sc_cfg.node, node && node[0] ? node : sc_cfg.host);
	for (char *p = sc_cfg.node; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
	if (!strcmp(sc_cfg.node, ".") || !strcmp(sc_cfg.node, ".."))
		copy(sc_cfg.node, sizeof sc_cfg.node, "_");
	sc_cfg.reinject = !(re && re[0] == '0');

	Dl_info di;
	if (dladdr((void *)sc_config_load, &di) && di.dli_fname)
		copy(sc_cfg.self_path, sizeof sc_cfg.self_path, di.dli_fname);

	if (!dir || !dir[0] || strlen(dir) >= sizeof sc_cfg.dir - 1)
		return;
	if (dir[0] != '/') {
		/* relative: anchor it now, before the program changes directory, and
		 * pass the absolute form to the programs it runs */
		char cwd[sizeof sc_cfg.dir];
		if (!getcwd(cwd, sizeof cwd) || strlen(cwd) + 1 + strlen(dir) >= sizeof sc_cfg.dir - 1)
			return;
		join(sc_cfg.dir, sizeof sc_cfg.dir, cwd, "/");
		size_t n = strlen(sc_cfg.dir);
		copy(sc_cfg.dir + n, sizeof sc_cfg.dir - n, dir);
	} else
		copy(sc_cfg.dir, sizeof sc_cfg.dir, dir);
	join(sc_cfg.env_dir, sizeof sc_cfg.env_dir, "SOCKCAP_DIR=", sc_cfg.dir);
	if (node && node[0]) {
		join(sc_cfg.env_node, sizeof sc_cfg.env_node, "SOCKCAP_NODE=", node);
		sc_cfg.has_env_node = 1;
	}
	/* LD_PRELOAD to re-insert: the one we were loaded with, or our own path. */
	if (pre && pre[0] && strlen(pre) < sizeof sc_cfg.env_preload - 12)
		join(sc_cfg.env_preload, sizeof sc_cfg.env_preload, "LD_PRELOAD=", pre);
	else if (sc_cfg.self_path[0])
		join(sc_cfg.env_preload, sizeof sc_cfg.env_preload, "LD_PRELOAD=", sc_cfg.self_path);
	sc_cfg.enabled = 1;
	sc_hot.enabled = 1;
}
