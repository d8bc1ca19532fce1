/*
 * common.h - what every tool's main() does alike, in one place (as jq's
 * util.c serves its main): the version line, the settings in their order
 * of precedence, and opening an input.  Tools may print and exit; these
 * do, with the tool's name first.
 */
#ifndef IST_TOOLS_COMMON_H
#define IST_TOOLS_COMMON_H

#include <stdint.h>

#include "config.h"

struct ist_rules;

/* "is-merge 0.1.0 (trace format 1.0)" on standard output. */
void tool_version(void);

/*
 * The settings in effect, for every tool alike: what the command line set
 * in cfg (IST_SRC_CLI), over the INFERSCOPE_* environment, over
 * ./.inferscope.yaml (parsed once), over the defaults.  With rules, also
 * the thresholds: defaults, the file's rules: section, then the rules file
 * (rules_file, the command line's, else the rules_file setting).  A bad
 * setting exits 2 with one line naming where it came from.
 */
void tool_settings(struct ist_config *cfg, struct ist_rules **rules,
    const char *rules_file);

/* A number of seconds >= 0 given to option opt (--delay, --from), in ns;
 * exits 2 naming opt when v is not one. */
int64_t tool_seconds(const char *opt, const char *v);

/* An input by name ("-": standard input); exits 1 naming it when it
 * cannot be opened. */
int tool_open_input(const char *path);

#endif
