#!/usr/bin/env bats
# make check-gpu: the GPU example through the whole pipeline, on a machine
# with a CUDA device and PyTorch built for it.

load ../helpers

@test "the GPU example runs and its report names the GPU scopes" {
	python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' ||
	    fail "no CUDA device visible to python3's torch"
	cd "$BATS_TEST_TMPDIR"
	INFERSCOPE_PYTHON=python3 run -0 inferscope run --report r.json \
	    "$ROOT/examples/torch_gpu.py" 20
	run jq -r '.analysis.scopes[] | [.name, .count] | @tsv' r.json
	assert_line "$(printf 'step\t20')"
	assert_line "$(printf 'readback\t20')"
}
