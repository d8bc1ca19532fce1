#!/usr/bin/env bats
# The CUDA collector on a machine without a GPU: loaded by a program that
# plays the CUDA driver (tests/cupti/fake_driver.c), recording through a
# stand-in libcupti (tests/cupti/fake_cupti.c) that hands buffers and
# records as CUPTI documents.  The loading, subscription, callbacks,
# flushes, signals and exit run for real; what only a GPU can confirm is in
# tests/gpu.

load helpers

setup() {
	[ -x "$IST_BUILD/tests/fake_driver" ] ||
	    skip "built without CUPTI's headers (no CUDA collector)"
	FAKE=$IST_BUILD/tests/fake-cupti
	DRV=$IST_BUILD/tests/fake_driver
	T=$BATS_TEST_TMPDIR
	export FAKE_CUPTI_LOG=$T/cupti.log
}

# rec ARGS...: is-record into $T/t.ist, the merged trace as JSON Lines in
# $T/t.jsonl
rec() {
	run is-record -o "$T/t.ist" "$@"
	is-merge "$T/t.ist" | is-cat > "$T/t.jsonl"
}

count() {
	jq -s "[.[] | select($1)] | length" "$T/t.jsonl"
}

@test "the collector links no libcupti: it finds one when the program runs" {
	run readelf -d "$IST_BUILD/lib/libinferscope-cupti.so"
	assert_success
	refute_output --partial libcupti
	refute_output --partial RUNPATH
	run nm -D --undefined-only "$IST_BUILD/lib/libinferscope-cupti.so"
	refute_output --partial cupti
}

@test "a CUDA program: kernels after their launches, a pageable copy, the sync on its thread, the quiet calls left out" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" basic
	assert_success
	assert_output --partial "app done"
	assert_equal "$(count '.type=="gpu_kernel"')" 2
	# demangled as Kineto names them, though the program (C, as python3
	# is) has no libstdc++ in its global scope (on an H200, torch's
	# kernels had stayed mangled: 10 of 11 names differed from Kineto's)
	run jq -r 'select(.type=="gpu_kernel") | .name' "$T/t.jsonl"
	assert_output "$(printf '%s\n' 'matmul(float*, float*, float*, int)' \
	    triton_fused_0)"
	run jq -r 'select(.type=="cuda_api") | .name' "$T/t.jsonl"
	assert_output "$(printf '%s\n' cudaLaunchKernel cuLaunchKernel \
	    cudaMemcpyAsync cudaStreamSynchronize)"
	# every kernel follows the launch that shares its correlation, on
	# the merged clock
	run jq -s '[.[] | select(.type=="cuda_api")] as $a |
	    [.[] | select(.type=="gpu_kernel") | . as $k |
	     $a[] | select(.correlation == $k.correlation and
	     .start_ns < $k.start_ns)] | length' "$T/t.jsonl"
	assert_output 2
	assert_equal "$(count '.type=="h2d_copy" and .pageable and .bytes==4194304')" 1
	# the failed cudaEventQuery is no sync; the stream sync is on the
	# launching thread
	run jq -r 'select(.type=="sync") | [.kind, .tid == .pid] | @tsv' \
	    "$T/t.jsonl"
	assert_output "$(printf 'stream\ttrue')"
	assert_equal "$(count '.type=="loss"')" 0
	assert_equal "$(count '.type=="device" and .name=="Fake H100"')" 1
	# the device names its process and its GPU's UUID (nvidia-smi's form)
	run jq -r 'select(.type=="device") | [.pid > 0, .uuid] | @tsv' \
	    "$T/t.jsonl"
	assert_output "$(printf 'true\tGPU-deadbeef-0102-0304-0506-0708090a0b0c')"
}

