/* capture.c - is-record's side of the capture switch (capture.h): the page,
 * the --delay and --duration timers, SIGUSR2, the flight recorder's
 * SIGUSR1, and a capture record per switch in the sampler's stream. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "record_int.h"

int
rec_capture_start(struct sampler *s, const struct ist_record_opts *o,
    const char *dir)
{
	char path[4400];
	struct ist_capture *c;
	void *m;
	int fd, e;
	bool on;

	snprintf(path, sizeof(path), "%s/" IST_CAPTURE_FILE, dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (ftruncate(fd, sizeof(*c)) != 0 || (m = mmap(NULL, sizeof(*c),
	    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		e = errno;
		close(fd);
		unlink(path);
		return e;
	}
	close(fd);
	c = m;
	c->size = sizeof(*c);
	c->api = o->capture_api;
	for (int i = 0; i < o->nnvtx && i < IST_CAPTURE_NVTX; i++) {
		snprintf(c->nvtx[i], sizeof(c->nvtx[i]), "%s", o->nvtx[i].name);
		c->nvtx_count[i] = o->nvtx[i].count;
		c->nvtx_n++;
	}
	on = o->delay_ns <= 0 && !o->capture_api && o->nnvtx == 0;
	c->hist[0] = (struct ist_capture_switch){ ist_capture_now_ns(),
	    ist_capture_tsc(), (int32_t)getpid(), on, IST_CW_START, 0 };
	c->on = on;
	c->n = 1;
	c->dump_exit = o->dump_on == 0 || (o->dump_on & IST_DUMP_ON_EXIT);
	s->dump_on = o->ring ? o->dump_on : 0;
	s->cap_delay_at = o->delay_ns > 0 ? c->hist[0].ns + o->delay_ns : 0;
	s->cap_end_at = o->duration_ns > 0 ? c->hist[0].ns +
	    (o->delay_ns > 0 ? o->delay_ns : 0) + o->duration_ns : 0;
	c->magic = IST_CAPTURE_MAGIC;  /* made before the command starts */
	s->cap = c;
	return 0;
}

int64_t
rec_capture_next(const struct sampler *s)
{
	int64_t t = INT64_MAX;

	if (s->cap_delay_at && s->cap_delay_at < t)
		t = s->cap_delay_at;
	if (s->cap_end_at && s->cap_end_at < t)
		t = s->cap_end_at;
	return t;
}

/* The switches not yet written, each a capture record. */
static void
write_switches(struct sampler *s)
{
	struct ist_capture *c = s->cap;
	uint64_t n = atomic_load_explicit(&c->n, memory_order_acquire);

	if (n - s->cap_written > IST_CAPTURE_HIST) {
		rec_note(s, IST_NOTE_WARN, "%llu switches of the capture "
		    "came faster than is-record could write them: they are "
		    "missing from the trace", (unsigned long long)(n -
		    s->cap_written - IST_CAPTURE_HIST));
		s->cap_written = n - IST_CAPTURE_HIST;
	}
	for (; s->cap_written < n; s->cap_written++) {
		const struct ist_capture_switch *w =
		    &c->hist[s->cap_written % IST_CAPTURE_HIST];
		struct ist_event ev;
		char why[IST_CAPTURE_NAME + 8];

		/* a recording that begins on says nothing of it: a trace
		 * without capture records was recorded whole */
		if (s->cap_written == 0 && w->on)
			continue;

		if (w->why == IST_CW_NVTX && w->arg < IST_CAPTURE_NVTX)
			snprintf(why, sizeof(why), "nvtx:%s", c->nvtx[w->arg]);
		else
			snprintf(why, sizeof(why), "%s",
			    ist_capture_reason(w->why));
		ist_capture_event(&ev, w->pid, w->ns, w->on, why);
		rec_swrite(s, &ev);
	}
}

void
rec_capture_tick(struct sampler *s, int64_t now, bool toggle, bool dump)
{
	struct ist_capture *c = s->cap;

	if (c == NULL)
		return;
	if (s->cap_delay_at && now >= s->cap_delay_at) {
		s->cap_delay_at = 0;
		ist_capture_set(c, true, IST_CW_DELAY, 0, false);
	}
	if (s->cap_end_at && now >= s->cap_end_at) {
		s->cap_end_at = 0;
		ist_capture_set(c, false, IST_CW_DURATION, 0, true);
		rec_note(s, IST_NOTE_INFO, "--duration is over: recording "
		    "stops; the command runs on");
	}
	if (toggle) {
		bool on = !atomic_load(&c->on);
		if (ist_capture_set(c, on, IST_CW_SIGNAL, 0, false))
			rec_note(s, IST_NOTE_INFO, "SIGUSR2: recording %s",
			    on ? "resumes" : "pauses");
		else
			rec_note(s, IST_NOTE_WARN, "SIGUSR2: the capture is "
			    "over (--duration, or the last NVTX capture "
			    "range); recording stays off");
	}
	if (dump) {
		ist_capture_dump(c, IST_DW_SIGNAL);
		rec_note(s, IST_NOTE_INFO, "SIGUSR1: the flight recorders "
		    "write their windows");
	}
	write_switches(s);
}

void
rec_capture_end(struct sampler *s)
{
	if (s->cap == NULL)
		return;
	write_switches(s);
	if (s->dump_on && !(s->dump_on & IST_DUMP_ON_EXIT) &&
	    atomic_load(&s->cap->dumps) == 0)
		rec_note(s, IST_NOTE_WARN, "--dump-on: no dump came (%s): the "
		    "trace holds no event of the recorded processes",
		    s->dump_on & IST_DUMP_ON_SIGNAL ? "SIGUSR1 to is-record, "
		    "inferscope.dump()" : "inferscope.dump()");
	munmap(s->cap, sizeof(*s->cap));
	s->cap = NULL;
}
