/* fuzz_config.c - libFuzzer target: any bytes as .inferscope.yaml (its
 * settings and its rules: section) and as an is-analyze rules file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rules.h"
#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ist_config c;
	struct ist_error e;
	char path[64];
	int fd = memfd_create("config", 0);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ist_config_init(&c);
	if (ist_config_load_file(&c, path, false, &e) != IST_OK &&
	    strstr(e.msg, path) == NULL && strstr(e.msg, "cannot open") == NULL)
		abort();   /* every error names the file */
	ist_config_release(&c);
	for (int mode = 0; mode < 2; mode++) {
		struct ist_rules *r = ist_rules_new();
		if (r == NULL)
			break;
		if (ist_rules_load(r, path, false, mode ? "rules" : NULL,
		    &e) != IST_OK && strstr(e.msg, path) == NULL &&
		    strstr(e.msg, "cannot open") == NULL)
			abort();
		json_decref(ist_rules_json(r));
		ist_rules_free(r);
	}
	close(fd);
	return 0;
}
