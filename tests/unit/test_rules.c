/*
 * test_rules.c - every key a rule reads is one the analyzer writes.
 *
 * usage: test_rules TRACE...  (the scenarios of tests/py/scenarios.py,
 * encoded by tests/unit.bats)
 *
 * A rule reads the analysis with ist_jnum, ist_jint and ist_jstr, which
 * give 0 or "" for an absent key: a key misspelt, or renamed in the
 * analyzer, would make a rule silently never fire.  Each trace is analysed
 * with the rules run, and every key a rule asked for and did not find is
 * counted; none may be absent.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis_io.h"
#include "rules.h"
#include "tap.h"

#define MAXKEYS 256

static struct {
	char *key;
	unsigned n;
} absent[MAXKEYS];
static size_t nabsent;

static void
on_absent(const char *key)
{
	size_t i;

	for (i = 0; i < nabsent; i++)
		if (strcmp(absent[i].key, key) == 0)
			break;
	if (i == nabsent) {
		if (nabsent == MAXKEYS)
			return;
		absent[nabsent++].key = strdup(key);
	}
	absent[i].n++;
}

int
main(int argc, char **argv)
{
	struct ist_rules *rules = ist_rules_new();
	int analysed = 0;

	for (int i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);
		struct ist_reader *r;
		struct ist_error e;
		json_t *an = NULL;

		if (fd < 0 || ist_reader_new(&r, ist_fd_source, &fd, argv[i],
		    &e) != IST_OK) {
			printf("# cannot read %s\n", argv[i]);
			continue;
		}
		ist_rules_absent = on_absent;
		if (ist_analyze_trace(r, NULL, false, rules, NULL, NULL, &an, &e) ==
		    IST_OK && an != NULL)
			analysed++;
		ist_rules_absent = NULL;
		json_decref(an);
		ist_reader_free(r);
		close(fd);
	}
	ok(analysed == argc - 1, "%d of %d scenarios analysed", analysed,
	    argc - 1);
	/* the hook sees what it is for: a key the object lacks */
	{
		json_t *o = json_pack("{s:i}", "there", 1);
		ist_rules_absent = on_absent;
		(void)ist_jnum(o, "there");
		(void)ist_jint(o, "not_there");
		ist_rules_absent = NULL;
		ok(nabsent == 1 && strcmp(absent[0].key, "not_there") == 0,
		    "a key read and absent is seen, one present is not");
		json_decref(o);
		free(absent[0].key);
		nabsent = 0;
	}
	for (size_t i = 0; i < nabsent; i++)
		printf("# absent: %s (%u reads)\n", absent[i].key,
		    absent[i].n);
	ok(nabsent == 0, "every key a rule reads is in the analysis: %zu "
	    "absent", nabsent);
	ist_rules_free(rules);
	return done();
}
