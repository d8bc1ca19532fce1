/*
 * fake_driver.c - a CUDA program and, for the CUDA collector, the driver
 * that loads it, on a machine without either: it loads
 * CUDA_INJECTION64_PATH and calls InitializeInjection() as the driver
 * does at cuInit, then makes activity through the fake libcupti
 * (fake_cupti.c) that the collector found.  It exports cuDriverGetVersion
 * (FAKE_DRIVER_VERSION, default 13000), as libcuda does.
 *
 *   fake_driver SCENARIO
 *     basic      a device, launches (runtime and driver) with kernels, a
 *                pageable copy, a stream sync, a failed event query, and
 *                calls the collector leaves out
 *     threads N  N threads, each 100 launches and their kernels
 *     takeover   basic, then another client takes CUPTI's callbacks over
 *     term       basic, then SIGTERM to itself
 *     late       basic, and an exit handler that launches after the
 *                collector has stopped
 *     frames     basic, then 3 x (1.3 s idle, 100 launches): the
 *                collector's stream gets a frame a second, several here
 *     profiler   basic, cudaProfilerStart, 5 launches, cudaProfilerStop,
 *                3 launches
 *     dump       basic, SIGUSR1 to its parent (is-record --dump-on
 *                SIGUSR1), 0.6 s, then 10 launches
 *
 * FAKE_DLOPEN: a library to load first (RTLD_GLOBAL), as torch loads its
 * own libcupti or libcudart from its wheels.  It prints "app done" last.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((visibility("default"))) int cuDriverGetVersion(int *v);

int
cuDriverGetVersion(int *v)
{
	const char *e = getenv("FAKE_DRIVER_VERSION");
	*v = e ? atoi(e) : 13000;
	return 0;
}

static uint64_t (*now)(void);
static void (*kernel)(const char *, uint64_t, uint64_t, uint32_t, uint32_t);
static void (*api)(const char *, uint64_t, uint64_t, uint32_t);
static void (*copy)(int, int, uint64_t, uint64_t, uint64_t, uint32_t);
static void (*sync_)(int, uint64_t, uint64_t, uint32_t, int);
static void (*device)(uint32_t, const char *, const uint8_t *);
static void (*take_over)(void);
static void (*set_return)(int);
static void (*flush)(uint32_t);

static int
find_fake(void)
{
	void *so = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);

	if (so == NULL || (now = (uint64_t (*)(void))dlsym(so,
	    "fake_cupti_now")) == NULL)
		return -1;
	*(void **)&kernel = dlsym(so, "fake_cupti_kernel");
	*(void **)&api = dlsym(so, "fake_cupti_api");
	*(void **)&copy = dlsym(so, "fake_cupti_memcpy");
	*(void **)&sync_ = dlsym(so, "fake_cupti_sync");
	*(void **)&device = dlsym(so, "fake_cupti_device");
	*(void **)&take_over = dlsym(so, "fake_cupti_take_over");
	*(void **)&set_return = dlsym(so, "fake_cupti_return");
	*(void **)&flush = dlsym(so, "cuptiActivityFlushAll");
	return 0;
}

/* a launch through the runtime: the call, then its kernel; the kernel's
 * start */
static uint64_t
launch(const char *name, uint32_t corr)
{
	uint64_t t = now();
	api("cudaLaunchKernel_v7000", t, t + 3000, corr);
	kernel(name, t + 5000, t + 25000, corr, 7);
	return t + 5000;
}

