/* fuzz_reader.c - libFuzzer target: any bytes through the trace reader. */
#include <stdint.h>
#include <stdlib.h>

#include "memsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct memsrc m = { data, size, 0, size > 0 ? 1 + data[0] % 97 : 0 };
	struct ist_reader *r;
	struct ist_error e;
	struct ist_buf json = { 0 };
	const struct ist_event *ev;

	if (ist_reader_new(&r, mem_source, &m, "fuzz", &e) != IST_OK)
		return 0;
	while (ist_reader_next(r, &ev, &e) == IST_OK) {
		json.n = 0;
		(void)ist_event_to_json(ev, &json, &e);
	}
	ist_reader_free(r);
	ist_buf_release(&json);
	return 0;
}
