#!/usr/bin/env bats
# The inferscope command: run, analyze, config show; exit status, settings
# precedence, formats; and the examples, each through the real pipeline.

load helpers

PY=/usr/bin/python3

setup() {
	T=$BATS_TEST_TMPDIR
	export INFERSCOPE_PYTHON=$PY
}

@test "run: the report is written and the script's exit status comes back" {
	cd "$T"
	cat > app.py <<'PY'
import sys, time
from inferscope import scope
for i in range(4):
    with scope("step"):
        time.sleep(0.01)
sys.exit(7)
PY
	run -7 --separate-stderr inferscope run --trace kept.ist app.py
	# it ends with the verdict and the top findings (a line each), then
	# where the report is: the kept trace's analysis says the same
	is-report -s -o again.md kept.ist 2> summary
	assert_equal "$stderr" "$(cat summary)
inferscope: report in report.md, trace in kept.ist"
	is-report -f json kept.ist | jq '.analysis.verdict' > v.json
	assert_equal "${stderr_lines[0]}" "Verdict: $(jq -r .classification v.json) (confidence $(printf %.2f "$(jq .confidence v.json)")). $(jq -r '.reason | (.[:1] | ascii_upcase) + .[1:]' v.json)."
	# then how the script ended, when it failed
	[[ ${stderr_lines[1]} =~ ^The\ program\ \(pid\ [0-9]+\)\ exited\ with\ status\ 7\.$ ]] ||
	    fail "the second line: ${stderr_lines[1]}"
	assert_equal "$((${#stderr_lines[@]} - 3))" "$(is-report -f json kept.ist | jq '[.analysis.findings[:3][]] | length')"
	# quiet with --log-level warn
	run -7 --separate-stderr inferscope run --log-level warn app.py
	assert_equal "$stderr" ""
	grep -q '^# InferScope report' report.md
	grep -q '^| `step` | scope | 4 |' report.md
	[ ! -e run.ist ]
	# any command after --, a kept trace, HTML by the extension
	run -0 inferscope run --trace t.ist --report r.html -- $PY -c 'print(42)'
	assert_line 42
	is-info t.ist > /dev/null
	grep -q '^<!DOCTYPE html>' r.html
	# a signal's status, as a shell reports it
	run -143 inferscope run --report k.md -- sh -c 'kill -TERM $$'
}

@test "run: script arguments are the script's, options after it are not ours" {
	cd "$T"
	printf 'import sys\nprint(sys.argv[1:])\n' > args.py
	run -0 --separate-stderr inferscope run --report a.md args.py --format x -o y
	assert_output "['--format', 'x', '-o', 'y']"
}

@test "run: a command that execs (a wrapper, a shim) is named by what it ran" {
	cd "$T"
	printf 'print(1)\n' > app.py
	printf '#!/bin/sh\nexec %s app.py "$@"\n' "$PY" > wrap.sh
	chmod +x wrap.sh
	# the wrapper's exec becomes a Python process with a stream of its own
	run -0 inferscope run --report w.md -- ./wrap.sh
	grep -qxF "| Command | \`$PY app.py\` |" w.md || fail "$(grep Command w.md)"
	# an exec into a program with no stream: the sampler sees it
	run -0 inferscope run --report s.md -- sh -c 'exec sleep 0.3'
	grep -qxF '| Command | `sleep 0.3` |' s.md || fail "$(grep Command s.md)"
}

@test "run: a missing script or command fails like a shell, with no report" {
	cd "$T"
	run -127 --separate-stderr inferscope run -- no-such-command-xyz
	assert_equal "$stderr" "is-record: cannot run 'no-such-command-xyz': No such file or directory
inferscope: no trace was written; no report"
	[ ! -e report.md ]
	run -2 --separate-stderr inferscope run
	assert_equal "${stderr_lines[0]}" "inferscope: run: no script to run"
}

