/* rename_late.c - a thread that takes its name (argv[1]) after the sampler
 * has first read it, as is-record's own thread in a program may, then
 * works 50 ms of CPU: the trace must name it by its last name.  Prints its
 * tid. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* the thread's own CPU time: 50 ms of work however loaded the machine */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
work(void *arg)
{
	volatile unsigned long n = 0;
	double end;

	printf("%d\n", gettid());
	fflush(stdout);
	usleep(100000);               /* ten sampler ticks under its first name */
	prctl(PR_SET_NAME, (const char *)arg);
	for (end = now() + 0.05; now() < end; )
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
