/*
 * pipeline.h - running the tools as a pipeline, for the inferscope command:
 * the pipe is the graph.
 */
#ifndef IST_PIPELINE_H
#define IST_PIPELINE_H

#include "ist.h"

/* The path of an InferScope tool beside the running program (the build
 * tree or the install), else the bare name for a PATH search.  Free it. */
char *ist_tool_path(const char *name);

/*
 * Runs n commands connected by pipes, the first reading in_fd (-1: the
 * caller's standard input), the last writing out_fd (-1: the caller's
 * standard output), and waits for all of them.  status[i] is each one's
 * exit status as a shell reports it (128+N after signal N, 127 when it
 * could not be started).  While they run, SIGINT and SIGQUIT are ignored
 * here (the terminal sends them to the children too) and SIGTERM and
 * SIGHUP are passed on to them.
 */
enum ist_status ist_spawn_pipeline(char *const *const *argv, int n,
    int in_fd, int out_fd, int *status, struct ist_error *err);

#endif