@test "analyze: an existing trace, in every format" {
	cd "$T"
	is-cat --encode "$ROOT/examples/trace.jsonl" > ex.ist
	run -0 inferscope analyze ex.ist
	grep -q '^\*\*Verdict: CPU-bound\*\*' report.md
	inferscope analyze --format json --output r.json ex.ist
	jq -e '.analysis.verdict.classification == "CPU-bound"' r.json
	inferscope analyze ex.ist -o p.json --format perfetto
	jq -e '.traceEvents | length > 50' p.json
	run -1 --separate-stderr inferscope analyze missing.ist
	assert_equal "$stderr" "inferscope: cannot open 'missing.ist': No such file or directory"
	run -2 --separate-stderr inferscope analyze --format pdf ex.ist
	assert_equal "$stderr" "inferscope: --format wants md, html, json or text (or perfetto), not 'pdf'"
	# text by the extension, or asked for
	COLUMNS= run -0 --separate-stderr inferscope analyze -o r.txt ex.ist
	assert_equal "${stderr_lines[0]}" "Verdict: CPU-bound (confidence 0.87). The GPU is idle 75.9% of the active window, waiting for the host; the largest saving: overlap the leading host work with the rest of the step, about 860 µs per step (20.7%)."
	assert_equal "$(cat r.txt)" "$(cat "$ROOT/tests/golden/report-example.txt")"
	COLUMNS= inferscope analyze --format text -o r2 ex.ist
	cmp r.txt r2
}

@test "every tool takes the settings alike: a bad one in the environment or the file stops each, named" {
	cd "$T"
	is-cat --encode "$BATS_TEST_DIRNAME/../examples/trace.jsonl" | is-merge > t.ist
	for tool in is-merge is-analyze is-report; do
		run -2 --separate-stderr env INFERSCOPE_SAMPLE_HZ=lots $tool t.ist
		assert_equal "$stderr" "$tool: INFERSCOPE_SAMPLE_HZ: sample_hz must be an integer from 0 to 10000, not 'lots'"
	done
	run -2 --separate-stderr env INFERSCOPE_SAMPLE_HZ=lots is-record -o r.ist -- true
	assert_equal "$stderr" "is-record: INFERSCOPE_SAMPLE_HZ: sample_hz must be an integer from 0 to 10000, not 'lots'"
	printf 'sample_hz: 50\nrules:\n  sync: {blocked_pct: many}\n' > .inferscope.yaml
	for tool in is-analyze is-report; do
		run -2 --separate-stderr $tool t.ist
		assert_equal "$stderr" "$tool: '.inferscope.yaml':3:23: sync.blocked_pct must be a number from 0 to 1e12, not 'many'"
	done
	# is-merge takes no thresholds, but the settings are read the same
	printf 'sample_hz: 50\nsync_error_margin_us: -1\n' > .inferscope.yaml
	run -2 --separate-stderr is-merge t.ist
	assert_equal "$stderr" "is-merge: '.inferscope.yaml':2:23: sync_error_margin_us must be an integer from 0 to 60000000, not '-1'"
}

@test "config show: command line > environment > .inferscope.yaml > defaults" {
	cd "$T"
	printf 'log_level: warn\ntrace_size_mb: 300\nsample_hz: 50\nrules:\n  gpu_idle:\n    idle_pct: 25\n' \
	    > .inferscope.yaml
	run -0 env INFERSCOPE_TRACE_SIZE_MB=200 inferscope config show --log-level debug
	assert_line --regexp '^log_level +debug +command line$'
	assert_line --regexp '^trace_size_mb +200 +environment$'
	assert_line --regexp '^sample_hz +50 +config file \.inferscope\.yaml:3$'
	assert_line --regexp '^py_min_us +0 +default$'
	assert_line --partial "gpu_idle: enabled=on idle_pct=25 "
	printf 'trace_size_mb: [1]\n' > .inferscope.yaml
	run -2 --separate-stderr inferscope config show
	assert_equal "$stderr" "inferscope: '.inferscope.yaml':1:16: a setting's value must be a scalar"
	printf 'trace_size_mb: lots\n' > .inferscope.yaml
	run -2 --separate-stderr inferscope config show
	assert_equal "$stderr" "inferscope: '.inferscope.yaml':1:16: trace_size_mb must be an integer from 1 to 65536, not 'lots'"
	# an unknown rule: exit 2 with nothing printed, as is-analyze does
	printf 'rules:\n  bogus:\n    x: 1\n' > .inferscope.yaml
	run -2 --separate-stderr inferscope config show
	assert_output ""
	assert_equal "$stderr" "inferscope: '.inferscope.yaml':2:3: unknown rule 'bogus'"
	is-cat --encode "$ROOT/examples/trace.jsonl" > ex.ist
	run -2 --separate-stderr is-analyze ex.ist
	assert_output ""
	assert_equal "$stderr" "is-analyze: '.inferscope.yaml':2:3: unknown rule 'bogus'"
}

