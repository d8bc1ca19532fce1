/* config.c - settings with their sources; .inferscope.yaml via libyaml. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int
ist_yaml_skip(int skip, int type)
{
	bool open = type == YAML_MAPPING_START_EVENT ||
	    type == YAML_SEQUENCE_START_EVENT;
	bool close = type == YAML_MAPPING_END_EVENT ||
	    type == YAML_SEQUENCE_END_EVENT;

	if (skip < 0)
		return open ? 1 : 0;
	return skip + (open ? 1 : close ? -1 : 0);
}

enum ist_status
ist_config_load_file(struct ist_config *c, const char *path, bool optional,
    struct ist_error *err)
{
	yaml_parser_t p;
	yaml_event_t ev;
	FILE *f = fopen(path, "r");
	enum ist_status st = IST_OK;
	char key[128] = "", where[4200];
	int depth = 0, state = 0; /* 0: want key, 1: want value */
	int skip = 0;             /* inside the value of rules: */
	bool done = false;

	if (f == NULL) {
		if (optional && errno == ENOENT)
			return IST_OK;
		ist_seterr(err, IST_EIO, "cannot open '%s': %s", path,
		    strerror(errno));
		return IST_EIO;
	}
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	while (!done) {
		if (!yaml_parser_parse(&p, &ev)) {
			ist_seterr(err, IST_EINVAL, "'%s':%zu:%zu: %s", path,
			    p.problem_mark.line + 1, p.problem_mark.column + 1,
			    p.problem ? p.problem : "invalid YAML");
			st = IST_EINVAL;
			break;
		}
		if (skip) {
			/* `rules:` holds is-analyze's thresholds
			 * (ist_rules_load reads them) */
			if ((skip = ist_yaml_skip(skip, ev.type)) == 0)
				state = 0;
			yaml_event_delete(&ev);
			continue;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_MAPPING_START_EVENT:
			if (++depth > 1)
				goto nested;
			break;
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_SEQUENCE_START_EVENT:
		nested:
			ist_seterr(err, IST_EINVAL, "'%s':%zu:%zu: %s", path,
			    ev.start_mark.line + 1, ev.start_mark.column + 1,
			    state ? "a setting's value must be a scalar" :
			    "settings must be a mapping of names to values");
			st = IST_EINVAL;
			done = true;
			break;
		case YAML_SCALAR_EVENT:
			if (depth != 1) {
				ist_seterr(err, IST_EINVAL, "'%s':%zu:%zu: "
				    "settings must be a mapping of names to "
				    "values", path, ev.start_mark.line + 1,
				    ev.start_mark.column + 1);
				st = IST_EINVAL;
				done = true;
				break;
			}
			if (state == 0) {
				snprintf(key, sizeof(key), "%s",
				    (char *)ev.data.scalar.value);
				state = 1;
				if (strcmp(key, "rules") == 0)
					skip = -1;
				break;
			}
			snprintf(where, sizeof(where), "%s:%zu", path,
			    ev.start_mark.line + 1);
			{
				struct ist_error e;
				if (ist_config_set(c, key,
				    (char *)ev.data.scalar.value, IST_SRC_FILE,
				    where, &e) != IST_OK) {
					ist_seterr(err, IST_EINVAL,
					    "'%s':%zu:%zu: %s", path,
					    ev.start_mark.line + 1,
					    ev.start_mark.column + 1, e.msg);
					st = IST_EINVAL;
					done = true;
				}
			}
			state = 0;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	fclose(f);
	return st;
}