static void
basic(void)
{
	static const uint8_t uuid[16] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4,
	    5, 6, 7, 8, 9, 10, 11, 12 };
	uint64_t t, k1, k2;

	device(0, "Fake H100", uuid);
	k1 = launch("_Z6matmulPfS_S_i", 1);
	/* the next launch's kernel starts after the first's on their stream,
	 * as a GPU runs them: its call may come within a microsecond of the
	 * first's (a quick machine), when 4 us after it had been first */
	t = now();
	k2 = t + 4000 > k1 ? t + 4000 : k1 + 1000;
	api("cuLaunchKernel", t, t + 2000, 2);
	kernel("triton_fused_0", k2, k2 + 5000, 2, 7);
	t = now();
	api("cudaGetDevice_v3020", t, t + 100, 3);
	api("cuCtxGetCurrent", t + 200, t + 300, 4);
	t = now();
	api("cudaMemcpyAsync_v3020", t, t + 1000, 5);
	copy(1 /* HTOD */, 1, 4u << 20, t + 2000, t + 402000, 5);
	t = now();
	api("cudaStreamSynchronize_v3020", t, t + 500000, 6);
	sync_(3 /* STREAM_SYNCHRONIZE */, t + 10, t + 499990, 6, 0);
	t = now();
	api("cudaEventQuery_v3020", t, t + 50, 7);
	sync_(1 /* EVENT_SYNCHRONIZE */, t + 5, t + 40, 7, 600);
	/* CUDA 13 (seen on an H200): a query that finds the work done is
	 * a sync record that returned success */
	t = now();
	api("cudaStreamQuery_v3020", t, t + 50, 8);
	/* and polls that find the next work not done, thousands of them
	 * before the record comes (120,000 in one second on the H200) */
	set_return(600 /* cudaErrorNotReady */);
	for (uint32_t i = 0; i < 5000; i++)
		api("cudaEventQuery_v3020", t + 60, t + 61, 9 + i);
	set_return(0);
	sync_(3 /* STREAM_SYNCHRONIZE */, t + 5, t + 40, 8, 0);
}

/* n launches of kernel name by thread id, their correlations from base */
static void
launches(const char *name, int id, int n, uint32_t base)
{
	for (int i = 0; i < n; i++)
		launch(name, base + (uint32_t)(id * n + i));
}

static void *
worker(void *arg)
{
	launches("worker_kernel", (int)(intptr_t)arg, 100, 1000);
	return NULL;
}

/* its resident memory, InferScope's in it */
static void
rss_line(const char *what)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, rss = 0;

	if (f && fscanf(f, "%ld %ld", &pages, &rss) == 2)
		printf("%s %ld\n", what, rss * sysconf(_SC_PAGESIZE));
	if (f)
		fclose(f);
	fflush(stdout);
}

/* enough launches to fill a few of the collector's activity buffers (2
 * MiB: 7,000 launches' records) */
static void *
filler(void *arg)
{
	launches("filler_kernel", (int)(intptr_t)arg, 20000, 100000);
	return NULL;
}

static void
late(void)
{
	launch("after_exit_kernel", 99);
	flush(1);
}

