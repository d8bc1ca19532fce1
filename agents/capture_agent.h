/*
 * capture_agent.h - a collector's side of the capture switch
 * (lib/trace/capture.h): the recording's page, mapped once per agent.
 */
#ifndef IST_CAPTURE_AGENT_H
#define IST_CAPTURE_AGENT_H

#include "capture.h"

/* The page, NULL when the recording has none (an is-record older than
 * capture ranges, or none at all): then recording is always on. */
extern struct ist_capture *ist_cap;

/* Maps $INFERSCOPE_DIR/capture, once; whether there is a page. */
bool ist_capture_attach(void);

static inline bool
ist_capture_recording(void)
{
	return ist_cap == NULL ||
	    atomic_load_explicit(&ist_cap->on, memory_order_relaxed);
}

/* The switches so far (a new one: something to look at) */
static inline uint64_t
ist_capture_n(void)
{
	return ist_cap ? atomic_load_explicit(&ist_cap->n,
	    memory_order_acquire) : 0;
}

/* The flight recorder's dumps asked for so far */
static inline uint64_t
ist_capture_dumps(void)
{
	return ist_cap ? atomic_load_explicit(&ist_cap->dumps,
	    memory_order_acquire) : 0;
}

/* The last dump's time and reason (IST_DW_*). */
void ist_capture_last_dump(int64_t *ns, int *why);

/* Whether a ring is written at exit: --ring alone, or --dump-on exit. */
static inline bool
ist_capture_dump_exit(void)
{
	return ist_cap == NULL || ist_cap->dump_exit;
}

/* Asks every recorded process's flight recorder to write its window
 * (inferscope.dump()); false when there is no page. */
bool ist_capture_ask_dump(int why);

/* Switches, from this process (IST_CW_API, IST_CW_CUDA, IST_CW_NVTX); false
 * when there is no page, it was so already or the capture is closed. */
bool ist_capture_switch(bool on, int why, int arg, bool close);

/* Which --capture-range nvtx:NAME an NVTX range of name text is (0 to
 * IST_CAPTURE_NVTX - 1), -1 when none. */
int ist_capture_nvtx_which(const char *text);
/*
 * A capture range opens: true when it opens a window (its name has ranges
 * left to record), and then it is closed by ist_capture_nvtx_close().
 * Recording is on from the first open capture range to the last one's
 * end, and over when no name has ranges left.
 */
bool ist_capture_nvtx_open(int which);
void ist_capture_nvtx_close(int which);

#endif
