#!/bin/sh
# deps.sh - install the Debian packages a make target needs, when missing.
# usage: scripts/deps.sh build|check|fuzz|demo [install]
# With install (make deps, and so make check and make demo), as root,
# missing packages are installed with apt-get; otherwise the missing ones
# are listed and the script fails: plain make never installs.
set -eu

build="gcc make pkg-config libcbor-dev libzstd-dev libjansson-dev \
libcmark-gfm-dev libcmark-gfm-extensions-dev libyaml-dev python3-dev zstd"
check="$build bats bats-assert bats-support mandoc bash-completion zsh bsdutils \
python3-numpy python3-pandas python3-torch jq chromium valgrind strace \
parallel"
fuzz="$build clang libclang-rt-14-dev"
demo="$build python3 python3-numpy python3-torch chromium"

case "${1:-build}" in
build) want=$build ;;
check) want=$check ;;
fuzz) want=$fuzz ;;
demo) want=$demo ;;
*) echo "usage: scripts/deps.sh build|check|fuzz|demo" >&2; exit 2 ;;
esac

missing=
for p in $want; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "${2:-}" != install ] || [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing Debian packages:$missing" >&2
	echo "deps.sh: run 'make deps' as root, or: apt-get install$missing" >&2
	exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends $missing >&2; then
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends $missing >&2
fi
