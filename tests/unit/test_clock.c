/* test_clock.c - the clock fit of is-merge (lib/merge/clock.c), alone. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "clock.h"
#include "tap.h"

int
main(void)
{
	struct ist_clock_fit c;
	int64_t worst = 0;
	int added = 0;

	/* a GPU clock 1.5 s behind the host's, running 100 ppm fast: 200
	 * pairs 10 ms apart, exact */
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < 200; i++)
		added += ist_clock_add(&c, 7000000000 + (int64_t)i * 10000000,
		    5500000000 + (int64_t)i * 10001000) == 0;
	ok(added == 200 && c.n == 200, "200 pairs kept");
	ist_clock_fit(&c);
	ok(fabs(c.b * 1.0001 - 1) < 1e-12, "drift recovered: b = %.15f",
	    c.b);
	ok(c.resid < 1e-3, "no residual on exact pairs: %g ns", c.resid);
	ok(ist_clock_offset(&c) == 1500000000, "offset at the first pair: "
	    "%lld", (long long)ist_clock_offset(&c));
	for (int i = 0; i < 2000; i++) {
		int64_t dom = 5500000000 + (int64_t)i * 1000003;
		int64_t want = 7000000000 + (int64_t)llround((double)(dom -
		    5500000000) / 1.0001);
		int64_t d = ist_clock_map(&c, dom) - want;
		if (d < 0)
			d = -d;
		if (d > worst)
			worst = d;
	}
	ok(worst <= 1, "every domain time mapped within 1 ns: %lld",
	    (long long)worst);
	ist_clock_release(&c);

	/* +-400 ns of jitter, alternating: the fit goes through the middle
	 * and the residual says how far the pairs are from it */
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < 100; i++)
		ist_clock_add(&c, 1000000 + (int64_t)i * 1000000 +
		    (i % 2 ? 400 : -400), (int64_t)i * 1000000);
	ist_clock_fit(&c);
	ok(fabs(c.resid - 400) < 5, "residual of +-400 ns jitter: %.1f",
	    c.resid);
	ok(llabs(ist_clock_map(&c, 50000000) - 51000000) <= 20,
	    "the jitter averaged out: %lld", (long long)ist_clock_map(&c,
	    50000000));
	ist_clock_release(&c);

	/* two pairs: the line goes through both and leaves no residual, so
	 * the uncertainty is their offsets' disagreement, not 0 (a 100-step
	 * run on an H200 had two CUPTI pairs and said 0 ns) */
	memset(&c, 0, sizeof(c));
	ist_clock_add(&c, 1000000, 400);
	ist_clock_add(&c, 201000600, 200000400);
	ist_clock_fit(&c);
	ok(c.resid < 1e-6 && fabs(c.unc - 300) < 1e-6,
	    "two pairs 600 ns apart in offset: residual %g, uncertainty %g ns",
	    c.resid, c.unc);
	ok(ist_clock_map(&c, 100000400) == 101000300,
	    "two pairs: mapped through both: %lld",
	    (long long)ist_clock_map(&c, 100000400));
	ist_clock_release(&c);
	memset(&c, 0, sizeof(c));
	ist_clock_add(&c, 1000000, 400);
	ist_clock_add(&c, 201000000, 200000400);
	ist_clock_fit(&c);
	ok(c.unc == 0, "two pairs that agree: uncertainty %g", c.unc);
	ist_clock_release(&c);
	/* three: the residual is the uncertainty */
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < 3; i++)
		ist_clock_add(&c, 1000000 + (int64_t)i * 1000000 +
		    (i == 1 ? 300 : 0), (int64_t)i * 1000000);
	ist_clock_fit(&c);
	ok(c.unc == c.resid && c.resid > 100,
	    "three pairs: uncertainty = residual = %g ns", c.resid);
	ist_clock_release(&c);

	/* one pair: an offset, no drift */
	memset(&c, 0, sizeof(c));
	ist_clock_add(&c, 900, 100);
	ist_clock_fit(&c);
	ok(c.b == 1.0 && ist_clock_map(&c, 1100) == 1900,
	    "one pair: offset 800, no drift");
	ist_clock_release(&c);

	/* none: the identity */
	memset(&c, 0, sizeof(c));
	ist_clock_fit(&c);
	ok(c.fitted && c.resid == 0 && c.b == 1.0, "no pairs: no drift");
	ist_clock_release(&c);

	/* CUPTI's clock follows CLOCK_REALTIME: a pair a second, 300 ppm
	 * slow, and NTP steps it 5 ms ahead between pairs 60 and 61.  One
	 * line through all of them is off by ~2.5 ms on both sides */
	{
		int64_t bad = 0, step_at = 60;
		memset(&c, 0, sizeof(c));
		for (int i = 0; i < 120; i++) {
			int64_t host = 50000000000 + (int64_t)i * 1000000000;
			int64_t dom = 9000000000 + (int64_t)llround(
			    (double)i * 1000000000 * (1 - 300e-6)) +
			    (i > step_at ? 5000000 : 0);
			ist_clock_add(&c, host, dom);
		}
		ist_clock_fit(&c);
		for (int i = 0; i < 119; i++) {
			/* half a second after each pair, on its side */
			double f = (double)i + 0.5;
			int64_t host = 50000000000 + (int64_t)llround(f * 1e9);
			int64_t dom = 9000000000 + (int64_t)llround(f * 1e9 *
			    (1 - 300e-6)) + (i > step_at ? 5000000 : 0);
			int64_t e = llabs(ist_clock_map(&c, dom) - host);
			/* between pairs 60 and 61 the step's moment is
			 * unknown: not asked */
			if (i != step_at && e > bad)
				bad = e;
		}
		ok(c.steps == 1 && c.npiece == 2 && bad <= 2,
		    "a clock step splits the fit: %zu step, every time mapped "
		    "within %lld ns", c.steps, (long long)bad);
		ist_clock_release(&c);
	}

	/* Kineto can switch CUPTI's timestamps to the TSC: at pair 60 the
	 * domain goes from ns at 300 ppm slow to 2.5 ticks a ns from a new
	 * origin.  Pairs a second apart with +-200 ns of jitter in the host
	 * reading.  One step, each piece its own rate; a single line (or
	 * pieces at the first rate) maps the TSC side seconds off */
	{
		int64_t bad = 0, sw = 60;
		double worst_jit = 0;
		memset(&c, 0, sizeof(c));
		for (int i = 0; i < 80; i++) {
			int64_t host = 50000000000 + (int64_t)i * 1000000000;
			int64_t jit = (int64_t)((i * 7919) % 401) - 200;
			int64_t dom = i < sw ? 9000000000 + (int64_t)llround(
			    (double)i * 1e9 * (1 - 300e-6)) :
			    7000000000000 + (int64_t)llround((double)(i - sw) *
			    1e9 * 2.5);
			ist_clock_add(&c, host + jit, dom);
			if (llabs(jit) > worst_jit)
				worst_jit = (double)llabs(jit);
		}
		ist_clock_fit(&c);
		for (int i = 0; i < 79; i++) {
			double f = (double)i + 0.5;
			int64_t host = 50000000000 + (int64_t)llround(f * 1e9);
			int64_t dom = i < sw ? 9000000000 + (int64_t)llround(
			    f * 1e9 * (1 - 300e-6)) : 7000000000000 +
			    (int64_t)llround((f - sw) * 1e9 * 2.5);
			int64_t e = llabs(ist_clock_map(&c, dom) - host);
			/* the moment of the switch, between pairs 59 and 60,
			 * is unknown: not asked */
			if (i != sw - 1 && e > bad)
				bad = e;
		}
		ok(c.steps == 1 && c.npiece == 2 && c.outliers == 0 &&
		    bad <= worst_jit && fabs(c.piece[1].b - 0.4) < 1e-7,
		    "a change of rate (to a TSC) starts a piece at its own "
		    "rate: %zu step, %zu outliers, every time within %lld ns "
		    "(jitter %.0f)", c.steps, c.outliers, (long long)bad,
		    worst_jit);
		ist_clock_release(&c);
	}

	/* jitter alone never splits: 200 pairs 100 ms apart, +-2 us */
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < 200; i++)
		ist_clock_add(&c, (int64_t)i * 100000000 + (int64_t)((i * 104729)
		    % 4001) - 2000, 5000 + (int64_t)i * 100000000);
	ist_clock_fit(&c);
	ok(c.steps == 0 && c.outliers == 0 && c.npiece == 1,
	    "jitter alone: one piece, no outliers (%zu, %zu)", c.steps,
	    c.outliers);
	ist_clock_release(&c);

	/* a pair read across a preemption: 3 ms off, alone */
	{
		int64_t bad = 0;
		memset(&c, 0, sizeof(c));
		for (int i = 0; i < 50; i++)
			ist_clock_add(&c, 1000000000 + (int64_t)i * 100000000 +
			    (i == 20 ? 3000000 : 0), (int64_t)i * 100000000);
		ist_clock_fit(&c);
		for (int i = 0; i < 50; i++) {
			int64_t e = llabs(ist_clock_map(&c, (int64_t)i *
			    100000000) - (1000000000 + (int64_t)i * 100000000));
			if (e > bad)
				bad = e;
		}
		ok(c.outliers == 1 && c.steps == 0 && bad <= 1 &&
		    c.resid < 1, "a stray pair is left out: %zu outlier, worst "
		    "%lld ns, residual %.3g ns", c.outliers, (long long)bad,
		    c.resid);
		ist_clock_release(&c);
	}

	/* the last pair strays (read as the program exited): left out */
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < 10; i++)
		ist_clock_add(&c, (int64_t)i * 1000000000 + (i == 9 ? 800000 :
		    0), (int64_t)i * 1000000000);
	ist_clock_fit(&c);
	ok(c.outliers == 1 && ist_clock_map(&c, 9000000000) == 9000000000,
	    "a last pair alone off the line is left out");
	ist_clock_release(&c);
	return done();
}
