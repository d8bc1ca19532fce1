/* rename_late.c - a thread that takes its name (argv[1]) after the sampler
 * has first read it, as is-record's own thread in a program may, then
 * works 50 ms of CPU: the trace must name it by its last name.  Prints its
 * tid. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "thread_cpu.h"

static void *
work(void *arg)
{
	volatile unsigned long n = 0;
	double end;

	printf("%d\n", gettid());
	fflush(stdout);
	usleep(100000);               /* ten sampler ticks under its first name */
	prctl(PR_SET_NAME, (const char *)arg);
	/* 50 ms of its own CPU time, however loaded the machine */
	for (end = thread_cpu() + 0.05; thread_cpu() < end; )
		n++;
	usleep(300000);               /* its last reading: 30 ticks, however
	                               * late a loaded machine's sampler runs */
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t t;

	pthread_create(&t, NULL, work, argc > 1 ? argv[1] : "renamed-late");
	pthread_join(t, NULL);
	return 0;
}