@test "INFERSCOPE_ENABLED=0 runs the script without tracing" {
	cd "$T"
	run -5 --separate-stderr env INFERSCOPE_ENABLED=0 inferscope run -- sh -c 'exit 5'
	assert_equal "$stderr" "inferscope: INFERSCOPE_ENABLED=0: running without tracing"
	[ ! -e report.md ]
}

@test "example: numpy inference, scopes and the tokenizer in the report" {
	cd "$T"
	run -0 inferscope run --report r.json "$ROOT/examples/mlp_infer.py"
	run jq -r '.analysis.scopes[] | [.name, .count] | @tsv' r.json
	assert_line "$(printf 'request\t200')"
	assert_line "$(printf 'infer\t200')"
	assert_line "$(printf 'tokenize\t200')"
}

@test "example: torch CPU transformer, with its scopes, markers and a verdict" {
	cd "$T"
	run -0 inferscope run --report r.json "$ROOT/examples/torch_encoder.py" 5
	assert_line "5 batches, checksum -0.0000"
	run jq -r '.analysis.scopes[] | [.name, .count] | @tsv' r.json
	assert_line "$(printf 'forward\t5')"
	assert_line "$(printf 'tokenize\t5')"
	assert_line "$(printf 'postprocess\t5')"
	assert_equal "$(jq -r .analysis.instants r.json)" 5
	# CPU-bound; on a machine loaded by other work, CPU-oversubscribed
	jq -e '.analysis.verdict.classification | test("^CPU-(bound|oversubscribed)$")' r.json
}

@test "example: a C program with NVTX ranges" {
	[ -x "$IST_BUILD/examples/nvtx_pipeline" ] ||
	    fail "build/examples/nvtx_pipeline was not built (no NVTX headers in CUDA_HOME)"
	cd "$T"
	run -0 inferscope run --report r.json -- "$IST_BUILD/examples/nvtx_pipeline"
	run jq -r '.analysis.scopes[] | [.kind, .name, .count] | @tsv' r.json
	assert_line "$(printf 'nvtx\trequest\t5')"
	assert_line "$(printf 'nvtx\tinfer\t5')"
	assert_line "$(printf 'nvtx\tload model\t1')"
	# 5 x 10 ms of infer: none shorter than the sleep; nested in request
	# with preprocess, so together no longer than request (the sleeps may
	# overrun on a loaded machine: that bounds nothing else)
	jq -e '[.analysis.scopes[] | {key: .name, value: .}] | from_entries |
	    .infer.p50_ns >= 10000000 and .preprocess.p50_ns >= 4000000 and
	    .infer.max_ns <= .request.max_ns and
	    .infer.total_ns + .preprocess.total_ns <= .request.total_ns' r.json
}

@test "example: batch analysis of an archive, in parallel, one table" {
	run -0 sh examples/batch.sh
	assert_line --index 0 --regexp '^trace +status +duration +verdict +conf +top finding$'
	assert_line --regexp '^gpu_idle +ok +9\.92 ms +CPU-bound +0\.87 +GPU 0 is idle 78\.3% '
	assert_line --regexp '^transfer +ok +9\.7 ms +transfer-bound +0\.8 '
	assert_line --regexp '^contention +ok +1000 ms +CPU-oversubscribed +0\.7 +threads wait for a CPU'
	assert_equal "${#lines[@]}" 5
}

