#!/usr/bin/env bats
# C unit tests (TAP) and the fuzz corpora, replayed.
load helpers

@test "unit: trace library" {
	run "$IST_BUILD/tests/test_trace"
	assert_success
	refute_output --partial "not ok"
	assert_line --regexp '^1\.\.[0-9]+$'
}

@test "unit: is-merge's clock fit: drift, offset, residual, one pair and none" {
	run "$IST_BUILD/tests/test_clock"
	assert_success
	refute_output --partial "not ok"
	assert_line "1..9"
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
