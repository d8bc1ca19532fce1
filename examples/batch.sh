#!/bin/sh
# batch.sh - analyse a folder of archived traces in parallel into one
# table: trace, status, duration, verdict, confidence, top finding.
#
#   sh examples/batch.sh [-f table|csv|jsonl] [DIR]   (default: the archive
#                                                      in examples/archive)
#   sh examples/batch.sh --one FILE                    one trace: one JSON line
#
# The status says what a file is before any verdict: ok, truncated (the
# verdict is of what was read), empty, not a trace, or damaged (the
# message is in the last column).  csv (RFC 4180) is for a spreadsheet,
# jsonl (a JSON object a line) for jq.  Traces are analysed as many at once
# as there are CPUs (JOBS=N to choose).
#
# Over several machines, GNU parallel runs --one where the traces are sent
# (each machine needs InferScope's tools on its PATH):
#
#   find DIR -name '*.ist' | parallel --sshloginfile hosts \
#       --basefile examples/batch.sh --transferfile {} --cleanup \
#       sh examples/batch.sh --one {} > rows.jsonl
#
# which gives the rows of -f jsonl (jq -r '[.[]] | @csv' makes them CSV).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH="$here/build/bin:$PATH"

# one trace -> one JSON line, whatever the file holds
one() {
	f=$1
	json=$(is-merge "$f" 2>/dev/null | is-analyze --json 2>/dev/null) ||
	    true
	if [ -z "$json" ]; then
		jq -cn --arg t "$f" '{trace: $t, status: "damaged",
		    duration_ms: null, verdict: null, confidence: null,
		    top_finding: null, message: "no analysis could be made"}'
		return
	fi
	printf '%s\n' "$json" | jq -c --arg t "$f" '
	    (.data_quality.damaged_inputs // [] | first) as $d |
	    ($d.error // "") as $e |
	    (if $d == null then "ok"
	     elif ($e | test("is empty$")) then "empty"
	     elif ($e | test("is not an InferScope trace")) then "not a trace"
	     elif $e == "" and ($d.truncated_bytes // 0) > 0 then "truncated"
	     else "damaged" end) as $s |
	    {trace: $t, status: $s} +
	    (if $s == "ok" or $s == "truncated" then
	        {duration_ms: (.run.wall_ns / 1e6 * 100 | round / 100),
	         verdict: .verdict.classification,
	         confidence: .verdict.confidence,
	         top_finding: (.findings[0].title // null),
	         message: (if $s == "truncated" then
	             "the last \($d.truncated_bytes) bytes were not read whole"
	             else null end)}
	     else {duration_ms: null, verdict: null, confidence: null,
	         top_finding: null, message: $e} end)'
}

if [ "${1:-}" = --one ]; then
	[ $# -eq 2 ] || { echo "usage: batch.sh --one FILE" >&2; exit 2; }
	one "$2"
	exit 0
fi

fmt=table
while getopts f: o; do
	case $o in
	f) fmt=$OPTARG ;;
	*) echo "usage: batch.sh [-f table|csv|jsonl] [DIR]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $fmt in
table|csv|jsonl) ;;
*) echo "batch.sh: -f wants table, csv or jsonl, not '$fmt'" >&2; exit 2 ;;
esac
dir=${1:-$here/examples/archive}
[ -d "$dir" ] || { echo "batch.sh: '$dir' is not a folder" >&2; exit 1; }

# one worker per trace, as many at once as there are CPUs; the rows in
# the order of the file names
rows=$(find "$dir" -name '*.ist' -print0 | sort -z |
    xargs -0 -r -n 1 -P "${JOBS:-$(nproc)}" sh "$0" --one |
    jq -sc 'sort_by(.trace) | .[] | .trace |= sub(".*/"; "") |
        .trace |= sub("\\.ist$"; "")')

case $fmt in
jsonl)
	printf '%s\n' "$rows" | sed '/^$/d' ;;
csv)
	echo 'trace,status,duration_ms,verdict,confidence,top_finding,message'
	printf '%s\n' "$rows" | sed '/^$/d' | jq -r '[.trace, .status,
	    .duration_ms, .verdict, .confidence, .top_finding, .message] |
	    @csv' ;;
table)
	printf '%-12s %-11s %10s  %-18s %4s  %s\n' trace status duration \
	    verdict conf "top finding"
	# names from a trace never reach the terminal raw: controls as '?'
	printf '%s\n' "$rows" | sed '/^$/d' | jq -r '[.trace, .status,
	    (if .duration_ms == null then "-" else "\(.duration_ms) ms" end),
	    (.verdict // "-"), (.confidence // "-" | tostring),
	    (.top_finding // .message // "-")] |
	    map(gsub("[\u0000-\u001f\u007f-\u009f]"; "?")) | @tsv' |
	    awk -F '\t' '{ printf "%-12s %-11s %10s  %-18s %4s  %s\n",
	        $1, $2, $3, $4, $5, $6 }' ;;
esac