@test "what the collector asks of CUPTI: per-thread buffers, runtime calls but the noisy ones, driver calls only for launches, copies and syncs, all off at exit" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" basic
	assert_success
	run cat "$FAKE_CUPTI_LOG"
	assert_line "subscribe"
	assert_line "attr 9 1"              # PER_THREAD_ACTIVITY_BUFFER
	# the device's timestamp buffers keep CUPTI's default (250): a lower
	# DEVICE_BUFFER_POOL_LIMIT loses the times of graphs' kernels
	refute_line --regexp '^attr 2 '
	assert_line "enable 5"              # RUNTIME
	refute_line "enable 4"              # DRIVER: never all of it
	assert_line "runtime_api cudaGetDevice_v3020 0"
	assert_line "runtime_api cudaEventQuery_v3020 0"
	assert_line "driver_api cuLaunchKernel 1"
	assert_line "driver_api cuMemcpyHtoD_v2 1"
	assert_line "driver_api cuStreamSynchronize 1"
	refute_line --partial "driver_api cuCtxGetCurrent"
	assert_line "all_sync_records 0"
	# the runtime's finer settings come after RUNTIME, which resets them
	run awk '/^enable 5$/ { e = NR } /^runtime_api/ { r = NR }
	    END { exit !(e && r > e) }' "$FAKE_CUPTI_LOG"
	assert_success
	# at exit: every kind enabled is disabled again, and unsubscribed
	for k in $(sed -n 's/^enable //p' "$FAKE_CUPTI_LOG"); do
		grep -qx "disable $k" "$FAKE_CUPTI_LOG" ||
		    fail "kind $k left enabled at exit"
	done
	grep -qx unsubscribe "$FAKE_CUPTI_LOG" || fail "still subscribed"
}

@test "libcupti is found: INFERSCOPE_CUPTI, a copy already loaded, the driver's major, the nvidia wheels, CUDA_HOME" {
	mkdir -p "$T/own" "$T/lp" "$T/sp/site-packages/nvidia/cuda_cupti/lib" \
	    "$T/sp/site-packages/nvidia/cuda_runtime/lib" "$T/home/lib64"
	cp "$FAKE/libcupti.so.13" "$T/own/libcupti.so.13"
	cp "$FAKE/libcupti.so.13" "$T/lp/libcupti.so.13"
	cp "$FAKE/libcupti.so.13" "$T/lp/libcupti.so.12"
	cp "$FAKE/libcupti.so.13" \
	    "$T/sp/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12"
	cp "$FAKE/libdummy.so" \
	    "$T/sp/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"
	cp "$FAKE/libcupti.so.13" "$T/home/lib64/libcupti.so.12"
	loaded() {
		rm -f "$FAKE_CUPTI_LOG"
		run env "$@" is-record -o "$T/t.ist" -- "$DRV" basic
		assert_success
		head -1 "$FAKE_CUPTI_LOG" | sed 's/^loaded //'
	}
	assert_equal "$(loaded INFERSCOPE_CUPTI="$T/own/libcupti.so.13")" \
	    "$T/own/libcupti.so.13"
	# the program's own copy (torch's), even with another on the path
	assert_equal "$(loaded FAKE_DLOPEN="$T/own/libcupti.so.13" \
	    LD_LIBRARY_PATH="$T/lp")" "$T/own/libcupti.so.13"
	# a 12.8 driver: CUPTI 12, not 13
	assert_equal "$(loaded FAKE_DRIVER_VERSION=12080 \
	    LD_LIBRARY_PATH="$T/lp")" "$T/lp/libcupti.so.12"
	assert_equal "$(loaded FAKE_DRIVER_VERSION=12080 \
	    FAKE_DLOPEN="$T/sp/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12")" \
	    "$T/sp/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12"
	assert_equal "$(loaded FAKE_DRIVER_VERSION=12080 CUDA_HOME="$T/home")" \
	    "$T/home/lib64/libcupti.so.12"
}

