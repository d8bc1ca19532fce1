/* churn.c - threads that end all the time, for the sampler's readings as
 * the kernel releases them: 1000 rounds of eight threads each working
 * 0.5 ms of CPU. */
#define _GNU_SOURCE
#include <pthread.h>

#include "thread_cpu.h"

static void *
work(void *arg)
{
	volatile unsigned long n = 0;

	for (double end = thread_cpu() + 0.0005; thread_cpu() < end; )
		n++;
	return arg;
}

int
main(void)
{
	for (int i = 0; i < 1000; i++) {
		pthread_t t[8];
		for (int k = 0; k < 8; k++)
			pthread_create(&t[k], NULL, work, NULL);
		for (int k = 0; k < 8; k++)
			pthread_join(t[k], NULL);
	}
	return 0;
}