@test "batch: a relative folder from anywhere; empty, non-trace and truncated files are rows that say so; CSV and JSON Lines; GNU parallel gives the same rows" {
	mkdir -p "$T/w/arch"
	cp examples/archive/*.ist "$T/w/arch/"
	: > "$T/w/arch/empty.ist"
	echo '{"type":"header"}' > "$T/w/arch/json.ist"
	n=$(stat -c %s examples/archive/gpu_idle.ist)
	head -c $((n / 2)) examples/archive/gpu_idle.ist > "$T/w/arch/cut.ist"
	cd "$T/w"
	run -0 sh "$ROOT/examples/batch.sh" arch
	assert_equal "${#lines[@]}" 8
	assert_line --regexp '^empty +empty +- +- +- +'"'"'arch/empty.ist'"'"' is empty$'
	assert_line --regexp '^json +not a trace +- +- +- +'"'"'arch/json.ist'"'"' is not an InferScope trace'
	assert_line --regexp '^cut +truncated +[0-9.]+ ms +[A-Za-z-]+ +[0-9.]+ +'
	assert_line --regexp '^gpu_idle +ok +9\.92 ms +CPU-bound +0\.87 '
	# CSV: a header and a row per trace, read back by Python's csv module
	sh "$ROOT/examples/batch.sh" -f csv arch > rows.csv
	python3 - rows.csv <<-'PY'
	import csv, sys
	rows = list(csv.DictReader(open(sys.argv[1], newline="")))
	assert len(rows) == 7, rows
	st = {r["trace"]: r["status"] for r in rows}
	assert st == {"contention": "ok", "cut": "truncated", "empty": "empty",
	              "gpu_idle": "ok", "json": "not a trace", "steps": "ok",
	              "transfer": "ok"}, st
	g = next(r for r in rows if r["trace"] == "gpu_idle")
	assert (g["duration_ms"], g["verdict"], g["confidence"]) == ("9.92", "CPU-bound", "0.87"), g
	assert next(r for r in rows if r["trace"] == "empty")["verdict"] == ""
	PY
	# JSON Lines for jq: the truncated one says how much it lost, as is-info
	sh "$ROOT/examples/batch.sh" -f jsonl arch > rows.jsonl
	assert_equal "$(wc -l < rows.jsonl)" 7
	lost=$(is-info --json arch/cut.ist 2>/dev/null | jq .truncated_bytes)
	assert_equal "$(jq -r 'select(.trace == "cut") | .message' rows.jsonl)" "the last $lost bytes were not read whole"
	# the same rows from GNU parallel, on its local host (:), as it would
	# run them over --sshloginfile
	command -v parallel >/dev/null || fail "GNU parallel is missing (scripts/deps.sh check installs it)"
	find arch -name '*.ist' | parallel --will-cite -S : sh "$ROOT/examples/batch.sh" --one {} |
	    jq -c '.trace |= sub(".*/"; "") | .trace |= sub("\\.ist$"; "")' | sort > par.jsonl
	assert_equal "$(cat par.jsonl)" "$(sort rows.jsonl)"
	run -2 --separate-stderr sh "$ROOT/examples/batch.sh" -f xml arch
	assert_equal "$stderr" "batch.sh: -f wants table, csv or jsonl, not 'xml'"
}

@test "run --trace keeps the merged trace with its analysis: is-report renders it again, the same report" {
	cd "$T"
	# work's own time (a loop, not a C call's) puts it first among the
	# functions by self time, whatever else start-up runs and however long
	cat > app.py <<'PY'
def work():
    s = 0
    for i in range(20000):
        s += i
    return s
for _ in range(20):
    work()
PY
	run -0 --separate-stderr inferscope run --trace t.ist --report r.md app.py
	# one segment, in time order, with the analysis record at its end
	run -0 is-info --json t.ist
	assert_equal "$(jq .segments <<< "$output")" 1
	assert_equal "$(is-cat t.ist | tail -1 | jq -r .type)" analysis
	run -0 --separate-stderr is-report t.ist
	assert_equal "$stderr" ""
	assert_equal "$output" "$(cat r.md)"
	grep -q '^| `__main__.work` | 20 |' r.md
}
