/*
 * config.h - InferScope settings and where each came from.
 * Precedence: command line > environment > .inferscope.yaml > defaults.
 * The library reads files it is given; the tools read the environment and
 * pass each variable in with ist_config_set(..., IST_SRC_ENV, ...).
 */
#ifndef IST_CONFIG_H
#define IST_CONFIG_H

#include "ist.h"

enum ist_source { IST_SRC_DEFAULT, IST_SRC_FILE, IST_SRC_ENV, IST_SRC_CLI };

enum ist_key {
	IST_K_LOG_LEVEL,         /* debug, info, warn, error */
	IST_K_TRACE_SIZE_MB,
	IST_K_SAMPLE_HZ,
	IST_K_PY_MIN_US,
	IST_K_SYNC_ERROR_MARGIN_US,
	IST_K_RULES_FILE,
	IST_K_STEP,              /* the scope, NVTX range or function of a
	                          * step; "" found */
	IST_NKEYS
};

struct yaml_document_s;

struct ist_config {
	char *value[IST_NKEYS];
	enum ist_source source[IST_NKEYS];
	char *where[IST_NKEYS];  /* "file:line" for values from a file */
	/* the file's rules: node, for ist_rules_configure (the file is
	 * parsed once); yaml NULL when it has none */
	struct yaml_document_s *yaml;
	int rules_node;
	char *yaml_path;
};

void ist_config_init(struct ist_config *c);
void ist_config_release(struct ist_config *c);
const char *ist_config_key_name(enum ist_key k);   /* "trace_size_mb" */
const char *ist_config_env_name(enum ist_key k);   /* or NULL */
const char *ist_source_name(enum ist_source s);
/* Validates and sets key (by name) unless a stronger source set it. */
enum ist_status ist_config_set(struct ist_config *c, const char *key,
    const char *value, enum ist_source src, const char *where,
    struct ist_error *err);
/* Loads a YAML mapping of settings, keeping its rules: node; a missing
 * file is not an error when optional.  Errors name the file, line and
 * column. */
enum ist_status ist_config_load_file(struct ist_config *c, const char *path,
    bool optional, struct ist_error *err);
long long ist_config_int(const struct ist_config *c, enum ist_key k);
const char *ist_config_str(const struct ist_config *c, enum ist_key k);

/* A YAML file parsed whole (libyaml's document); *out NULL when it is
 * missing and optional.  Syntax errors name the file, line and column. */
enum ist_status ist_yaml_load(const char *path, bool optional,
    struct yaml_document_s **out, struct ist_error *err);
void ist_yaml_free(struct yaml_document_s *d);
/* "'path':line:col: what" at node n of a document from ist_yaml_load, in
 * err; returns IST_EINVAL. */
struct yaml_node_s;
enum ist_status ist_yaml_error(struct ist_error *err, const char *path,
    const struct yaml_node_s *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
