/* thread_cpu.h - the calling thread's own CPU time in seconds, for the
 * test programs that work a set amount of it however loaded the machine
 * (rename_late.c, churn.c). */
#ifndef THREAD_CPU_H
#define THREAD_CPU_H

#include <time.h>

static inline double
thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
