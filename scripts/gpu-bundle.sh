#!/bin/sh
# gpu-bundle.sh - pack what make check-gpu needs beside the build into
# .gpu/, for a GPU host that has CUDA, PyTorch and a C library as new as
# this one's, but not the Debian packages InferScope links (libcbor, zstd,
# jansson, libyaml, cmark-gfm) nor bats and jq: their shared libraries, jq
# and bats with bats-support and bats-assert.  On that host, from the
# repository's root with build/ beside it:  sh .gpu/run.sh [seconds]
# runs make check-gpu's tests without building (IST_GPU_FIGURES: $OUT).
set -eu
B=${1:-build}
[ -x "$B/bin/is-record" ] || { echo "gpu-bundle: no $B/bin/is-record: make first" >&2; exit 1; }
rm -rf .gpu
mkdir -p .gpu/lib .gpu/bin
# the libraries InferScope's programs and jq link, but the C library's
for l in $(ldd "$B"/bin/* "$B"/lib/*.so "$B"/python/*.so "$(command -v jq)" |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u); do
	case ${l##*/} in
	libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++*|libgcc_s*) ;;
	*) cp -L "$l" .gpu/lib/ ;;
	esac
done
cp "$(command -v jq)" .gpu/bin/
tar -cf .gpu/bats.tar -C / usr/bin/bats usr/lib/bats-core \
    usr/libexec/bats-core usr/lib/bats
cat > .gpu/run.sh <<'RUN'
#!/bin/sh
# make check-gpu's tests with the carried build, libraries and bats
set -u
tar -C / -xf .gpu/bats.tar
export LD_LIBRARY_PATH=$PWD/.gpu/lib PATH=$PWD/.gpu/bin:$PATH
nvidia-smi -L
python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda)'
out=${OUT:-$PWD/.gpu/out}
mkdir -p "$out/fig"
IST_GPU_FIGURES=$out/fig PYTHONUNBUFFERED=1 LC_ALL=C TZ=UTC \
    IST_BUILD=$PWD/build PATH="$PWD/build/bin:$PATH" \
    timeout "${1:-480}" bats tests/gpu/ > "$out/log" 2>&1
rc=$?
cat "$out/log"
echo "rc=$rc"
RUN
du -sh .gpu
