#!/bin/sh
# build-pyext.sh - build the Python collector (_inferscope) for one Python.
# usage: build-pyext.sh PYTHON OUTDIR CC "CFLAGS" "SOURCES" "LIBS"
# SOURCES: what the agents link besides the extension (the Makefile's
# collector and TRACE_CORE, listed there once).
# The module's file name carries the interpreter's ABI tag, so builds for
# several Pythons live side by side in OUTDIR.
set -eu
py=$1 out=$2 cc=$3 cflags=$4 srcs=$5 libs=$6
command -v "$py" >/dev/null 2>&1 || { echo "build-pyext: no $py" >&2; exit 1; }
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$inc/Python.h" ] || { echo "build-pyext: no Python.h for $py in $inc" >&2; exit 1; }
mkdir -p "$out/inferscope"
cp agents/python/sitecustomize.py "$out/"
cp agents/python/inferscope/__init__.py "$out/inferscope/"
so="$out/_inferscope$suffix"
if [ -f "$so" ] && [ -z "$(find lib/trace agents -newer "$so" -name '*.[ch]')" ]; then
	exit 0
fi
echo "  PYEXT $so ($py)"
# shellcheck disable=SC2086
$cc -shared -fPIC -fvisibility=hidden -std=c11 -D_GNU_SOURCE -O2 -g \
    $cflags -Ilib/trace -Iagents -I"$inc" -o "$so" agents/python/_inferscope.c \
    $srcs $libs -lpthread
