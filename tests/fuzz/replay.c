/*
 * replay.c - runs a fuzz target over its corpus without libFuzzer, so that
 * make check (and the sanitizer build) replays every kept input.
 * usage: replay_X DIR|FILE ...   prints TAP.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count;

static void
one(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0, k;

	if (f == NULL) {
		printf("not ok - cannot open %s\n", path);
		exit(1);
	}
	do {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			if ((buf = realloc(buf, cap)) == NULL)
				abort();
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	count++;
}

static void
walk(const char *path)
{
	struct stat st;
	struct dirent **ents;
	int n;

	if (stat(path, &st) != 0) {
		printf("not ok - cannot stat %s\n", path);
		exit(1);
	}
	if (!S_ISDIR(st.st_mode)) {
		one(path);
		return;
	}
	if ((n = scandir(path, &ents, NULL, alphasort)) < 0)
		exit(1);
	for (int i = 0; i < n; i++) {
		char sub[4096];
		if (ents[i]->d_name[0] != '.') {
			snprintf(sub, sizeof(sub), "%s/%s", path,
			    ents[i]->d_name);
			walk(sub);
		}
		free(ents[i]);
	}
	free(ents);
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		walk(argv[i]);
	printf("1..1\nok 1 - replayed %d inputs\n", count);
	return 0;
}
