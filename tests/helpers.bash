# helpers.bash - loaded by every .bats file.
bats_require_minimum_version 1.5.0
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

export LC_ALL=C TZ=UTC
# each test its own TMPDIR: is-record's recordings (and what a killed one
# leaves, which the next names), is-report's spools, are the test's alone
if [ -n "${BATS_TEST_TMPDIR:-}" ]; then
	export TMPDIR=$BATS_TEST_TMPDIR/.tmp
	mkdir -p "$TMPDIR"
fi
# the checks' own Python (reading traces, making inputs): Debian's, named
# by its path; python3 on PATH may be a pyenv shim, 150 ms of bash a call
# (a minute of a make check).  The programs recorded name theirs.
python3() { /usr/bin/python3 "$@"; }
ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
VEC=formats/vectors
cd "$ROOT"

# update_or_compare GOLDEN ACTUAL: byte-exact compare, or rewrite the
# golden file when UPDATE_GOLDEN=1.
golden() {
	if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
		printf '%s' "$2" > "$1"
	fi
	[ -f "$1" ] || fail "no golden file $1 (run with UPDATE_GOLDEN=1)"
	assert_equal "$2" "$(cat "$1")"
}

# built_pythons MODULE: every CPython 3.8+ here (Debian's, pyenv's) for
# which the build made MODULE (_inferscope, the collector; _inferscope_io,
# the trace reader), one path a line
built_pythons() {
	local py tag
	for py in /usr/bin/python3 "$HOME"/.pyenv/versions/3.{8,9,10,11,12,13}.*/bin/python3; do
		[ -x "$py" ] || continue
		tag=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
		[ -f "$IST_BUILD/python/$1$tag" ] && echo "$py"
	done
}