@test "a CUPTI that cannot serve leaves the program untouched: too old, another tool subscribed, no driver (the real libcupti)" {
	FAKE_CUPTI_VERSION=18 INFERSCOPE_CUPTI=$FAKE/libcupti.so.13 \
	    rec -- "$DRV" basic
	assert_success
	assert_output --partial "app done"
	assert_output --partial "older than CUDA 12.0's"
	assert_equal "$(count '.type=="gpu_kernel"')" 0
	FAKE_CUPTI_SUBSCRIBER=1 LD_LIBRARY_PATH=$FAKE rec -- "$DRV" basic
	assert_success
	assert_output --partial "app done"
	assert_output --partial "another tool holds CUPTI"
	assert_equal "$(count '.type=="gpu_kernel"')" 0
	# the toolkit's own libcupti, with no driver to talk to
	rec -- "$DRV" basic
	assert_success
	assert_output --partial "app done"
	assert_output --partial "no GPU activity is recorded"
	assert_equal "$(count '.type=="gpu_kernel"')" 0
}

@test "a CUPTI of CUDA 12.6 (shorter sync records) is read as such" {
	FAKE_CUPTI_VERSION=24 LD_LIBRARY_PATH=$FAKE rec -- "$DRV" basic
	assert_success
	run sh -c "is-cat '$T/t.ist' | jq -r 'select(.type==\"header\") | .producer'"
	assert_line --partial "(CUPTI API 24)"
	run jq -r 'select(.type=="sync" and .kind=="stream") | .tid == .pid' \
	    "$T/t.jsonl"
	assert_output true
	assert_equal "$(count '.type=="gpu_kernel"')" 2
}

@test "forty CUDA threads: every launch and kernel arrives, per-thread buffers and all" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" threads 40
	assert_success
	assert_equal "$(count '.type=="gpu_kernel"')" 4002
	assert_equal "$(count '.type=="cuda_api"')" 4004
	assert_equal "$(count '.type=="loss"')" 0
}

@test "--trace-size-mb bounds the activity buffers: what CUPTI could not put anywhere is a counted loss" {
	LD_LIBRARY_PATH=$FAKE rec --trace-size-mb 4 -- "$DRV" threads 40
	assert_success
	# 10 records in the basic part (one, a failed query, makes no event)
	# and 8000 from the threads: each either an event or a lost record
	events=$(count '.type=="gpu_kernel" or .type=="cuda_api" or
	    .type=="device" or .type=="h2d_copy" or .type=="sync"')
	lost=$(jq -s '[.[] | select(.type=="loss" and
	    (.reason | test("trace-size-mb"))) | .events] | add // 0' \
	    "$T/t.jsonl")
	[ "$lost" -gt 0 ] || fail "nothing lost with 4 buffers for 41 threads"
	assert_equal "$((events + lost))" 8009
}

@test "torch.profiler taking CUPTI's callbacks over: the buffers it took are a loss that says so" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" takeover
	assert_success
	assert_output --partial "app done"
	run jq -r 'select(.type=="loss") | .reason' "$T/t.jsonl"
	assert_output --partial "another CUPTI client (torch.profiler?)"
	assert_equal "$(count '.name=="after_takeover_kernel"')" 0
	# what came back before is kept
	assert_equal "$(count '.type=="gpu_kernel"')" 2
}

@test "SIGTERM: the CUDA stream is written, then the program dies of the signal" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" term
	# it died of SIGTERM (is-record says so as a shell would): the sleep
	# after the kill never ended it
	assert_equal "$status" 143
	assert_output --partial "app done"
	refute_output --partial "not be written"
	assert_equal "$(count '.type=="gpu_kernel"')" 2
	assert_equal "$(count '.type=="sync"')" 1
}

@test "a CUDA program that execs another: the first one's kernels stay, before the second's (the stream is appended to, not wiped)" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" exec
	assert_success
	# 2 + 10 kernels before the exec (in frames closed within a second),
	# 2 after it; the stream had been opened anew, and wiped, at the exec
	assert_equal "$(count '.type=="gpu_kernel"')" 14
	assert_equal "$(count '.name=="before_exec_kernel"')" 10
	assert_equal "$(count '.type=="loss"')" 0
}

