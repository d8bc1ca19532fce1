/* config.c - settings with their sources; .inferscope.yaml via libyaml. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "config.h"
#include "internal.h"

static const struct {
	const char *name, *env, *def;
	long long min, max;          /* integers; min > max: a string */
} keys[IST_NKEYS] = {
	[IST_K_LOG_LEVEL] = { "log_level", "INFERSCOPE_LOG_LEVEL", "info",
	    1, 0 },
	[IST_K_TRACE_SIZE_MB] = { "trace_size_mb", "INFERSCOPE_TRACE_SIZE_MB",
	    "100", 1, 65536 },
	[IST_K_SAMPLE_HZ] = { "sample_hz", "INFERSCOPE_SAMPLE_HZ", "100",
	    0, 10000 },
	[IST_K_PY_MIN_US] = { "py_min_us", "INFERSCOPE_PY_MIN_US", "0",
	    0, 60000000 },
	[IST_K_SYNC_ERROR_MARGIN_US] = { "sync_error_margin_us",
	    "INFERSCOPE_SYNC_ERROR_MARGIN_US", "1000", 0, 60000000 },
	[IST_K_RULES_FILE] = { "rules_file", NULL, "", 1, 0 },
	[IST_K_STEP] = { "step", "INFERSCOPE_STEP", "", 1, 0 },
};

void
ist_config_init(struct ist_config *c)
{
	memset(c, 0, sizeof(*c));
	for (int k = 0; k < IST_NKEYS; k++)
		c->value[k] = strdup(keys[k].def);
}

void
ist_config_release(struct ist_config *c)
{
	for (int k = 0; k < IST_NKEYS; k++) {
		free(c->value[k]);
		free(c->where[k]);
	}
	ist_yaml_free(c->yaml);
	free(c->yaml_path);
	memset(c, 0, sizeof(*c));
}

const char *
ist_config_key_name(enum ist_key k)
{
	return keys[k].name;
}

const char *
ist_config_env_name(enum ist_key k)
{
	return keys[k].env;
}

const char *
ist_source_name(enum ist_source s)
{
	static const char *n[] = { "default", "config file", "environment",
	    "command line" };
	return n[s];
}

enum ist_status
ist_config_set(struct ist_config *c, const char *key, const char *value,
    enum ist_source src, const char *where, struct ist_error *err)
{
	int k;

	for (k = 0; k < IST_NKEYS; k++)
		if (strcmp(keys[k].name, key) == 0)
			break;
	if (k == IST_NKEYS) {
		ist_seterr(err, IST_EINVAL, "unknown setting '%s'", key);
		return IST_EINVAL;
	}
	if (keys[k].min <= keys[k].max) {
		char *end;
		long long v;
		errno = 0;
		v = strtoll(value, &end, 10);
		if (errno || end == value || *end || v < keys[k].min ||
		    v > keys[k].max) {
			ist_seterr(err, IST_EINVAL, "%s must be an integer from "
			    "%lld to %lld, not '%s'", key, keys[k].min,
			    keys[k].max, value);
			return IST_EINVAL;
		}
	} else if (k == IST_K_LOG_LEVEL && strcmp(value, "debug") &&
	    strcmp(value, "info") && strcmp(value, "warn") &&
	    strcmp(value, "error")) {
		ist_seterr(err, IST_EINVAL, "log_level must be debug, info, "
		    "warn or error, not '%s'", value);
		return IST_EINVAL;
	}
	if (src < c->source[k])
		return IST_OK;
	free(c->value[k]);
	free(c->where[k]);
	c->value[k] = strdup(value);
	c->where[k] = where ? strdup(where) : NULL;
	c->source[k] = src;
	return IST_OK;
}

long long
ist_config_int(const struct ist_config *c, enum ist_key k)
{
	return strtoll(c->value[k], NULL, 10);
}

const char *
ist_config_str(const struct ist_config *c, enum ist_key k)
{
	return c->value[k];
}

/* A pipe made with its writer, as the shell's <(...) is, not a named
 * FIFO that may never get one. */
static bool
anonymous_pipe(int fd)
{
	char link[64], to[16];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, to, sizeof(to));
	return n >= 5 && memcmp(to, "pipe:", 5) == 0;
}

/*
 * A YAML alias (*name) is refused where it stands: the settings are few
 * and flat, and an alias as a key, or a rule's thresholds by reference,
 * read as something other than what the file seems to say.  A pass over
 * the events (the document loader resolves aliases without a trace);
 * syntax errors are left to the loader, which names them.
 */
static enum ist_status
no_alias(const char *buf, size_t len, const char *path,
    struct ist_error *err)
{
	yaml_parser_t p;
	yaml_event_t ev;
	enum ist_status st = IST_OK;
	bool done = false;

	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	while (!done && yaml_parser_parse(&p, &ev)) {
		if (ev.type == YAML_ALIAS_EVENT) {
			ist_seterr(err, IST_EINVAL, "'%s':%zu:%zu: a YAML "
			    "alias (*%.64s) is not accepted here: write the "
			    "value out", path, ev.start_mark.line + 1,
			    ev.start_mark.column + 1,
			    (const char *)ev.data.alias.anchor);
			st = IST_EINVAL;
			done = true;
		}
		done = done || ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return st;
}

/* Settings files are small: read whole (a pipe cannot be read twice). */
#define SETTINGS_MAX (1u << 20)

static enum ist_status
slurp(int fd, const char *path, struct ist_buf *b, struct ist_error *err)
{
	for (;;) {
		ssize_t k;
		if (b->n > SETTINGS_MAX) {
			ist_seterr(err, IST_ELIMIT, "'%s' is over the %u MiB a "
			    "settings file may take", path, SETTINGS_MAX >> 20);
			return IST_ELIMIT;
		}
		if (ist_buf_reserve(b, 4096) != 0) {
			ist_seterr(err, IST_ENOMEM, "out of memory");
			return IST_ENOMEM;
		}
		if ((k = read(fd, b->p + b->n, b->cap - b->n)) < 0 &&
		    errno == EINTR)
			continue;
		if (k < 0) {
			ist_seterr(err, IST_EIO, "cannot read '%s': %s", path,
			    strerror(errno));
			return IST_EIO;
		}
		if (k == 0)
			return IST_OK;
		b->n += (size_t)k;
	}
}

enum ist_status
ist_yaml_load(const char *path, bool optional, struct yaml_document_s **out,
    struct ist_error *err)
{
	yaml_parser_t p;
	yaml_document_t *d;
	enum ist_status st;
	struct stat sb;
	struct ist_buf buf = { 0 };
	int fd;

