/* capture.c - a collector's view of the capture switch (capture.h). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture_agent.h"

struct ist_capture *ist_cap;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
attach(void)
{
	const char *dir = getenv("INFERSCOPE_DIR");
	char path[4200];
	struct stat st;
	void *m;
	int fd;

	if (dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s/" IST_CAPTURE_FILE, dir);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(*ist_cap) &&
	    (m = mmap(NULL, sizeof(*ist_cap), PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0)) != MAP_FAILED) {
		if (((struct ist_capture *)m)->magic == IST_CAPTURE_MAGIC &&
		    ((struct ist_capture *)m)->size == sizeof(*ist_cap))
			ist_cap = m;
		else
			munmap(m, sizeof(*ist_cap));
	}
	close(fd);
}

bool
ist_capture_attach(void)
{
	pthread_once(&once, attach);
	return ist_cap != NULL;
}

bool
ist_capture_switch(bool on, int why, int arg, bool close)
{
	return ist_cap != NULL && ist_capture_set(ist_cap, on, why, arg,
	    close);
}

void
ist_capture_last_dump(int64_t *ns, int *why)
{
	*ns = 0;
	*why = IST_DW_SIGNAL;
	if (ist_cap == NULL)
		return;
	ist_capture_lock(ist_cap);
	*ns = ist_cap->dump_ns;
	*why = (int)ist_cap->dump_why;
	ist_capture_unlock(ist_cap);
}

bool
ist_capture_ask_dump(int why)
{
	if (ist_cap == NULL)
		return false;
	ist_capture_dump(ist_cap, why);
	return true;
}

int
ist_capture_nvtx_which(const char *text)
{
	if (ist_cap == NULL || text == NULL)
		return -1;
	for (uint32_t i = 0; i < ist_cap->nvtx_n && i < IST_CAPTURE_NVTX; i++)
		if (strncmp(ist_cap->nvtx[i], text, IST_CAPTURE_NAME) == 0)
			return (int)i;
	return -1;
}

bool
ist_capture_nvtx_open(int which)
{
	struct ist_capture *c = ist_cap;
	int32_t left;

	if (c == NULL || which < 0 || which >= IST_CAPTURE_NVTX)
		return false;
	left = atomic_load(&c->nvtx_count[which]);
	while (left > 0 && !atomic_compare_exchange_weak(
	    &c->nvtx_count[which], &left, left - 1))
		;
	if (left == 0)
		return false;
	if (atomic_fetch_add(&c->nvtx_open, 1) == 0)
		ist_capture_set(c, true, IST_CW_NVTX, which, false);
	return true;
}

void
ist_capture_nvtx_close(int which)
{
	struct ist_capture *c = ist_cap;

	if (c == NULL || which < 0 || which >= IST_CAPTURE_NVTX)
		return;
	if (atomic_fetch_sub(&c->nvtx_open, 1) == 1) {
		/* the last capture range has closed: when no name has any
		 * left, recording is over */
		bool more = false;
		for (uint32_t i = 0; i < c->nvtx_n && i < IST_CAPTURE_NVTX; i++)
			more = more || atomic_load(&c->nvtx_count[i]) != 0;
		ist_capture_set(c, false, IST_CW_NVTX, which, !more);
	}
}