@test "after the collector stops at exit, nothing more is traced" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" late
	assert_success
	assert_equal "$(count '.type=="gpu_kernel"')" 2
	assert_equal "$(count '.name=="after_exit_kernel"')" 0
}

@test "--ring: the CUDA stream is kept in memory and written at exit, frames standing alone" {
	LD_LIBRARY_PATH=$FAKE rec --ring -- "$DRV" threads 4
	assert_success
	assert_equal "$(count '.type=="gpu_kernel"')" 402
	assert_equal "$(count '.type=="loss"')" 0
}

@test "--ring keeps every frame of the CUDA stream that fits --trace-size-mb, not the last one only" {
	LD_LIBRARY_PATH=$FAKE rec --ring -- "$DRV" frames
	assert_success
	assert_equal "$(count '.type=="gpu_kernel"')" 302
	assert_equal "$(count '.type=="loss"')" 0
}

@test "--ring: the frames the CUDA stream filled between its clock pairs (a pair a second) are on the program's clock too: every kernel within the run" {
	LD_LIBRARY_PATH=$FAKE rec --ring --trace-size-mb 256 -- "$DRV" memory 16
	assert_success
	# 16 threads of 20,000 launches, the basic part's 2: each kernel
	# recorded, or a record CUPTI dropped and counted (every buffer in
	# use, the threads faster than the converter on a busy machine).
	# The fake CUPTI's clock is the epoch's (CLOCK_REALTIME), 10^18 ns
	# off: a frame without a pair of its own had kept it (215,000 of
	# the kernels).  One pass over the 640,000 records
	read -r k lost other out < <(/usr/bin/python3 -c 'import json, sys
k = lost = other = out = 0
for i, l in enumerate(open(sys.argv[1])):
    e = json.loads(l)
    if i == 0:
        t0 = e["monotonic_ns"]
    k += e["type"] == "gpu_kernel"
    if e["type"] == "loss":
        lost += e["events"]
        other += not e["reason"].startswith("CUPTI dropped")
    t = e.get("start_ns", e.get("ts_ns", t0))
    out += not t0 <= t <= t0 + 120e9
print(k, lost, other, out)' "$T/t.jsonl")
	assert_equal "$other" 0
	[ "$k" -le 320002 ] && [ $((k + lost)) -ge 320002 ] ||
	    fail "$k kernels, $lost lost"
	[ "$k" -ge 300000 ] || fail "$k kernels"
	assert_equal "$out" 0
	# each frame's source (in the merged header, the first record) has
	# its stream's fit
	run sh -c "head -1 '$T/t.jsonl' | jq -r '.sources[] |
	    select(.producer | startswith(\"inferscope-cupti\")) |
	    .domains[0].pairs'"
	[ "${#lines[@]}" -ge 2 ] || fail "$output"
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" 1
	[ "${lines[0]}" -ge 2 ]
}

@test "the CUDA collector's memory is InferScope's: 16 threads filling activity buffers, a program that allocates nothing, its RSS its own within 4 MiB" {
	# the program's own memory at its end, untraced: the fake CUPTI
	# loaded, nothing subscribed to it
	run env FAKE_DLOPEN="$FAKE/libcupti.so.13" "$DRV" memory 16
	assert_success
	own=$(echo "$output" | sed -n 's/^rss //p')
	# the flight recorder sampled at 1000 Hz: a sample while it writes
	# its frames at the end (30 ms) held them beside a say as of before
	# without them, and read 2.4 MiB more (in 8 runs of 8; in 1 of 3 at
	# 100 Hz)
	for mode in "" "--ring --sample-hz 1000"; do
		LD_LIBRARY_PATH=$FAKE rec $mode --trace-size-mb 64 -- \
		    "$DRV" memory 16
		assert_success
		traced=$(echo "$output" | sed -n 's/^rss //p')
		is-merge "$T/t.ist" | is-analyze --json > "$T/a.json"
		read -r peak last rec from to < <(jq -r '.processes[] |
		    "\(.rss_peak_bytes) \(.rss_last_bytes) \(.recorder_peak_bytes) \(.rss_steady_from_bytes) \(.rss_steady_to_bytes)"' \
		    "$T/a.json")
		echo "${mode:-stream}: own $own, traced $traced; ours (peak, last, recorder's peak, steady from, to): $peak $last $rec $from $to" >&3
		# the buffers, 2 MiB each, about one a thread at once, and
		# the writer's are said: the program's statm held them all
		# (47 MB of 49)
		[ "$rec" -ge $((24 << 20)) ] || fail "recorder's peak $rec"
		[ "$traced" -ge $((own + (24 << 20))) ] || fail "traced $traced"
		# the program's: its own, and InferScope's code, its converter's
		# tables and the arenas malloc made for the threads that convert
		# (2.1-2.3 MiB: not said)
		[ "$last" -le $((own + (4 << 20))) ] || fail "last $last"
		# and not less than it: the writer's buffers, freed as the
		# collector ended, unsaid, had left a page at the last sample
		[ "$last" -ge $((own / 2)) ] || fail "last $last"
		[ "$peak" -le $((own + (6 << 20))) ] || fail "peak $peak"
		[ $((to - from)) -le $((1 << 20)) ] || fail "steady $from to $to"
		run jq -r '[.findings[].kind] | index("memory_pressure")' \
		    "$T/a.json"
		assert_output null
		# the report says what its figures leave out
		run -0 sh -c "is-merge '$T/t.ist' | is-analyze | is-report -f md"
		assert_line --regexp '^The figures are the program.s: InferScope.s own buffers are left out \(at most [0-9.]+ MiB, in .fake_driver \([0-9]+\).\)\.$'
	done
}

@test "a child forked from a CUDA program (a DataLoader's worker) gives back the collector's buffers it was copied: its RSS its own within 3 MiB, by its statm and the sampler's" {
	run env FAKE_DLOPEN="$FAKE/libcupti.so.13" "$DRV" forkmem 16
	assert_success
	own=$(echo "$output" | sed -n 's/^child //p')
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" forkmem 16
	assert_success
	child=$(echo "$output" | sed -n 's/^child //p')
	parent=$(echo "$output" | sed -n 's/^rss //p')
	# (jq reads only the records it looks for: the 640,000 kernels took
	# 10 s of a make check)
	kid=$(grep '"type":"process"' "$T/t.jsonl" | jq -s '[.[] |
	    select(.type=="process" and .name=="fake_driver") | .pid] | max')
	# its last sample (one read the instant after the fork holds what
	# it was copied, before it gave it back)
	sampled=$(grep '"process.rss_bytes"' "$T/t.jsonl" | jq -s "[.[] |
	    select(.type==\"counter\" and .pid==$kid and
	    .name==\"process.rss_bytes\" and .value > 0) | .value] | last")
	echo "untraced child $own; traced: parent $parent, child $child, sampled $sampled" >&3
	# the parent held them (before: the child 41.7 MB of the parent's 44)
	[ "$parent" -ge $((own + (32 << 20))) ] || fail "parent $parent"
	[ "$child" -le $((own + (3 << 20))) ] || fail "child $child"
	[ "$sampled" -le $((own + (3 << 20))) ] || fail "sampled $sampled"
}

@test "a CUDA program that execs a shell: the shell's memory is its own, InferScope's went with the program before" {
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" execsh
	assert_success
	own=$(echo "$output" | sed -n 's/^sh //p')
	read -r name last rec < <(is-merge "$T/t.ist" | is-analyze --json |
	    jq -r '.processes[] | select(.name=="sh") |
	    "\(.name) \(.rss_last_bytes) \(.recorder_peak_bytes)"')
	echo "the shell's statm $own, its analysis: last $last, InferScope's $rec" >&3
	# the program before said 14 MB of its own (its writer's buffers and
	# activity buffers): before, the shell read a page
	[ "$(jq -s '[.[] | select(.name=="process.cuda_recorder_bytes") |
	    .value] | max' "$T/t.jsonl")" -ge $((8 << 20)) ]
	[ "$last" -ge $((own - (1 << 20))) ] || fail "last $last"
	[ "$last" -le $((own + (1 << 20))) ] || fail "last $last"
	assert_equal "$rec" 0
}

@test "--capture-range cudaProfilerApi: cudaProfilerStart/Stop switch recording; the window's kernels are analysed, those before and after are not" {
	LD_LIBRARY_PATH=$FAKE rec --capture-range cudaProfilerApi -- "$DRV" profiler
	assert_success
	grep -q "callback runtime 171 on" "$FAKE_CUPTI_LOG"
	grep -q "callback driver 309 on" "$FAKE_CUPTI_LOG"
	assert_equal "$(count '.type=="capture" and .reason=="cudaProfilerApi"')" 2
	is-merge "$T/t.ist" | is-analyze --json > "$T/a.json"
	# all five launched inside, though the last may run past the stop;
	# matmul (before the start) and the three after the stop left out
	assert_equal "$(jq -c '[.kernels[] | [.name, .count]]' "$T/a.json")" \
	    '[["inside_kernel",5]]'
	# without the option the calls switch nothing
	LD_LIBRARY_PATH=$FAKE rec -- "$DRV" profiler
	assert_equal "$(count '.type=="capture"')" 0
}

@test "a clock pair taken by a thread stalled within it (a loaded machine) is the narrowest of its tries: the window's kernels stay the window's" {
	# the first read of CUPTI's clock, the first pair's, stalls 2 ms:
	# one try put the pair 1.06 ms off, and the window before every
	# kernel (it was a flake of make check under load: an outside kernel
	# launched 0.36 us after the stop, put before it)
	FAKE_CUPTI_TS_STALL=1 LD_LIBRARY_PATH=$FAKE \
	    rec --capture-range cudaProfilerApi -- "$DRV" profiler
	assert_success
	# the pairs' offsets agree within 20 us (jq's doubles: 0.5 us)
	run jq -s '[.[] | select(.type=="clock") | .domain_ns - .ts_ns] |
	    (max - min) < 20000 and length >= 2' \
	    <(is-cat "$T/t.ist")
	assert_output true
	is-merge "$T/t.ist" | is-analyze --json > "$T/a.json"
	assert_equal "$(jq -c '[.kernels[] | [.name, .count]]' "$T/a.json")" \
	    '[["inside_kernel",5]]'
}

@test "--dump-on SIGUSR1: the CUDA stream's window is written at the signal, with the capture record that ends it, and not at exit" {
	LD_LIBRARY_PATH=$FAKE rec --dump-on SIGUSR1 -- "$DRV" dump
	assert_success
	assert_output --partial "SIGUSR1: the flight recorders write"
	assert_equal "$(count '.type=="gpu_kernel"')" 2
	assert_equal "$(count '.name=="after_dump_kernel"')" 0
	assert_equal "$(count '.type=="capture" and .on==false and .reason=="dump:signal"')" 1
	# with exit among the triggers the window after the dump follows,
	# from the dump on
	LD_LIBRARY_PATH=$FAKE rec --dump-on SIGUSR1 --dump-on exit -- "$DRV" dump
	assert_success
	assert_equal "$(count '.type=="gpu_kernel"')" 12
	assert_equal "$(count '.type=="capture" and .on and .reason=="ring"')" 1
}

@test "is-record loads the CUDA collector first: one that cannot load never reaches the program" {
	mkdir -p "$T/inst/bin" "$T/inst/lib"
	cp "$IST_BUILD/bin/is-record" "$T/inst/bin/"
	printf 'not a library\n' > "$T/inst/lib/libinferscope-cupti.so"
	run "$T/inst/bin/is-record" --no-python -o "$T/t.ist" -- \
	    sh -c 'echo "injection=${CUDA_INJECTION64_PATH-unset}"'
	assert_success
	assert_output --partial "injection=unset"
	assert_output --partial "the CUDA collector cannot be loaded"
}
