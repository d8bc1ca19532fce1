/*
 * cupti_load.c - libcupti, found and opened at run time (cupti_load.h).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupti_load.h"

#ifndef IST_CUPTI_BUILD_LIBDIR
#define IST_CUPTI_BUILD_LIBDIR "/usr/local/cuda/lib64"
#endif

struct search {
	struct ist_cupti_api *a;
	char tried[1024];        /* what did not do, for the warning */
	int major;               /* the driver's, 0 unknown */
};

int
ist_cupti_major(uint32_t version)
{
	if (version >= 130000)
		return (int)(version / 10000);
	if (version >= IST_CUPTI_MIN_VERSION && version < 100)
		return 12;
	return 0;
}

static void
tried(struct search *s, const char *what)
{
	size_t n = strlen(s->tried);

	if (n + strlen(what) + 3 < sizeof(s->tried))
		snprintf(s->tried + n, sizeof(s->tried) - n, "%s%s",
		    n ? "; " : "", what);
}

/* Takes so if it has what the collector needs and is new enough. */
static bool
take(struct search *s, void *so, const char *from)
{
	struct ist_cupti_api *a = s->a;
	char msg[600];
	uint32_t v = 0;
	bool ok = true;

#define IST_CUPTI_SYM(n) a->n = (__typeof__(a->n))dlsym(so, #n);
	IST_CUPTI_REQUIRED(IST_CUPTI_SYM)
	IST_CUPTI_OPTIONAL(IST_CUPTI_SYM)
#undef IST_CUPTI_SYM
#define IST_CUPTI_HAS(n) ok = ok && a->n != NULL;
	IST_CUPTI_REQUIRED(IST_CUPTI_HAS)
#undef IST_CUPTI_HAS
	if (!ok || a->cuptiGetVersion(&v) != CUPTI_SUCCESS) {
		snprintf(msg, sizeof(msg), "%s: not a CUPTI", from);
		tried(s, msg);
		dlclose(so);
		return false;
	}
	if (ist_cupti_major(v) == 0) {
		snprintf(msg, sizeof(msg), "%s: CUPTI API version %u, older "
		    "than CUDA 12.0's", from, v);
		tried(s, msg);
		dlclose(so);
		return false;
	}
	a->so = so;
	a->version = v;
	snprintf(a->path, sizeof(a->path), "%s", from);
	return true;
}

static bool
try_path(struct search *s, const char *path)
{
	void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (so == NULL) {
		/* a missing file is not worth a word; a broken one is */
		if (strchr(path, '/') != NULL && access(path, F_OK) == 0)
			tried(s, dlerror());
		return false;
	}
	return take(s, so, path);
}

/* ---- a copy already loaded ---- */

struct phdr_walk {
	char cupti[4096];        /* a loaded libcupti */
	char sp[4][4096];        /* site-packages of loaded nvidia wheels */
	int nsp;
};

static int
each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct phdr_walk *w = arg;
	const char *p = info->dlpi_name, *base, *nv;

	(void)size;
	if (p == NULL || *p == '\0')
		return 0;
	base = strrchr(p, '/');
	base = base ? base + 1 : p;
	if (strncmp(base, "libcupti", 8) == 0 && w->cupti[0] == '\0')
		snprintf(w->cupti, sizeof(w->cupti), "%s", p);
	if ((nv = strstr(p, "/nvidia/")) != NULL && w->nsp < 4) {
		int len = (int)(nv - p) + 1;
		for (int i = 0; i < w->nsp; i++)
			if (strncmp(w->sp[i], p, (size_t)len) == 0 &&
			    w->sp[i][len] == '\0')
				return 0;
		snprintf(w->sp[w->nsp++], sizeof(w->sp[0]), "%.*s", len, p);
	}
	return 0;
}

static bool
loaded(struct search *s, struct phdr_walk *w)
{
	void *so;

	if (w->cupti[0] && (so = dlopen(w->cupti, RTLD_NOW | RTLD_NOLOAD)))
		return take(s, so, w->cupti);
	return false;
}

/* ---- the driver's major version ---- */

static int
driver_major(void)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*getv)(int *) = NULL;
	int v = 0;

	if (cu != NULL)
		getv = (int (*)(int *))dlsym(cu, "cuDriverGetVersion");
	if (getv == NULL)
		getv = (int (*)(int *))dlsym(RTLD_DEFAULT,
		    "cuDriverGetVersion");
	if (getv == NULL || getv(&v) != 0)
		v = 0;
	if (cu != NULL)
		dlclose(cu);
	return v / 1000;
}

/* majors to try, newest first, none newer than the driver's */
static int
majors(const struct search *s, int out[2])
{
	int n = 0;

	if (s->major == 0 || s->major >= 13)
		out[n++] = 13;
	if (s->major == 0 || s->major >= 12)
		out[n++] = 12;
	return n;
}

static bool
in_dir(struct search *s, const char *dir)
{
	char p[4200];
	int m[2], nm = majors(s, m);

	for (int i = 0; i < nm; i++) {
		snprintf(p, sizeof(p), "%s/libcupti.so.%d", dir, m[i]);
		if (try_path(s, p))
			return true;
	}
	snprintf(p, sizeof(p), "%s/libcupti.so", dir);
	return try_path(s, p);
}

static bool
wheels(struct search *s, const struct phdr_walk *w)
{
	char d[4200];
	int m[2], nm = majors(s, m);

	for (int i = 0; i < w->nsp; i++) {
		for (int j = 0; j < nm; j++) {
			snprintf(d, sizeof(d), "%snvidia/cu%d/lib", w->sp[i],
			    m[j]);
			if (in_dir(s, d))
				return true;
		}
		snprintf(d, sizeof(d), "%snvidia/cuda_cupti/lib", w->sp[i]);
		if (in_dir(s, d))
			return true;
	}
	return false;
}

static bool
toolkit(struct search *s, const char *home)
{
	char d[4200];

	if (home == NULL || *home == '\0')
		return false;
	snprintf(d, sizeof(d), "%s/lib64", home);
	if (in_dir(s, d))
		return true;
	snprintf(d, sizeof(d), "%s/extras/CUPTI/lib64", home);
	return in_dir(s, d);
}

int
ist_cupti_load(struct ist_cupti_api *a, char *why, size_t n)
{
	struct search s = { .a = a };
	struct phdr_walk w = { .nsp = 0 };
	const char *env = getenv("INFERSCOPE_CUPTI");
	char name[32];
	int m[2], nm;

	memset(a, 0, sizeof(*a));
	if (env && *env) {
		if (try_path(&s, env))
			return 0;
		snprintf(why, n, "INFERSCOPE_CUPTI=%s cannot be used: %s", env,
		    s.tried[0] ? s.tried : "no such library");
		return -1;
	}
	dl_iterate_phdr(each_object, &w);
	if (loaded(&s, &w))
		return 0;
	s.major = driver_major();
	nm = majors(&s, m);
	for (int i = 0; i < nm; i++) {
		snprintf(name, sizeof(name), "libcupti.so.%d", m[i]);
		if (try_path(&s, name))
			return 0;
	}
	if (wheels(&s, &w) || toolkit(&s, getenv("CUDA_HOME")) ||
	    toolkit(&s, "/usr/local/cuda") ||
	    in_dir(&s, IST_CUPTI_BUILD_LIBDIR))
		return 0;
	snprintf(why, n, "no libcupti for CUDA 12 or 13 found (loaded, "
	    "library path, nvidia wheels, CUDA_HOME, /usr/local/cuda)%s%s",
	    s.tried[0] ? ": " : "", s.tried);
	return -1;
}
