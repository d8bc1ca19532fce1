/* stream.h - an agent's output file, kept whatever the program does to
 * its file descriptors. */
#ifndef IST_STREAM_H
#define IST_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ist.h"

/*
 * A recorded program may close every descriptor it inherited
 * (os.closerange(3, N), a daemon closing 0..N, a sandbox), or put a file
 * of its own at our number (dup2, or an open that reuses it).  Before each
 * write the descriptor is checked to still be the stream's file (device
 * and inode); if it is not, it is left alone, not ours to close, and the
 * stream is opened again by its path and appended to.  What was written
 * stays; what the writer holds goes on.  A close and reuse between the
 * check and the write (microseconds, in another thread of the program)
 * is the one window left.
 */
struct ist_stream {
	int fd;
	dev_t dev;
	ino_t ino;
	unsigned reopened;      /* times the program took the fd from us */
	off_t size;             /* the file's size at the last check */
	char path[4096];
};

/* Creates path (or appends to it, with append) 0600; 0 or an errno. */
int ist_stream_open(struct ist_stream *s, const char *path, bool append);
/* An ist_sink_fn with ctx a struct ist_stream.  A write that fails half
 * way (a full disk, a file-size limit) is cut back, so that the file ends
 * with its last whole frame. */
int ist_stream_sink(void *ctx, const void *buf, size_t n);
/* Closes the stream's descriptor if it is still the stream's; 0 or an
 * errno from close(). */
int ist_stream_close(struct ist_stream *s);
/* n events that could not be written, and why: a line in <name>.lost
 * beside the stream (<name>.ist), which is-record turns into a loss record
 * and a warning. */
void ist_stream_lost(const struct ist_stream *s, uint64_t n, const char *why);

/* What is-record asks of every collector, from its environment: the trace
 * budget in bytes (INFERSCOPE_TRACE_SIZE_MB, --trace-size-mb; 100 MiB),
 * and whether to keep only the newest frames within it (INFERSCOPE_RING,
 * --ring). */
uint64_t ist_env_budget(void);
bool ist_env_ring(void);
/* INFERSCOPE_SAMPLE=1: is-record samples /proc (thread.cpu_ns) */
bool ist_env_sample(void);

/*
 * A flight recorder: whole frames, newest last; beyond cap_bytes the
 * oldest are forgotten (one is always kept) and their events counted in
 * lost, for a loss record.
 */
/* When an event was complete: its end, or its time; INT64_MAX for none.
 * A frame's oldest is the age of the frame. */
static inline int64_t
ist_event_done(const struct ist_event *ev)
{
	return IST_HAS(ev, IST_F_END) ? ev->end_ns : IST_HAS(ev, IST_F_TS) ?
	    ev->ts_ns : INT64_MAX;
}

struct ist_frame;
struct ist_flight {
	struct ist_frame **f;
	size_t first, n, cap;
	uint64_t bytes, cap_bytes, lost;
	uint64_t held;           /* the kept frames' pages, in bytes */
	uint64_t said;           /* the owner's recorder bytes as last said
	                          * (process.recorder_bytes), kept with each
	                          * frame; ist_flight_write leaves there the
	                          * oldest written frame's (0: none) */
	uint64_t events_seen;    /* the writer's count at the last frame */
	bool dumped;             /* a window was written mid-run */
	int64_t dump_at;         /* when the last one ended */
};

/* Keeps a copy of frame buf (n bytes); events is the writer's count of
 * events so far (ist_writer_stats), the frame's own being those since the
 * last one; t0 the earliest time an event of the frame was complete
 * (ist_event_done; INT64_MAX: none).  0 or ENOMEM. */
int ist_flight_keep(struct ist_flight *fl, const void *buf, size_t n,
    uint64_t events, int64_t t0);
/*
 * Writes the kept frames to s, oldest first, and forgets them; adds the
 * events of those written to *events.  *lost: the events overwritten
 * since the last write, for a loss record; *from: where the window
 * begins when a capture record must say so (older frames were
 * overwritten, or a window was written before), else INT64_MIN.  0 or an
 * errno.
 */
int ist_flight_write(struct ist_flight *fl, struct ist_stream *s,
    uint64_t *events, uint64_t *lost, int64_t *from);
/* After a window written mid-run (a dump, ending at `at`, on the
 * stream's clock): the recorder keeps on, its next window from there. */
void ist_flight_resume(struct ist_flight *fl, int64_t at);
/* Forgets the kept frames unwritten (the parent's, after a fork). */
void ist_flight_release(struct ist_flight *fl);

/*
 * What a collector last said of its memory beyond its buffers of events
 * (process.recorder_bytes, process.cuda_recorder_bytes): its writer's
 * buffers, allocated whole as it starts or grown for a record past a
 * frame's room, and its flight recorder's kept frames; and when it kept
 * the first frame since that say (0: none), the time to say them at: as
 * of before the frame's copy was made.
 */
struct ist_said {
	uint64_t wbytes, fheld;
	int64_t fkept;
};

/* A frame is kept at now */
static inline void
ist_said_kept(struct ist_said *s, int64_t now)
{
	if (s->fkept == 0)
		s->fkept = now;
}

/* The writer's bytes, wb now, or fl's kept frames changed since said */
static inline bool
ist_said_changed(const struct ist_said *s, uint64_t wb,
    const struct ist_flight *fl)
{
	return wb != s->wbytes || fl->held != s->fheld;
}

/* Takes wb and fl's kept frames as said; when to say them: as of the
 * first frame kept since the last say, else now */
static inline int64_t
ist_said_take(struct ist_said *s, uint64_t wb, const struct ist_flight *fl,
    int64_t now)
{
	int64_t t = s->fkept ? s->fkept : now;

	s->wbytes = wb;
	s->fheld = fl->held;
	s->fkept = 0;
	return t;
}

/* What it said they hold */
static inline uint64_t
ist_said_bytes(const struct ist_said *s)
{
	return s->wbytes + s->fheld;
}

#endif