int
main(int argc, char **argv)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	const char *pre = getenv("FAKE_DLOPEN");
	const char *what = argc > 1 ? argv[1] : "basic";

	if (pre && dlopen(pre, RTLD_NOW | RTLD_GLOBAL) == NULL)
		fprintf(stderr, "fake_driver: %s\n", dlerror());
	if (strcmp(what, "late") == 0)
		atexit(late);   /* runs after the collector's, registered later */
	if (inj && *inj) {
		void *so = dlopen(inj, RTLD_NOW | RTLD_LOCAL);
		int (*init)(void) = so ? (int (*)(void))dlsym(so,
		    "InitializeInjection") : NULL;
		if (init)
			init();
		else
			fprintf(stderr, "fake_driver: %s\n", dlerror());
	}
	if (find_fake() != 0) {
		/* no CUPTI came: a CUDA program runs on, untraced */
		printf("app done\n");
		return 0;
	}
	basic();
	if (strcmp(what, "threads") == 0) {
		int n = argc > 2 ? atoi(argv[2]) : 8;
		pthread_t t[256];
		for (int i = 0; i < n && i < 256; i++)
			pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
		for (int i = 0; i < n && i < 256; i++)
			pthread_join(t[i], NULL);
	} else if (strcmp(what, "memory") == 0 ||
	    strcmp(what, "forkmem") == 0) {
		/* threads that fill buffers, then a second and a half of a
		 * program that allocates nothing (the collector's flush
		 * hands the buffers back); forkmem: then a child forked,
		 * which lives half a second more (a DataLoader's worker) */
		int n = argc > 2 ? atoi(argv[2]) : 8;
		pthread_t t[256];
		pid_t kid = -1;
		for (int i = 0; i < n && i < 256; i++)
			pthread_create(&t[i], NULL, filler, (void *)(intptr_t)i);
		for (int i = 0; i < n && i < 256; i++)
			pthread_join(t[i], NULL);
		usleep(1500000);
		if (strcmp(what, "forkmem") == 0 && (kid = fork()) == 0)
			usleep(500000);
		rss_line(kid == 0 ? "child" : "rss");
		if (kid == 0)
			_exit(0);
		if (kid > 0)
			waitpid(kid, NULL, 0);
	} else if (strcmp(what, "takeover") == 0) {
		/* ours hold this launch when the other client comes */
		flush(0);
		launch("before_takeover_kernel", 49);
		take_over();
		launch("after_takeover_kernel", 50);
	} else if (strcmp(what, "frames") == 0) {
		for (int r = 0; r < 3; r++) {
			usleep(1300000);
			for (int i = 0; i < 100; i++)
				launch("frames_kernel", (uint32_t)(3000 + 100 * r +
				    i));
		}
	} else if (strcmp(what, "profiler") == 0) {
		uint64_t t = now();
		api("cudaProfilerStart_v4000", t, t + 1000, 5000);
		for (int i = 0; i < 5; i++)
			launch("inside_kernel", (uint32_t)(5001 + i));
		t = now();
		api("cudaProfilerStop_v4000", t, t + 1000, 5010);
		for (int i = 0; i < 3; i++)
			launch("outside_kernel", (uint32_t)(5011 + i));
	} else if (strcmp(what, "dump") == 0) {
		kill(getppid(), SIGUSR1);
		usleep(600000);
		for (int i = 0; i < 10; i++)
			launch("after_dump_kernel", (uint32_t)(4000 + i));
	} else if (strcmp(what, "exec") == 0) {
		/* a CUDA program that becomes another (the same process):
		 * what the first wrote stays before the second's.  It waits
		 * (a minute at most) for the collector's first frame, which
		 * closes a second or more after these launches and holds
		 * them */
		char path[4200];
		struct stat st;
		for (int i = 0; i < 10; i++)
			launch("before_exec_kernel", (uint32_t)(6000 + i));
		snprintf(path, sizeof(path), "%s/%ld-cupti.ist",
		    getenv("INFERSCOPE_DIR"), (long)getpid());
		for (int i = 0; i < 1200 && (stat(path, &st) != 0 ||
		    st.st_size == 0); i++)
			usleep(50000);
		execl("/proc/self/exe", argv[0], "basic", (char *)NULL);
		perror("fake_driver: exec");
		return 1;
	} else if (strcmp(what, "execsh") == 0) {
		/* a CUDA program that fills buffers, then, once its stream
		 * has said them (a frame a second), runs a shell in its
		 * place that prints its own resident memory */
		filler((void *)(intptr_t)0);
		usleep(2500000);
		execl("/bin/sh", "sh", "-c", "sleep 0.6; read -r a b c < "
		    "/proc/$$/statm; echo \"sh $((b * 4096))\"", (char *)NULL);
		perror("fake_driver: exec");
		return 1;
	} else if (strcmp(what, "term") == 0) {
		printf("app done\n");
		fflush(stdout);
		kill(getpid(), SIGTERM);
		sleep(10);
		return 3;
	}
	printf("app done\n");
	return 0;
}
