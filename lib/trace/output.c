/* output.c - output files that appear whole or not at all. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "output.h"

enum ist_status
ist_output_open(struct ist_output *o, const char *path, bool binary,
    struct ist_error *err)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (path == NULL || strcmp(path, "-") == 0) {
		if (binary && isatty(STDOUT_FILENO)) {
			ist_seterr(err, IST_EINVAL, "refusing to write binary "
			    "trace data to a terminal; use -o FILE or a pipe");
			return IST_EINVAL;
		}
		o->fd = STDOUT_FILENO;
		return IST_OK;
	}
	{
		struct stat st;
		/* a device or a FIFO (/dev/null, /dev/full), or a name of an
		 * open file (/dev/stdout, /proc/self/fd/N), which a rename
		 * would replace: write in place */
		if (stat(path, &st) == 0 && (!S_ISREG(st.st_mode) ||
		    strncmp(path, "/dev/", 5) == 0 ||
		    strncmp(path, "/proc/", 6) == 0)) {
			o->path = strdup(path);   /* named in errors only */
			if ((o->fd = open(path, O_WRONLY)) < 0) {
				int e = errno;
				ist_seterr(err, IST_EIO, "cannot open '%s': %s",
				    path, strerror(e));
				ist_at(err, IST_AT_OUTPUT);
				if (err)
					err->sys_errno = e;
				free(o->path);
				o->path = NULL;
				return IST_EIO;
			}
			return IST_OK;
		}
	}
	o->path = strdup(path);
	if (o->path == NULL || asprintf(&o->tmp, "%s.tmp.XXXXXX", path) < 0) {
		o->tmp = NULL;
		ist_output_abort(o);
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	if ((o->fd = mkstemp(o->tmp)) < 0) {
		int e = errno;
		ist_seterr(err, IST_EIO, "cannot create '%s': %s", path,
		    strerror(e));
		ist_at(err, IST_AT_OUTPUT);
		if (err)
			err->sys_errno = e;
		free(o->tmp);
		o->tmp = NULL;
		ist_output_abort(o);
		return IST_EIO;
	}
	/* a trace holds every process's command line (tokens, passwords
	 * given as arguments): only its owner reads it, as perf.data; text
	 * takes the umask's mode */
	if (!binary) {
		mode_t mask = umask(0);
		umask(mask);
		fchmod(o->fd, 0666 & ~mask);
	}
	return IST_OK;
}

enum ist_status
ist_output_commit(struct ist_output *o, struct ist_error *err)
{
	int e = 0;

	if (o->tmp == NULL) {
		if (o->fd > STDERR_FILENO && close(o->fd) != 0) {
			int ce = errno;
			o->fd = -1;
			if (o->path)
				ist_seterr(err, IST_EIO, "cannot write '%s': "
				    "%s", o->path, strerror(ce));
			else
				ist_seterr(err, IST_EIO, "cannot write "
				    "standard output: %s", strerror(ce));
			ist_at(err, IST_AT_OUTPUT);
			free(o->path);
			o->path = NULL;
			return IST_EIO;
		}
		o->fd = -1;
		free(o->path);
		o->path = NULL;
		return IST_OK;
	}
	if (close(o->fd) != 0)
		e = errno;
	o->fd = -1;
	if (e == 0 && rename(o->tmp, o->path) != 0)
		e = errno;
	if (e) {
		ist_seterr(err, IST_EIO, "cannot write '%s': %s", o->path,
		    strerror(e));
		ist_at(err, IST_AT_OUTPUT);
		if (err)
			err->sys_errno = e;
		ist_output_abort(o);
		return IST_EIO;
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return IST_OK;
}

void
ist_output_abort(struct ist_output *o)
{
	if (o->tmp) {
		if (o->fd >= 0)
			close(o->fd);
		unlink(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	o->fd = -1;
}

const char *
ist_output_fail(struct ist_output *o, struct ist_error *err)
{
	/* the writers say "cannot write ...: why" without knowing where */
	if (err->where == IST_AT_OUTPUT && err->sys_errno != 0 &&
	    (o->path == NULL || strstr(err->msg, o->path) == NULL))
		snprintf(err->msg, sizeof(err->msg), "cannot write %s%s%s: %s",
		    o->path ? "'" : "", o->path ? o->path : "standard output",
		    o->path ? "'" : "", strerror(err->sys_errno));
	ist_output_abort(o);
	return err->msg;
}

bool
ist_output_is_pipe(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}
