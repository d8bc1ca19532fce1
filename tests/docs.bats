#!/usr/bin/env bats
# Docs cannot drift: man pages lint clean, each SYNOPSIS is the --help usage,
# every long option is in the man page and both completions, and every
# example runs.
load helpers

TOOLS="inferscope is-analyze is-cat is-info is-merge is-record is-report"

@test "man pages are lint-clean under mandoc -Tlint" {
	run mandoc -Tlint -W warning man/*.[0-9]
	assert_success
	assert_output ""
}

@test "each man SYNOPSIS is the usage line of --help" {
	for t in $TOOLS; do
		usage=$("$t" --help | sed '/^$/q' | sed '/^$/d;s/^usage: //;s/^ *//')
		synopsis=$(mandoc -Tascii -O width=300 "man/$t.1" | col -b |
		    sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | sed '1d;$d;/^$/d;s/^ *//')
		assert_equal "$synopsis" "$usage"
		usage=$("$t" --help | head -1)
		# the usage line on a usage error is the same
		run -2 --separate-stderr "$t" --no-such-option
		assert_equal "${stderr_lines[1]}" "$usage"
	done
}

@test "every long option is in the man page and both completions" {
	for t in $TOOLS; do
		opts=$("$t" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
		[ -n "$opts" ]
		for o in $opts; do
			grep -q -- "Fl -${o#--}" "man/$t.1" ||
			    fail "$t: $o missing from man/$t.1"
			sed -n "/^\t$t)/,/;;/p" completions/inferscope.bash |
			    grep -q -- "$o" ||
			    fail "$t: $o missing from the bash completion"
			sed -n "/^$t)/,/;;/p" completions/_inferscope |
			    grep -q -- "$o" ||
			    fail "$t: $o missing from the zsh completion"
		done
	done
}

@test "bash completion: parses, and completes options" {
	run bash -c '
		source /usr/share/bash-completion/bash_completion
		source completions/inferscope.bash
		COMP_WORDS=(is-cat --enc); COMP_CWORD=1; COMP_LINE="is-cat --enc"
		COMP_POINT=${#COMP_LINE}
		_inferscope_tool; echo "${COMPREPLY[*]}"'
	assert_success
	assert_output "--encode"
}

@test "bash completion offers each command only the formats it accepts" {
	complete_line() {
		bash -c 'source /usr/share/bash-completion/bash_completion
			source completions/inferscope.bash
			# bash splits words at "=" (COMP_WORDBREAKS)
			COMP_LINE=$1; read -ra COMP_WORDS <<< "${1//=/ = }"
			COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
			COMP_POINT=${#COMP_LINE}
			_inferscope_tool; echo "${COMPREPLY[*]}"' _ "$1"
	}
	run complete_line "inferscope run --format "
	assert_output "md html json text"
	run complete_line "inferscope analyze --format "
	assert_output "md html json text perfetto"
	run complete_line "is-report --format "
	assert_output "md html json perfetto text"
	run complete_line "is-report --color="
	assert_output "always never auto"
	# and each is what the command takes: run refuses perfetto
	run -2 inferscope run --format perfetto -- true
	assert_output --partial "--format wants md, html, json or text, not 'perfetto'"
}

@test "zsh completion parses" {
	run zsh -n completions/_inferscope
	assert_success
}

@test "every tool answers --help and --version with exit 0" {
	for t in $TOOLS; do
		run "$t" --help
		assert_success
		assert_line --index 0 --regexp "^usage: $t "
		run "$t" --version
		assert_success
		assert_output --regexp "^$t [0-9]+\.[0-9]+\.[0-9]+ \(trace format 1\.4\)$"
	done
}

@test "the examples run" {
	for ex in examples/*.sh; do
		run bash "$ex"
		assert_success
	done
}

@test "README's tool list names every tool and every man page exists" {
	for t in $TOOLS; do
		grep -q "^| \`$t\`" README.md || fail "$t missing from README"
		[ -f "man/$t.1" ]
	done
	[ -f man/is-trace.5 ]
	[ -f man/inferscope.7 ]
}

@test "make install puts tools, man pages and completions under DESTDIR" {
	d=$BATS_TEST_TMPDIR/root
	run make -s install DESTDIR="$d" PREFIX=/usr B="$IST_BUILD"
	assert_success
	for t in $TOOLS; do
		[ -x "$d/usr/bin/$t" ]
		[ -f "$d/usr/share/man/man1/$t.1" ]
		[ -f "$d/usr/share/bash-completion/completions/$t" ]
	done
	[ -f "$d/usr/share/man/man5/is-trace.5" ]
	[ -f "$d/usr/share/man/man7/inferscope.7" ]
	[ -f "$d/usr/share/zsh/vendor-completions/_inferscope" ]
	run "$d/usr/bin/is-cat" --version
	assert_success
	# the installed is-record finds its installed Python collector
	run "$d/usr/bin/is-record" -o "$BATS_TEST_TMPDIR/i.ist" -- \
	    /usr/bin/python3 -c 'import inferscope; print(inferscope.enabled())'
	assert_success
	assert_output True
	# its bootstrap compiled ahead, as built (checked by the source's hash,
	# which install keeps, not its time, which it does not)
	run --separate-stderr "$d/usr/bin/is-record" -o "$BATS_TEST_TMPDIR/i.ist" \
	    -- /usr/bin/python3 -v -c pass
	assert_success
	[[ $stderr == *"# code object from '$d/usr/lib/inferscope/python/__pycache__/sitecustomize.cpython-311.pyc'"* ]]
	# the API outside is-record: each Python's inferscope.pth names the
	# API's directory (no bootstrap in it), which imports anywhere
	site=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	assert_equal "$(cat "$d$site/inferscope.pth")" /usr/lib/inferscope/site
	[ ! -e "$d/usr/lib/inferscope/site/sitecustomize.py" ]
	run /usr/bin/python3 -c "import sys
sys.path.insert(0, '$d/usr/lib/inferscope/site')
from inferscope import scope, mark_event, enabled
with scope('x'):
    mark_event('y', {'k': 1})
print(enabled())"
	assert_success
	assert_output False
}

@test "a venv gets the Python API from the installed wheel, offline, and is-record records it" {
	py=$(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -1)
	[ -n "$py" ] || skip "no pyenv Python 3.12 to make a venv from"
	d=$BATS_TEST_TMPDIR/root
	make -s install DESTDIR="$d" PREFIX=/usr B="$IST_BUILD"
	"$py" -m venv "$BATS_TEST_TMPDIR/v"
	v=$BATS_TEST_TMPDIR/v/bin/python
	run "$v" -m pip install -q --no-index \
	    "$d/usr/share/inferscope/inferscope-0.1.0-py3-none-any.whl"
	assert_success
	run "$v" -c 'from inferscope import scope, enabled; print(enabled())'
	assert_output False
	# the trace reader came with it
	run "$v" -c 'import inferscope
print(len(list(inferscope.read("formats/vectors/valid/all-types.ist"))))'
	assert_output "$(is-cat formats/vectors/valid/all-types.ist | wc -l)"
	run is-record -o "$BATS_TEST_TMPDIR/v.ist" -- "$v" -c 'import inferscope
def f(): pass
f(); f(); print(inferscope.enabled())'
	assert_success
	assert_output True
	assert_equal "$(is-cat "$BATS_TEST_TMPDIR/v.ist" | grep -c '"__main__.f"')" 2
	run "$v" -m pip uninstall -q -y inferscope
	assert_success
	run "$v" -c 'import inferscope'
	assert_failure
}

@test "the README demo excerpt is what make demo prints" {
	run make -s demo B="$IST_BUILD"
	assert_success
	while IFS= read -r line; do
		case $line in
		'$ make demo'|'...'|'  ...'|'  thread         2') continue ;;
		esac
		assert_line "${line//build\//$IST_BUILD/}" ||
		    fail "README line not in make demo: $line"
	done < <(sed -n '/^\$ make demo/,/^```/p' README.md | sed '$d')
	# the excerpt of a real report: the same lines, numbers aside
	digits() { sed 's/[0-9][0-9.]* \(ns\|µs\|ms\|s\)\b/#/g; s/[0-9][0-9.]*/#/g'; }
	n=0
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		# the verdict: on a machine loaded by other work the torch demo
		# is CPU-oversubscribed (its threads queue for the two cores)
		if [[ $line == '**Verdict: CPU-bound**'* ]] &&
		    grep -q '^\*\*Verdict: CPU-oversubscribed\*\*' report.md; then
			n=$((n + 1))
			continue
		fi
		# and when torch's import took half the run or more, the
		# verdict says so at its end (52% in one run, 48% in another)
		digits < report.md | sed 's/; start-up dominates: Python imports took #% of the run\.$/./' |
		    grep -qxF -- "$(printf '%s\n' "$line" | digits)" ||
		    fail "README line not shaped like report.md: $line"
		n=$((n + 1))
	done < <(awk '/report.md. that .make demo. leaves/ { on = 1 }
	    on && /^```$/ { if (++fence == 2) exit; next }
	    fence == 1' README.md)
	[ "$n" -ge 5 ]
}

# README's fenced block after the line matching $1: each line of it is a
# line of the golden file $2, and it has 5 lines or more
readme_block_in() {
	local n=0 line
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		grep -qxF -- "$line" "$2" ||
		    fail "README line not in $2: $line"
		n=$((n + 1))
	done < <(awk -v start="$1" '$0 ~ start { on = 1 }
	    on && /^```$/ { if (++fence == 2) exit; next }
	    fence == 1' README.md)
	[ "$n" -ge 5 ]
}

@test "the README report excerpt is in the golden report of the example" {
	readme_block_in 'An excerpt of the$' tests/golden/report-example.md
}

@test "the README what-if excerpt is in the golden report of the example" {
	readme_block_in '^\*\*What fixing it would buy' tests/golden/report-example.md
}

@test "the README terminal excerpts are the golden text report's and --summary's" {
	readme_block_in '^The same run in the terminal' tests/golden/report-example.txt
	# the summary inferscope run ends with, for the example trace
	is-cat --encode examples/trace.jsonl | is-merge |
	    is-report -s -o "$BATS_TEST_TMPDIR/r.md" 2> "$BATS_TEST_TMPDIR/s"
	assert_equal "$(sed -n '/^It ends, as pytest does/,/report in/p' README.md |
	    sed -n 's/^    //p' | sed '$d')" "$(cat "$BATS_TEST_TMPDIR/s")"
}

@test "the GPU examples and checks without a GPU: the served transformer's help, one line saying there is no device, make check-gpu's scripts and tests parse" {
	/usr/bin/python3 -c 'import torch, sys; sys.exit(torch.cuda.is_available())' ||
	    skip "a CUDA device is here: make check-gpu runs these"
	run -0 /usr/bin/python3 examples/torch_gpu_serve.py --help
	assert_line --partial "[--tokenize-reps TOKENIZE_REPS] [--profile JSON]"
	run -1 --separate-stderr /usr/bin/python3 examples/torch_gpu_serve.py --steps 1
	assert_equal "$stderr" "torch_gpu_serve.py: no CUDA device"
	run -0 /usr/bin/python3 -c 'import ast, sys
for f in sys.argv[1:]:
    ast.parse(open(f).read(), f)' tests/gpu/gpucheck.py \
	    tests/gpu/serve_check.py tests/gpu/cuda_probes.py
	run -0 bats --count tests/gpu/
	assert_output 16
}

@test "scripts/gpu-bundle.sh packs for a GPU host without the Debian packages: the libraries InferScope and jq link, jq, bats with its helpers, and a runner that parses" {
	d=$PWD
	cd "$BATS_TEST_TMPDIR"
	run -0 sh "$d/scripts/gpu-bundle.sh" "$IST_BUILD"
	for l in libcbor.so.0.8 libzstd.so.1 libjansson.so.4 libyaml-0.so.2 \
	    libcmark-gfm.so.0.29.0.gfm.6 libjq.so.1; do
		[ -f ".gpu/lib/$l" ] || fail "no $l"
	done
	[ ! -e .gpu/lib/libc.so.6 ] || fail "the C library is the host's"
	[ -x .gpu/bin/jq ]
	run -0 tar -tf .gpu/bats.tar
	assert_line usr/bin/bats
	assert_line usr/lib/bats/bats-assert/load.bash
	assert_line usr/lib/bats/bats-support/load.bash
	sh -n .gpu/run.sh
}
