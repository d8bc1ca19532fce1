#!/bin/sh
# build-pyext.sh - build the Python collector (_inferscope) for one Python.
# usage: build-pyext.sh PYTHON OUTDIR CC "CFLAGS" "SOURCES" "LIBS" "IOLIBS"
# SOURCES: what the agents link besides the extension (the Makefile's
# collector and TRACE_CORE, listed there once).  IOLIBS: what
# _inferscope_io, the trace reader and analyzer for Python, links
# (libinferscope.a and its libraries).
# The module's file name carries the interpreter's ABI tag, so builds for
# several Pythons live side by side in OUTDIR.
set -eu
py=$1 out=$2 cc=$3 cflags=$4 srcs=$5 libs=$6 iolibs=$7
command -v "$py" >/dev/null 2>&1 || { echo "build-pyext: no $py" >&2; exit 1; }
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$inc/Python.h" ] || { echo "build-pyext: no Python.h for $py in $inc" >&2; exit 1; }
mkdir -p "$out/inferscope"
cp agents/python/sitecustomize.py "$out/"
cp agents/python/inferscope/__init__.py "$out/inferscope/"
# compiled ahead, checked by the source's hash rather than its time (install
# changes that): every recorded process imports the bootstrap, and
# compiling it took 3 ms of each one's start
"$py" -c 'import py_compile, sys
for f in sys.argv[1:]:
    py_compile.compile(f, doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)' \
    "$out/sitecustomize.py" "$out/inferscope/__init__.py"
so="$out/_inferscope$suffix"
if [ ! -f "$so" ] || [ -n "$(find lib/trace agents -newer "$so" -name '*.[ch]')" ]; then
	echo "  PYEXT $so ($py)"
	# shellcheck disable=SC2086
	$cc -shared -fPIC -fvisibility=hidden -std=c11 -D_GNU_SOURCE -O2 -g \
	    $cflags -Ilib/trace -Iagents -I"$inc" -o "$so" \
	    agents/python/_inferscope.c $srcs $libs -lpthread
fi
io="$out/_inferscope_io$suffix"
lib=${iolibs%% *}
if [ ! -f "$io" ] || [ "$lib" -nt "$io" ] ||
    [ agents/python/_inferscope_io.c -nt "$io" ]; then
	echo "  PYEXT $io ($py)"
	# shellcheck disable=SC2086
	$cc -shared -fPIC -fvisibility=hidden -std=c11 -D_GNU_SOURCE -O2 -g \
	    $cflags -Ilib/trace -Ilib/analyze -Ilib/report -Ilib/rules -Ilib/config -Ilib \
	    -I"$inc" -o "$io" agents/python/_inferscope_io.c $iolibs
fi
