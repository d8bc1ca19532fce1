/* common.c - what every tool's main() does alike (common.h). */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "common.h"
#include "ist.h"

void
tool_version(void)
{
	printf("%s %s (trace format %d.%d)\n", program_invocation_short_name,
	    IST_PACKAGE_VERSION, IST_VERSION_MAJOR, IST_VERSION_MINOR);
}

void
tool_settings(struct ist_config *cfg, struct ist_rules **rules,
    const char *rules_file)
{
	struct ist_error e;

	for (int k = 0; k < IST_NKEYS; k++) {
		const char *env = ist_config_env_name(k), *v;
		if (env && (v = getenv(env)) != NULL && *v &&
		    ist_config_set(cfg, ist_config_key_name(k), v,
		    IST_SRC_ENV, NULL, &e) != IST_OK)
			errx(2, "%s: %s", env, e.msg);
	}
	if (ist_config_load_file(cfg, ".inferscope.yaml", true, &e) != IST_OK)
		errx(2, "%s", e.msg);
	if (rules == NULL)
		return;
	if ((*rules = ist_rules_new()) == NULL)
		errx(1, "out of memory");
	if (ist_rules_configure(*rules, cfg, rules_file, &e) != IST_OK)
		errx(2, "%s", e.msg);
}

int
tool_open_input(const char *path)
{
	int fd;

	if (strcmp(path, "-") == 0)
		return STDIN_FILENO;
	if ((fd = open(path, O_RDONLY)) < 0)
		err(1, "cannot open '%s'", path);
	return fd;
}

int64_t
tool_seconds(const char *opt, const char *v)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end != '\0' || errno || !(d >= 0) || d > 1e9) {
		warnx("%s: '%s' is not a number of seconds", opt, v);
		exit(2);
	}
	return (int64_t)(d * 1e9);
}
