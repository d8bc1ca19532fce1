/*
 * fuzz_analyze.c - libFuzzer target: any bytes as a trace through the
 * analysis and every report format.  The first byte picks the format and,
 * as in fuzz_reader.c, whether the rest is framed here from raw CBOR (so
 * that mutations reach the records: odd) or taken as it is (even).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <zstd.h>

#include "analysis_io.h"
#include "rules.h"
#include "memsrc.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ist_rules *rules;
	static int devnull = -1;
	struct ist_reader *r;
	struct ist_error e;
	struct ist_buf framed = { 0 };
	struct memsrc m;
	struct ist_report_result res;
	char line[600];
	struct ist_report_opts o;

	if (size < 2)
		return 0;
	if (rules == NULL && (rules = ist_rules_new()) == NULL)
		abort();
	if (devnull < 0 && (devnull = open("/dev/null", O_WRONLY)) < 0)
		abort();
	if (data[0] & 1) {
		size_t bound = ZSTD_compressBound(size - 1);
		if (ist_buf_reserve(&framed, bound) == 0) {
			size_t k = ZSTD_compress(framed.p, bound, data + 1,
			    size - 1, 1);
			if (!ZSTD_isError(k))
				framed.n = k;
		}
		m = (struct memsrc){ (const uint8_t *)framed.p, framed.n, 0, 0 };
	} else {
		m = (struct memsrc){ data + 1, size - 1, 0, 0 };
	}
	if (ist_reader_new(&r, mem_source, &m, "fuzz", &e) != IST_OK)
		abort();
	o = (struct ist_report_opts){ .format = (enum ist_report_format)
	    ((data[0] >> 1) % 5), .rules = rules, .analyse = data[0] & 8 };
	(void)ist_report_trace(r, &o, devnull, &res, &e);
	for (size_t i = 0; ist_analysis_damage_line(res.analysis, i, true,
	    line, sizeof(line)); i++)
		;
	json_decref(res.analysis);
	ist_reader_free(r);
	ist_buf_release(&framed);
	return 0;
}
