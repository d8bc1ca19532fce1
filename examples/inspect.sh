#!/bin/sh
# inspect.sh - encode the example trace, summarise it, and pull numbers out
# of its JSON Lines face with standard tools.  Run from the source tree:
#   sh examples/inspect.sh
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD/build/bin:$PATH"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

is-cat --encode -o "$tmp/example.ist" examples/trace.jsonl
is-info "$tmp/example.ist"

# how many kernels, and how long was the GPU busy with them?
is-cat "$tmp/example.ist" | grep '"type":"gpu_kernel"' |
    sed 's/.*"start_ns":\([0-9]*\),"end_ns":\([0-9]*\).*/\1 \2/' |
    awk '{ n++; busy += $2 - $1 } END { printf "kernels: %d, busy %.3f ms\n", n, busy / 1e6 }'

# the exact round trip
is-cat "$tmp/example.ist" | cmp - examples/trace.jsonl
echo "round trip: exact"
