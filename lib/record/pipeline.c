/* pipeline.c - a pipeline of child processes. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "pipeline.h"

extern char **environ;

char *
ist_tool_path(const char *name)
{
	char exe[PATH_MAX], cand[PATH_MAX + 256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;

	if (n > 0) {
		exe[n] = '\0';
		snprintf(cand, sizeof(cand), "%s/%s", dirname(exe), name);
		if (stat(cand, &st) == 0 && (st.st_mode & S_IXUSR))
			return strdup(cand);
	}
	return strdup(name);
}

#define MAXKIDS 8
static volatile sig_atomic_t kids[MAXKIDS];

static void
pass_on(int sig)
{
	int saved = errno;
	for (int i = 0; i < MAXKIDS; i++)
		if (kids[i] > 0)
			kill((pid_t)kids[i], sig);
	errno = saved;
}

enum ist_status
ist_spawn_pipeline(char *const *const *argv, int n, int in_fd, int out_fd,
    int *status, struct ist_error *err)
{
	struct sigaction ign = { 0 }, fwd = { 0 }, old[4];
	static const int sigs[4] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };
	pid_t pid[MAXKIDS];
	int prev = in_fd, p[2] = { -1, -1 }, e = 0;
	enum ist_status st = IST_OK;

	if (n < 1 || n > MAXKIDS) {
		ist_seterr(err, IST_EINVAL, "a pipeline of 1 to %d commands",
		    MAXKIDS);
		return IST_EINVAL;
	}
	for (int i = 0; i < n; i++)
		pid[i] = -1;
	ign.sa_handler = SIG_IGN;
	fwd.sa_handler = pass_on;
	sigemptyset(&fwd.sa_mask);
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], i < 2 ? &ign : &fwd, &old[i]);
	for (int i = 0; i < n; i++) {
		posix_spawn_file_actions_t fa;
		posix_spawnattr_t at;
		sigset_t def;
		int out = out_fd;

		pid[i] = -1;
		if (i < n - 1) {
			if (pipe2(p, O_CLOEXEC) != 0) {
				e = errno;
				break;
			}
			out = p[1];
		}
		posix_spawn_file_actions_init(&fa);
		if (prev >= 0)
			posix_spawn_file_actions_adddup2(&fa, prev, 0);
		if (out >= 0)
			posix_spawn_file_actions_adddup2(&fa, out, 1);
		/* the children get the signal dispositions of a shell's */
		posix_spawnattr_init(&at);
		sigemptyset(&def);
		for (int k = 0; k < 4; k++)
			sigaddset(&def, sigs[k]);
		posix_spawnattr_setsigdefault(&at, &def);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
		e = posix_spawnp(&pid[i], argv[i][0], &fa, &at, argv[i],
		    environ);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
		if (e != 0) {
			pid[i] = -1;
			status[i] = 127;
			ist_seterr(err, IST_EIO, "cannot run '%s': %s",
			    argv[i][0], strerror(e));
			st = IST_EIO;
		} else {
			kids[i] = pid[i];
		}
		if (prev >= 0 && prev != in_fd)
			close(prev);
		if (i < n - 1) {
			close(p[1]);
			prev = p[0];
		}
	}
	if (prev >= 0 && prev != in_fd)
		close(prev);
	for (int i = 0; i < n; i++) {
		int ws;
		if (pid[i] <= 0)
			continue;
		while (waitpid(pid[i], &ws, 0) < 0)
			if (errno != EINTR) {
				ws = 127 << 8;
				break;
			}
		kids[i] = 0;
		status[i] = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ?
		    128 + WTERMSIG(ws) : 1;
	}
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	if (e != 0 && st == IST_OK) {
		ist_seterr(err, IST_EIO, "cannot make a pipe: %s", strerror(e));
		st = IST_EIO;
	}
	return st;
}
