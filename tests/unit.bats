#!/usr/bin/env bats
# C unit tests (TAP) and the fuzz corpora, replayed.
load helpers

@test "unit: trace library" {
	run "$IST_BUILD/tests/test_trace"
	assert_success
	refute_output --partial "not ok"
	assert_line --regexp '^1\.\.[0-9]+$'
}

@test "unit: is-merge's clock fit: drift, offset, residual, one, two and no pairs, steps, changes of rate and stray pairs" {
	run "$IST_BUILD/tests/test_clock"
	assert_success
	refute_output --partial "not ok"
	assert_line "1..18"
}

@test "unit: is-record's gathering: what it compresses while the program runs is the bytes it would write after, from its notes alone too, with the stream's blocks given back, and dropped where the stream changed under it; a stream cut as it is gathered costs only what was cut; its thread, starved, is not waited for" {
	run "$IST_BUILD/tests/test_gather"
	assert_success
	refute_output --partial "not ok"
	assert_line "1..14"
}

@test "unit: the interner, the analyzer's map, distributions and longest ranges" {
	run "$IST_BUILD/tests/test_containers"
	assert_success
	refute_output --partial "not ok"
	assert_line "1..9"
}

@test "unit: every key a rule reads is one the analyzer writes, over every scenario" {
	# the scenarios that make each rule fire and stay quiet
	n=0
	for s in gpu_idle gpu_bound transfer transfer_ok sync sync_ok launch \
	    launch_ok contention contention_ok gil gil_ok memory memory_ok \
	    nested steps steps_slow startup startup_small gc recursion; do
		python3 tests/py/scenarios.py $s |
		    is-cat -e -o "$BATS_TEST_TMPDIR/$s.ist"
		n=$((n + 1))
	done
	run "$IST_BUILD/tests/test_rules" "$BATS_TEST_TMPDIR"/*.ist \
	    examples/archive/*.ist
	assert_success
	assert_line "ok 1 - $((n + 4)) of $((n + 4)) scenarios analysed"
	assert_line "ok 3 - every key a rule reads is in the analysis: 0 absent"
}

@test "unit: CUPTI activity records to trace events" {
	[ -x "$IST_BUILD/tests/test_cupti" ] ||
	    skip "built without CUPTI (HAVE_CUPTI=0 or no CUPTI in CUDA_HOME)"
	run "$IST_BUILD/tests/test_cupti"
	assert_success
	refute_output --partial "not ok"
	assert_line --regexp '^1\.\.[0-9]+$'
}

@test "fuzz corpus: reader replays without a crash" {
	run "$IST_BUILD/tests/replay_reader" tests/fuzz/corpus-reader
	assert_success
	assert_line --regexp '^ok 1 - replayed [0-9]+ inputs$'
}

@test "fuzz corpus: JSON Lines round trip holds on every input" {
	run "$IST_BUILD/tests/replay_jsonl" tests/fuzz/corpus-jsonl \
	    "$VEC/valid"
	assert_success
	assert_line --regexp '^ok 1 - replayed [0-9]+ inputs$'
}

@test "fuzz corpus: the YAML settings parser" {
	run "$IST_BUILD/tests/replay_config" tests/fuzz/corpus-config
	assert_success
	assert_line --regexp '^ok 1 - replayed [0-9]+ inputs$'
}

@test "fuzz corpus: merged output reads back and merges to itself" {
	run "$IST_BUILD/tests/replay_merge" tests/fuzz/corpus-merge "$VEC/valid"
	assert_success
	assert_line --regexp '^ok 1 - replayed [0-9]+ inputs$'
}

@test "fuzz corpus: analysis and every report format" {
	run "$IST_BUILD/tests/replay_analyze" tests/fuzz/corpus-analyze
	assert_success
	assert_line --regexp '^ok 1 - replayed [0-9]+ inputs$'
}