	*out = NULL;
	/* O_NONBLOCK: a FIFO with no writer would block the open for good;
	 * what is not a regular file (or the pipe of a <(...)) is refused
	 * below */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		if (optional && errno == ENOENT)
			return IST_OK;
		ist_seterr(err, IST_EIO, "cannot open '%s': %s", path,
		    strerror(errno));
		return IST_EIO;
	}
	if (fstat(fd, &sb) != 0 || !(S_ISREG(sb.st_mode) ||
	    (S_ISFIFO(sb.st_mode) && anonymous_pipe(fd)))) {
		close(fd);
		ist_seterr(err, IST_EINVAL, "'%s' is not a regular file",
		    path);
		return IST_EINVAL;
	}
	fcntl(fd, F_SETFL, 0);
	st = slurp(fd, path, &buf, err);
	close(fd);
	if (st == IST_OK && no_alias(buf.p, buf.n, path, err) != IST_OK)
		st = IST_EINVAL;
	if (st == IST_OK && (d = malloc(sizeof(*d))) == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		st = IST_ENOMEM;
	}
	if (st != IST_OK) {
		ist_buf_release(&buf);
		return st;
	}
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)buf.p, buf.n);
	if (!yaml_parser_load(&p, d)) {
		char ctx[160] = "";
		if (p.context)
			snprintf(ctx, sizeof(ctx), " (%s started at %zu:%zu)",
			    p.context, p.context_mark.line + 1,
			    p.context_mark.column + 1);
		ist_seterr(err, IST_EINVAL, "'%s':%zu:%zu: %s%s", path,
		    p.problem_mark.line + 1, p.problem_mark.column + 1,
		    p.problem ? p.problem : "invalid YAML", ctx);
		free(d);
		d = NULL;
	}
	yaml_parser_delete(&p);
	ist_buf_release(&buf);
	*out = d;
	return d ? IST_OK : IST_EINVAL;
}

void
ist_yaml_free(struct yaml_document_s *d)
{
	if (d) {
		yaml_document_delete(d);
		free(d);
	}
}

enum ist_status
ist_yaml_error(struct ist_error *err, const char *path,
    const struct yaml_node_s *n, const char *fmt, ...)
{
	char m[IST_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	ist_seterr(err, IST_EINVAL, "'%s':%zu:%zu: %s", path,
	    n->start_mark.line + 1, n->start_mark.column + 1, m);
	return IST_EINVAL;
}

enum ist_status
ist_config_load_file(struct ist_config *c, const char *path, bool optional,
    struct ist_error *err)
{
	static const char *const not_map = "settings must be a mapping of "
	    "names to values";
	yaml_document_t *d;
	yaml_node_t *root;
	yaml_node_pair_t *pr;
	enum ist_status st;
	char where[4200];

	if ((st = ist_yaml_load(path, optional, &d, err)) != IST_OK ||
	    d == NULL)
		return st;
	if ((root = yaml_document_get_root_node(d)) == NULL)
		goto out;                       /* an empty file */
	if (root->type != YAML_MAPPING_NODE) {
		st = ist_yaml_error(err, path, root, "%s", not_map);
		goto out;
	}
	for (pr = root->data.mapping.pairs.start;
	    pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(d, pr->key);
		yaml_node_t *v = yaml_document_get_node(d, pr->value);
		const char *key;
		struct ist_error e;

		if (k->type != YAML_SCALAR_NODE) {
			st = ist_yaml_error(err, path, k, "%s", not_map);
			goto out;
		}
		key = (const char *)k->data.scalar.value;
		if (strcmp(key, "rules") == 0) {
			/* the rules' thresholds: ist_rules_configure reads
			 * them from this document */
			if (c->yaml != d)       /* a file loaded before */
				ist_yaml_free(c->yaml);
			free(c->yaml_path);
			c->yaml = d;
			c->rules_node = pr->value;
			if ((c->yaml_path = strdup(path)) == NULL) {
				c->yaml = NULL;
				ist_seterr(err, IST_ENOMEM, "out of memory");
				st = IST_ENOMEM;
				goto out;
			}
			continue;
		}
		if (v->type != YAML_SCALAR_NODE) {
			st = ist_yaml_error(err, path, v, "a setting's value "
			    "must be a scalar");
			goto out;
		}
		snprintf(where, sizeof(where), "%s:%zu", path,
		    v->start_mark.line + 1);
		if (ist_config_set(c, key, (const char *)v->data.scalar.value,
		    IST_SRC_FILE, where, &e) != IST_OK) {
			st = ist_yaml_error(err, path, v, "%s", e.msg);
			goto out;
		}
	}
out:
	if (c->yaml != d)
		ist_yaml_free(d);
	return st;
}
