#!/bin/sh
# batch.sh - analyse a folder of archived traces in parallel and print one
# summary table: trace, duration, verdict, confidence, top finding.
#   sh examples/batch.sh [DIR]        (default: examples/archive)
set -eu
cd "$(dirname "$0")/.."
PATH="$PWD/build/bin:$PATH"
dir=${1:-examples/archive}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# one is-merge | is-analyze per trace, as many at once as there are CPUs
find "$dir" -name '*.ist' -print0 | sort -z |
    xargs -0 -P "$(nproc)" -I{} sh -c \
    'is-merge "$1" | is-analyze --json > "$2/$(basename "$1" .ist).json"' \
    sh {} "$out"

printf '%-12s %10s  %-18s %4s  %s\n' trace duration verdict conf "top finding"
for j in "$out"/*.json; do
	jq -r --arg t "$(basename "$j" .json)" '[$t,
	    "\(.run.wall_ns / 1e6 * 100 | round / 100) ms",
	    .verdict.classification, .verdict.confidence,
	    (.findings[0].title // "-")] | @tsv' "$j"
done | awk -F '\t' '{ printf "%-12s %10s  %-18s %4s  %s\n", $1, $2, $3, $4, $5 }'
