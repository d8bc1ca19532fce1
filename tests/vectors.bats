#!/usr/bin/env bats
# The golden vectors of formats/vectors: valid ones decode to their JSON
# Lines; invalid ones fail with their exact message.
load helpers

@test "valid vectors decode to their .jsonl, byte for byte" {
	n=0
	for ist in "$VEC"/valid/*.ist; do
		run --separate-stderr is-cat "$ist"
		assert_success
		assert_equal "$stderr" ""
		assert_equal "$output" "$(cat "${ist%.ist}.jsonl")"
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "encoding a valid .jsonl gives the vector byte for byte" {
	for jsonl in "$VEC"/valid/[!x]*.jsonl; do
		args=()
		case $jsonl in *multi-frame*) args=(--frame-bytes 200) ;; esac
		is-cat --encode "${args[@]}" -o "$BATS_TEST_TMPDIR/t.ist" "$jsonl"
		cmp "$BATS_TEST_TMPDIR/t.ist" "${jsonl%.jsonl}.ist"
	done
}

@test "invalid vectors: one clear line, exit 1, the golden message" {
	n=0
	for ist in "$VEC"/invalid/*.ist; do
		run -1 --separate-stderr is-cat "$ist"
		golden "${ist%.ist}.err" "$stderr"
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ "$stderr" == is-cat:* ]]
		[[ "$stderr" == *"$ist"* ]]
		n=$((n + 1))
	done
	[ "$n" -ge 15 ]
}

@test "a truncated trace keeps everything before its last frame" {
	full=$(is-cat "$VEC/valid/multi-frame.ist" | wc -l)
	run -1 --separate-stderr is-cat "$VEC/invalid/truncated.ist"
	assert_equal "$stderr" "is-cat: warning: trace '$VEC/invalid/truncated.ist' is truncated: last 177 bytes dropped"
	# the kept lines are the start of the full decoding
	assert_equal "$output" "$(is-cat "$VEC/valid/multi-frame.ist" | head -n "${#lines[@]}")"
	# 70 lines in 5 frames; the cut falls in the 5th, which held 15
	assert_equal "$full" 70
	assert_equal "${#lines[@]}" 55
}
