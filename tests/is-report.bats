#!/usr/bin/env bats
# is-report: golden outputs for every format, the HTML in a real Chromium,
# the Perfetto export parsed, bad input.

load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	is-cat --encode examples/trace.jsonl | is-merge | is-analyze -o "$T/ex.ist"
}

@test "golden reports of the example trace: md, html, json, perfetto" {
	for f in md html json perfetto; do
		is-report -f $f -o "$T/out.$f" "$T/ex.ist"
		golden tests/golden/report-example.$f "$(cat "$T/out.$f")"
	done
	# md is the default, to standard output
	run -0 is-report "$T/ex.ist"
	assert_equal "$output" "$(cat tests/golden/report-example.md)"
}

@test "golden report of a CPU-only run and of a gate comparison" {
	python3 tests/py/scenarios.py steps | is-cat --encode -o "$T/base.ist"
	python3 tests/py/scenarios.py steps_slow | is-cat --encode |
	    is-analyze --baseline "$T/base.ist" -o "$T/slow.ist"
	golden tests/golden/report-steps.md "$(is-report "$T/slow.ist")"
}

@test "reports are reproducible and made from the trace when it has no analysis" {
	is-report -f html "$T/ex.ist" > "$T/a.html"
	is-report -f html "$T/ex.ist" > "$T/b.html"
	cmp "$T/a.html" "$T/b.html"
	is-cat --encode examples/trace.jsonl | is-merge > "$T/plain.ist"
	assert_equal "$(is-report "$T/plain.ist")" "$(cat tests/golden/report-example.md)"
	# a pipe works as well as a file
	is-cat --encode examples/trace.jsonl | is-merge | is-analyze |
	    is-report -f json | jq -e '.report_version == 1 and
	    .analysis.verdict.classification == "CPU-bound"'
}

@test "an analysed trace is rendered from its own analysis; one cut before it is analysed here, from a file or a pipe" {
	# is-analyze promises the analysis in the header of what it writes
	is-cat "$T/ex.ist" | head -1 | jq -e '.analysis_version == 1'
	# many small frames, the analysis alone in the last: cut it off
	is-cat "$T/ex.ist" | is-cat --encode --frame-bytes 200 -o "$T/f.ist"
	golden tests/golden/report-example.md "$(is-report "$T/f.ist")"
	head -c $(($(stat -c %s "$T/f.ist") - 20)) "$T/f.ist" > "$T/cut.ist"
	run -1 --separate-stderr is-report -o "$T/a.md" "$T/cut.ist"
	assert_regex "$stderr" "^is-report: warning: trace '$T/cut.ist' is truncated: last [0-9]+ bytes dropped$"
	cut=${stderr#*last }
	grep -q '^\*\*Verdict: CPU-bound\*\*' "$T/a.md"
	# a pipe is kept aside and read again
	run -1 --separate-stderr sh -c "cat '$T/cut.ist' | is-report"
	assert_equal "$output" "$(cat "$T/a.md")"
	assert_equal "$stderr" "is-report: warning: trace '<stdin>' is truncated: last $cut"
	# with nowhere to keep it: one line, nothing written
	run -1 --separate-stderr sh -c "cat '$T/cut.ist' | TMPDIR=$T/none is-report"
	assert_equal "$output" ""
	assert_equal "$stderr" "is-report: '<stdin>': the trace ends without the analysis its header promises: trace '<stdin>' is truncated: last $cut; run is-analyze on it again"
	# the Perfetto export keeps every event and lacks only the verdict
	run -1 --separate-stderr sh -c "cat '$T/cut.ist' | is-report -f perfetto"
	echo "$output" | jq -e '(.otherData | has("verdict") | not) and
	    ([.traceEvents[] | select(.ph == "X")] | length) > 0'
	assert_equal "$stderr" "is-report: warning: trace '<stdin>' is truncated: last $cut
is-report: warning: '<stdin>' ends without the analysis its header promises: the export has no verdict"
}

@test "the analysis is-analyze wrote is read without decoding the events before it; one another writer put elsewhere is still found" {
	[ -z "${IST_SANITIZE:-}" ] || skip "instructions are counted with callgrind, which ASan does not mix with"
	is-record -o "$T/r.ist" -- /usr/bin/python3 -c '
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
f(22)'
	is-merge "$T/r.ist" | is-analyze -o "$T/a.ist"
	# is-analyze's analysis starts a frame of its own
	assert_equal "$(is-info --json "$T/a.ist" | jq .frames)" \
	    "$(is-cat "$T/a.ist" | head -n -1 | is-cat --encode | is-info --json - | jq '.frames + 1')"
	# the same records in one frame, the analysis after the events
	is-cat "$T/a.ist" | is-cat --encode -o "$T/b.ist"
	assert_equal "$(is-info --json "$T/b.ist" | jq .frames)" 1
	is-report -o "$T/a.md" "$T/a.ist"
	is-report -o "$T/b.md" "$T/b.ist"
	cmp "$T/a.md" "$T/b.md"
	grep -q '^\*\*Verdict: ' "$T/a.md"
	# instructions, which load does not change: skimming the frames
	# (of each only its first record decompressed and looked at, the
	# rest passed over by its block sizes) costs a fraction of reading
	# the events, which the second trace needs (2026-12-02: 8.2 M
	# against 111 M; 22.6 M when every frame was decompressed whole, the
	# first twice, for the header's promise and for the report)
	icount() {
		valgrind --tool=callgrind --callgrind-out-file="$T/cg" \
		    is-report -o /dev/null "$1" 2>&1 |
		    sed -n 's/.*Collected : \([0-9]*\)$/\1/p'
	}
	a=$(icount "$T/a.ist")
	b=$(icount "$T/b.ist")
	echo "instructions: $a skimming, $b reading whole"
	[ "$a" -gt 0 ] && [ $((a * 8)) -lt "$b" ]
	# a pipe that cannot be kept for a second reading is read whole at once
	run -0 --separate-stderr sh -c "cat '$T/b.ist' | TMPDIR=$T/none is-report"
	assert_equal "$output" "$(cat "$T/a.md")"
	# one whose copy stopped (no room left) says why there is no report
	mkdir "$T/tiny"
	mount -t tmpfs -o size=64k tmpfs "$T/tiny" 2>/dev/null ||
	    skip "cannot mount a small tmpfs here to fill it"
	run -1 --separate-stderr sh -c "cat '$T/b.ist' | TMPDIR=$T/tiny is-report"
	umount "$T/tiny"
	assert_equal "$output" ""
	assert_equal "$stderr" "is-report: '<stdin>': no analysis at the start of a frame, where is-analyze puts it, and the input cannot be read again to look further; give it as a file"
}

@test "md and json of a file: a trace that promises its analysis is skimmed on one thread, any other analysed here on two (read ahead), the same report" {
	# threads ARGS...: the threads is-report starts (LeakSanitizer cannot
	# work under ptrace: off for this run in a -fsanitize build)
	threads() {
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		    strace -f -qq -e trace=clone,clone3 -o "$T/st" \
		    is-report "$@" > "$T/out"
		grep -c CLONE_THREAD "$T/st" || true
	}
	is-record -o "$T/r.ist" -- /usr/bin/python3 -c '
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
f(20)'
	is-merge -o "$T/m.ist" "$T/r.ist"
	is-analyze -o "$T/a.ist" "$T/m.ist"
	run threads -f md "$T/a.ist"
	assert_output 0
	cp "$T/out" "$T/a.md"
	run threads -f md "$T/m.ist"
	assert_output 1
	cmp "$T/out" "$T/a.md"
	run threads -f json "$T/a.ist"
	assert_output 0
	cp "$T/out" "$T/a.json"
	run threads -f json "$T/m.ist"
	assert_output 1
	cmp "$T/out" "$T/a.json"
}

@test "a pipe is kept for a second reading (an analysis cut off its end, the steps of one made here), never for the Perfetto export" {
	# strace -y names each descriptor: the kept copy is an unlinked file
	kept() {
		local f=$1
		shift
		cat "$f" | strace -f -y -e trace=write -o "$T/st" is-report "$@" \
		    > /dev/null
		sed -n 's/.*(deleted).*= \([0-9]*\)$/\1/p' "$T/st" |
		    awk '{ s += $1 } END { print s + 0 }'
	}
	is-record -o "$T/r.ist" -- /usr/bin/python3 -c '
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
f(24)'
	is-merge "$T/r.ist" | is-cat | is-cat --encode --frame-bytes 20000 \
	    -o "$T/m.ist"
	is-analyze "$T/m.ist" | is-cat |
	    is-cat --encode --frame-bytes 20000 -o "$T/a.ist"
	# analysed: every byte kept, in case the analysis was cut off
	assert_equal "$(kept "$T/a.ist")" "$(stat -c %s "$T/a.ist")"
	# merged only: analysed here, the steps read a second time
	assert_equal "$(kept "$T/m.ist")" "$(stat -c %s "$T/m.ist")"
	# the Perfetto export reads once
	assert_equal "$(kept "$T/m.ist" -f perfetto)" 0
}

@test "control characters in names cannot write Markdown or reach a terminal: no link or image from a name reaches the md or the HTML" {
	# a carriage return ends a Markdown line: a name could start a new
	# paragraph with a link and a tracking image
	sed 's/"name":"inference"/"name":"inference\\r[click](https:\/\/evil.example\/x)\\r![t](https:\/\/evil.example\/t.png)\\u001b[31m\\u009b2J"/' \
	    examples/trace.jsonl | is-cat --encode | is-merge | is-analyze -o "$T/evil.ist"
	is-report -o "$T/evil.md" "$T/evil.ist"
	is-report -f html -o "$T/evil.html" "$T/evil.ist"
	# each control character (the C1 CSI, U+009B, too) became U+FFFD;
	# the name stays inside its code span or escaped text
	run -1 grep -c $'\r\|\e\|\xc2\x9b' "$T/evil.md"
	assert_equal "$(grep -c 'inference�\[click\](https://evil.example/x)�!\[t\](https://evil.example/t.png)�\[31m�2J' "$T/evil.md")" 6
	run -1 grep -E '<a [^>]*evil|<img [^>]*evil' "$T/evil.html"
	# the rest of the report is the example's
	grep -q '^\*\*Verdict: CPU-bound\*\*' "$T/evil.md"
	# nor a terminal: the text report has no control character at all
	is-report -f text -o "$T/evil.txt" "$T/evil.ist"
	run -1 grep -c $'\r\|\e\|\xc2\x9b' "$T/evil.txt"
	COLUMNS=200 is-report -f text "$T/evil.ist" | grep -qF '  inference?[click](https://evil.example/x)?![t](https://evil.example/t.png)?[31m?2J    '
	# and the name takes the columns it shows: the table's figures align
	assert_equal "$(COLUMNS=200 is-report -f text "$T/evil.ist" | grep -F '  inference?[click]' | wc -L)" 200
}

@test "under the functions: the time spent importing and collecting garbage" {
	python3 tests/py/scenarios.py startup | is-cat --encode -o "$T/s.ist"
	run -0 is-report "$T/s.ist"
	assert_line 'Imports took 370.00 ms in 3 imports (the import system'"'"'s functions above are theirs); slowest (cumulative, as -X importtime): `numpy` 300.00 ms, `tokenizers` 50.00 ms, `json` 20.00 ms.'
	refute_line --partial 'Garbage collection:'
	# the suggestion's code is a code span, in the HTML too, not literal
	# backticks
	assert_line --partial 'after start-up. `python -X importtime` itemises every module.'
	is-report -f html "$T/s.ist" | grep -qF 'after start-up. <code>python -X importtime</code> itemises'
	python3 tests/py/scenarios.py gc | is-cat --encode -o "$T/g.ist"
	run -0 is-report "$T/g.ist"
	assert_line 'Garbage collection: 12 collections, 90.00 ms in all (1 while importing, 30.00 ms), the longest 40.00 ms.'
}

@test "an unmerged trace is reported with a warning on stderr, not only in the report" {
	python3 tests/py/scenarios.py gpu_idle | tac | sed '$d' |
	    { python3 tests/py/scenarios.py gpu_idle | sed -n 1p; cat; } |
	    is-cat --encode -o "$T/u.ist"
	run -0 --separate-stderr is-report -o "$T/u.md" "$T/u.ist"
	assert_equal "$stderr" "is-report: warning: '$T/u.ist' is not in time order (29 records left out): run is-merge first"
	grep -q '^- 29 records were out of time order and left out' "$T/u.md"
	run -0 --separate-stderr is-report -f json < "$T/u.ist"
	assert_equal "$stderr" "is-report: warning: '<stdin>' is not in time order (29 records left out): run is-merge first"
	# merged, it says nothing
	run -0 --separate-stderr is-report -o "$T/m.md" "$T/ex.ist"
	assert_equal "$stderr" ""
}

@test "the HTML is self-contained: no external resources, its own two inline scripts, four charts" {
	is-report -f html -o "$T/r.html" "$T/ex.ist"
	run grep -c '<svg' "$T/r.html"
	assert_output 4
	run grep -Eo '(src|href)=|<link|@import|url\(|fetch\(|XMLHttpRequest' "$T/r.html"
	assert_failure
	# the viewer's data and its code, both inline
	run grep -o '<script[^>]*>' "$T/r.html"
	assert_output '<script type="application/json" id="is-data">
<script>'
	run grep -o 'https\?://[^"]*' "$T/r.html"
	assert_output "http://www.w3.org/2000/svg
http://www.w3.org/2000/svg
http://www.w3.org/2000/svg
http://www.w3.org/2000/svg"
	# well-formed enough for a strict parser: every tag closed in order
	python3 - "$T/r.html" <<'PY'
import html.parser, sys
void = {"meta", "br", "hr", "img", "input", "link", "rect", "line", "path"}
class P(html.parser.HTMLParser):
    stack = []
    def handle_starttag(self, tag, a):
        if tag not in void:
            self.stack.append(tag)
    def handle_startendtag(self, tag, a):
        pass
    def handle_endtag(self, tag):
        if tag in void:
            return
        top = self.stack.pop()
        assert top == tag, (top, tag, self.getpos())
p = P()
p.feed(open(sys.argv[1], encoding="utf-8").read())
assert p.stack == [], p.stack
PY
}

@test "the HTML has no empty section: a trace with nothing to chart has no Charts heading" {
	printf '%s\n' '{"type":"header","format":"inferscope-trace","version":[1,2],"producer":"t"}' \
	    '{"type":"process","pid":1,"name":"x"}' | is-cat --encode -o "$T/empty.ist"
	is-report -f html -o "$T/e.html" "$T/empty.ist"
	run -1 grep -c '<h2>Charts</h2>' "$T/e.html"
	# every heading is followed by something other than a heading
	python3 - "$T/e.html" "$T/ex.ist" <<-'PY'
	import re, subprocess, sys
	for html in (open(sys.argv[1]).read(),
	             subprocess.run(["is-report", "-f", "html", sys.argv[2]],
	                            capture_output=True, text=True).stdout):
	    # (a subheading may follow its heading)
	    for m in re.finditer(r"</h([1-3])>\s*<h([1-3])>", html):
	        assert int(m.group(2)) > int(m.group(1)), html[m.start() - 80:m.end()]
	PY
	is-report -f html "$T/ex.ist" | grep -q '<h2>Charts</h2>'
}

@test "the HTML renders in headless Chromium: DOM with the charts, a screenshot" {
	command -v chromium >/dev/null || fail "chromium is not installed (scripts/deps.sh check installs it)"
	is-report -f html -o "$T/r.html" "$T/ex.ist"
	chromium --headless --no-sandbox --disable-gpu --dump-dom \
	    "file://$T/r.html" > "$T/dom.html" 2>/dev/null
	run grep -c '<rect' "$T/dom.html"
	[ "$output" -ge 20 ]
	grep -q 'Verdict: CPU-bound' "$T/dom.html"
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	    --window-size=1280,2000 --screenshot="$T/r.png" \
	    "file://$T/r.html" >/dev/null 2>&1
	# a PNG of the requested size, with more than a blank page in it
	python3 - "$T/r.png" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n"
w, h, depth, ctype = struct.unpack(">IIBB", d[16:26])
assert (w, h) == (1280, 2000), (w, h)
# decode the pixels: count those that are not (near) white
pos, idat = 8, b""
while pos < len(d):
    n, kind = struct.unpack(">I4s", d[pos:pos + 8])
    if kind == b"IDAT":
        idat += d[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}[ctype]
stride = w * bpp
prev = bytearray(stride)
ink = 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 4 == 0:
        for x in range(0, w, 4):
            px = line[x * bpp:x * bpp + 3]
            if min(px) < 200:
                ink += 1
    prev = line
# text, tables and charts: well over 1% of the sampled pixels
assert ink > 0.01 * (w // 4) * (h // 4), ink
PY
}

@test "a name cannot leave the viewer's data: </script>, an image, U+2028, all text in the browser's DOM" {
	command -v chromium >/dev/null || fail "chromium is not installed (scripts/deps.sh check installs it)"
	sed 's/"name":"app.tokenizer.encode"/"name":"<\/script><img src=x onerror=document.title=1>\\u2028<!--\&amp;"/' \
	    examples/trace.jsonl | is-cat --encode | is-merge | is-analyze -o "$T/evil.ist"
	is-report -f html -o "$T/evil.html" "$T/evil.ist"
	# only the page's own two scripts, and no image
	run grep -c '<script' "$T/evil.html"
	assert_output 2
	run -1 grep -E '<img|</script><|<!--' "$T/evil.html"
	PYTHONPATH=$ROOT/tests/py timeout 120 python3 - "$T" <<-'PY'
	import json, sys
	from cdp import Page
	with Page("file://%s/evil.html" % sys.argv[1]) as p:
	    # the script ran (the viewer is shown) and no image was made
	    assert p.eval("document.getElementById('is-viewer').style.display") == "block"
	    assert p.eval("document.images.length") == 0
	    assert p.eval("document.title") != "1"
	    # the name, whole, in the flame graph's thread data
	    x, y, w, h = p.box("is-flame")
	    p.mouse("mouseMoved", x + 20, y + 18 + 9)
	    tip = p.eval("document.getElementById('is-tip').textContent")
	    assert tip.split("\n")[0] == "</script><img src=x onerror=document.title=1>\u2028<!--&amp;", tip
	PY
}

@test "the HTML viewer in headless Chromium: the wheel zooms about the cursor, a drag pans, a kernel's hover names its launch, a click zooms the flame graph" {
	command -v chromium >/dev/null || fail "chromium is not installed (scripts/deps.sh check installs it)"
	is-report -f html -o "$T/r.html" "$T/ex.ist"
	is-cat "$T/ex.ist" > "$T/ex.jsonl"
	PYTHONPATH=$ROOT/tests/py timeout 120 python3 - "$T" <<-'PY'
	import json, sys
	from cdp import Page
	T = sys.argv[1]
	ev = [json.loads(l) for l in open(T + "/ex.jsonl")]
	ranges = [e for e in ev if "end_ns" in e and e["type"] != "loss"]
	t0 = min(e["start_ns"] for e in ranges)
	end = max(e["end_ns"] for e in ranges) - t0
	with Page("file://%s/r.html" % T) as p:
	    view = lambda: [int(v) for v in p.eval(
	        "document.getElementById('is-timeline').dataset.view").split(",")]
	    tip = lambda: p.eval("document.getElementById('is-tip').style.display"
	        " == 'block' ? document.getElementById('is-tip').textContent : ''")
	    # the script ran: the viewer shown, the static timeline hidden
	    assert p.eval("getComputedStyle(document.getElementById('is-static')).display") == "none"
	    # the whole run, from its first range to its last end
	    assert view() == [0, end], (view(), end)
	    x, y, w, h = p.box("is-timeline")
	    plot = w - 190 - 10                     # the label column, a margin
	    at = lambda v, t: x + 190 + (t - v[0]) * plot / (v[1] - v[0])
	    # the wheel: 500 units in is a factor 1.0015^-500, about the cursor
	    cx = x + 190 + plot * 0.3
	    v0 = view()
	    t_cursor = v0[0] + (cx - x - 190) * (v0[1] - v0[0]) / plot
	    p.wheel(cx, y + 40, -500)
	    v1 = view()
	    span0, span1 = v0[1] - v0[0], v1[1] - v1[0]
	    assert abs(span1 / span0 - 1.0015 ** -500) < 0.01, (span0, span1)
	    t_after = v1[0] + (cx - x - 190) * span1 / plot
	    assert abs(t_after - t_cursor) <= span1 * 0.005, (t_cursor, t_after)
	    # a drag of 120 px to the left shows what was 120 px to the right
	    p.mouse("mousePressed", cx, y + 40, button="left")
	    p.mouse("mouseMoved", cx - 120, y + 40, button="left")
	    p.mouse("mouseReleased", cx - 120, y + 40, button="left")
	    v2 = view()
	    shift = 120 * span1 / plot
	    assert abs((v2[0] - v1[0]) - shift) <= span1 * 0.005, (v1, v2, shift)
	    assert v2[1] - v2[0] == span1
	    # reset, then hover along the GPU stream's lane (the last one, at
	    # the bottom) until a kernel's tooltip names the launch behind it
	    p.eval("document.getElementById('is-reset').click()")
	    assert view() == [0, end]
	    name, ly, lh = json.loads(p.eval("document.getElementById('is-timeline').dataset.lanes"))[-1]
	    assert name == "GPU 0 stream 7", name
	    found = None
	    for i in range(0, int(plot), 2):
	        p.mouse("mouseMoved", x + 190 + i, y + ly + 7)
	        t = tip()
	        if "launched by" in t and "\nkernel on" in t:
	            found = t
	            break
	    assert found, "no kernel's hover named its launch"
	    k = next(e for e in ev if e["type"] == "gpu_kernel" and e["name"] in found)
	    api = next(e for e in ev if e["type"] == "cuda_api" and e["correlation"] == k["correlation"])
	    lines = found.split("\n")
	    assert lines[0] == k["name"] and lines[1] == "kernel on GPU 0 stream 7", lines
	    # its launch: the API call with its correlation, how long before
	    gap = (k["start_ns"] - api["start_ns"]) / 1e3
	    assert lines[3] == "launched by %s on %s, %.1f \u00b5s before" % (
	        api["name"], "MainThread 4242", gap), (lines, gap)
	    # the flame graph: the top bar holds the thread's calls; a click on
	    # the call below zooms to it
	    fx, fy, fw, fh = p.box("is-flame")
	    p.mouse("mouseMoved", fx + fw / 2, fy + 9)
	    assert tip().split("\n")[:2] == ["all calls", "inclusive 12.80 ms (100.0% of the thread's calls)"], tip()
	    assert p.eval("document.getElementById('is-flame').dataset.zoom") == "all calls"
	    p.mouse("mousePressed", fx + 5, fy + 18 + 9, button="left", clickCount=1)
	    p.mouse("mouseReleased", fx + 5, fy + 18 + 9, button="left", clickCount=1)
	    assert p.eval("document.getElementById('is-flame').dataset.zoom") == "app.tokenizer.encode"
	PY
}

@test "the terminal report: golden text and ASCII, every line within COLUMNS, the same layout in ASCII" {
	COLUMNS=80 is-report -f text -o "$T/t.txt" "$T/ex.ist"
	golden tests/golden/report-example.txt "$(cat "$T/t.txt")"
	COLUMNS=60 is-report -f text --ascii "$T/ex.ist" > "$T/a.txt"
	golden tests/golden/report-example-ascii.txt "$(cat "$T/a.txt")"
	# no colour off a terminal; ASCII is ASCII
	run -1 grep -c $'\e' "$T/t.txt"
	run -1 env LC_ALL=C grep -c $'[\x80-\xff]' "$T/a.txt"
	# every width from 40: no line wider, and ASCII keeps the layout, one
	# column for one column (the widest possible line is the ruler)
	for w in 40 57 80 133 200; do
		COLUMNS=$w is-report -f text "$T/ex.ist" > "$T/u$w"
		COLUMNS=$w is-report -f text --ascii "$T/ex.ist" > "$T/a$w"
		python3 - "$T/u$w" "$T/a$w" $w <<-'PY'
		import sys
		u = open(sys.argv[1], encoding="utf-8").read().split("\n")
		a = open(sys.argv[2], encoding="ascii").read().split("\n")
		w = int(sys.argv[3])
		assert len(u) == len(a), (len(u), len(a))
		for x, y in zip(u, a):
		    assert len(x) <= w, (w, x)
		    assert len(x) == len(y), (x, y)
		# the timeline strips fill the width exactly
		strips = [x for x in u if x.startswith("  GPU 0 str")]
		assert strips and all(len(x) == w for x in strips), strips
		PY
	done
	# the findings, scopes and kernels are the analysis's, in its order
	is-report -f json "$T/ex.ist" | jq -r '.analysis.findings[].severity' > "$T/sev"
	assert_equal "$(sed -n 's/^ *[0-9][0-9]* \([a-z]*\)  .*/\1/p' "$T/t.txt")" "$(cat "$T/sev")"
	is-report -f json "$T/ex.ist" | jq -r '.analysis.kernels[:5][].name' > "$T/k"
	assert_equal "$(sed -n '/^Kernels/,$p' "$T/t.txt" | tail -n +3 | sed -n 's/^  \([^ ]*\) .*/\1/p')" "$(cat "$T/k")"
}

@test "the terminal report's strip: a GPU stream busy for the first half of the run fills the first half of its strip" {
	# a thread in one call for 100 ms; a kernel from 0 to 50 ms, then
	# nothing on the stream
	python3 - > "$T/h.jsonl" <<-'PY'
	import json
	print(json.dumps({"type": "header", "format": "inferscope-trace", "version": [1, 2], "producer": "test"}))
	print(json.dumps({"type": "cpu_call", "pid": 1, "tid": 1, "start_ns": 0, "end_ns": 100000000, "name": "main"}))
	print(json.dumps({"type": "gpu_kernel", "pid": 1, "device": 0, "stream": 7, "start_ns": 0, "end_ns": 50000000, "name": "k", "correlation": 1}))
	PY
	is-cat --encode "$T/h.jsonl" -o "$T/h.ist"
	for w in 50 80 131; do
		COLUMNS=$w is-report -f text "$T/h.ist" > "$T/h.txt"
		grep '^  GPU 0 str' "$T/h.txt" > "$T/strip"
		python3 - "$T/strip" $w <<-'PY'
		import sys
		line = open(sys.argv[1], encoding="utf-8").read().rstrip("\n")
		w = int(sys.argv[2])
		label = min(24, w // 4)
		cells = line[2 + label + 1:]
		assert len(cells) == w - 2 - label - 1, (len(cells), w)
		full = cells.count("\u2588")
		# half the cells are full, the other half blank, one partial
		# cell at most where the kernel ends
		half = len(cells) / 2
		assert abs(full - half) <= 1, (full, half, cells)
		assert cells[:int(half) - 1] == "\u2588" * (int(half) - 1), cells
		assert cells[int(half) + 1:].strip() == "", cells
		PY
	done
	# the thread's call covers the whole run: a full strip
	grep -q "^  1/1 *$(printf '█%.0s' $(seq 1 $((80 - 2 - 20 - 1))))\$" <(COLUMNS=80 is-report -f text "$T/h.ist")
}

@test "the terminal report: colour on a terminal only, NO_COLOR and TERM=dumb honoured, --color overrides" {
	command -v script >/dev/null || fail "script (util-linux) is missing"
	# on a terminal (a pty from script): colour, and the terminal's width
	script -qec "stty cols 90; TERM=xterm is-report -f text $T/ex.ist" /dev/null > "$T/tty.txt"
	grep -q $'\e\\[1mVerdict: CPU-bound\e\\[0m' "$T/tty.txt"
	grep -q $'\e\\[31mhigh\e\\[0m' "$T/tty.txt"
	python3 - "$T/tty.txt" <<-'PY'
	import re, sys
	t = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1], encoding="utf-8").read())
	lines = [l.rstrip("\r") for l in t.split("\n")]
	assert max(map(len, lines)) == 90, max(map(len, lines))
	PY
	script -qec "NO_COLOR=1 TERM=xterm is-report -f text $T/ex.ist" /dev/null > "$T/nc.txt"
	run -1 grep -c $'\e' "$T/nc.txt"
	script -qec "TERM=dumb is-report -f text $T/ex.ist" /dev/null > "$T/dumb.txt"
	run -1 grep -c $'\e' "$T/dumb.txt"
	script -qec "TERM=xterm is-report -f text --color=never $T/ex.ist" /dev/null > "$T/never.txt"
	run -1 grep -c $'\e' "$T/never.txt"
	# --color=always through a pipe; the text is the same without escapes
	is-report -f text --color=always "$T/ex.ist" > "$T/always.txt"
	grep -q $'\e\\[32m' "$T/always.txt"
	# (and a legend of the colours under the strips)
	assert_equal "$(sed 's/\x1b\[[0-9;]*m//g' "$T/always.txt" | grep -v '^ *█ scope  █ Python')" "$(is-report -f text "$T/ex.ist")"
	run -2 --separate-stderr is-report -f text --color=sometimes "$T/ex.ist"
	assert_equal "$stderr" "is-report: --color wants always, never or auto, not 'sometimes'"
}

@test "--summary: the verdict and the top three findings on stderr, a line each, cut to a terminal's width" {
	run -0 --separate-stderr is-report --summary -o "$T/r.md" "$T/ex.ist"
	assert_equal "$stderr" "Verdict: CPU-bound (confidence 0.87). The GPU is idle 75.9% of the active window, waiting for the host; the largest saving: overlap the leading host work with the rest of the step, about 860 µs per step (20.7%).
  high   GPU 0 is idle 75.9% of its active window (10.569 ms of 13.917 ms)
  low    8 copies (16.1 MiB) use pageable host memory
  high   The host is blocked in 4 synchronisations for 18.0% of the run (3.108 ms)"
	# the report itself is unchanged
	assert_equal "$(cat "$T/r.md")" "$(cat tests/golden/report-example.md)"
	# on a terminal of 60 columns: each line cut there, with an ellipsis
	script -qec "stty cols 60; NO_COLOR=1 is-report -s -o $T/r2.md $T/ex.ist" /dev/null > "$T/s.txt"
	printf '%s\n' "$stderr" > "$T/full.txt"
	python3 - "$T/s.txt" "$T/full.txt" <<-'PY'
	import sys
	lines = open(sys.argv[1], encoding="utf-8").read().replace("\r", "").split("\n")[:-1]
	full = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
	assert len(lines) == 4 == len(full), lines
	# a line longer than the terminal is cut to 59 characters and an ellipsis; a shorter one is whole
	for l, f in zip(lines, full):
	    assert l == (f if len(f) <= 60 else f[:59] + "\u2026"), (l, f)
	assert sum(len(f) > 60 for f in full) == 3, full
	assert lines[0].startswith("Verdict: CPU-bound (confidence 0.87). The GPU"), lines
	PY
}

@test "the Perfetto export: tracks, flows from launches to kernels, counters, instants" {
	is-report -f perfetto -o "$T/p.json" "$T/ex.ist"
	python3 - "$T/p.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {(e["name"], e["args"]["name"]) for e in ev if e["ph"] == "M"}
assert ("process_name", "python3") in names, names
assert ("thread_name", "MainThread") in names
assert ("process_name", "GPU 0: NVIDIA H100 80GB HBM3") in names
assert ("thread_name", "stream 7") in names
s = {e["id"] for e in ev if e["ph"] == "s"}
f = {e["id"] for e in ev if e["ph"] == "f"}
assert len(s) == 20 and s == f, (len(s), len(f))
# every flow starts inside a CUDA call on the host and ends on a GPU stream
x = [e for e in ev if e["ph"] == "X"]
for e in ev:
    if e["ph"] == "f":
        assert e["pid"] == 1000000000 and e["bp"] == "e"
kernels = [e for e in x if e.get("cat") == "kernel"]
assert len(kernels) == 12 and kernels[0]["args"]["grid"] == [96, 1, 1]
assert sum(1 for e in ev if e["ph"] == "C") == 8
inst = [e for e in ev if e["ph"] == "i" and e.get("cat") == "mark"]
assert len(inst) == 4 and inst[0]["args"] == {"tokens": 512, "batch": 8}
assert d["otherData"]["verdict"] == "CPU-bound"
assert d["otherData"]["clock_uncertainty_ns"] == 1000000
# timestamps are exact microseconds with nanosecond digits
assert any(e["ph"] == "X" and e["ts"] == 5000100.0 for e in ev)
PY
}

@test "the Perfetto export of a real run names each thread once, by its own name" {
	cat > "$T/threads.py" <<-'PY'
	import threading, time
	def work():
	    sum(range(200000))
	t = threading.Thread(target=work, name="tokenizer-worker")
	t.start(); t.join()
	time.sleep(0.05)
	PY
	is-record -o "$T/r.ist" -- /usr/bin/python3 "$T/threads.py"
	is-merge "$T/r.ist" | is-report -f perfetto -o "$T/p.json"
	python3 - "$T/p.json" <<-'PY'
	import collections, json, sys
	ev = json.load(open(sys.argv[1]))["traceEvents"]
	m = [e for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
	n = collections.Counter((e["pid"], e["tid"]) for e in m)
	assert all(c == 1 for c in n.values()), n
	names = {(e["pid"], e["tid"]): e["args"]["name"] for e in m}
	main = [k for k in names if k[0] == k[1]]
	# the sampler saw the main thread as "python3" first: the thread's own
	# name wins, not the process's
	assert [names[k] for k in main] == ["MainThread"], names
	assert "tokenizer-worker" in names.values(), names
	PY
}

@test "the Perfetto export narrowed: --from/--to keep the events that overlap the window, --min-dur-us the longer ranges, flows with their slices" {
	is-cat "$T/ex.ist" > "$T/ex.jsonl"
	for args in "--from 0.005 --to 0.010" "--from 0.012" "--to 0.0001" "--min-dur-us 100" "--from 0.004 --to 0.013 --min-dur-us 35"; do
		is-report -f perfetto $args -o "$T/n.json" "$T/ex.ist"
		python3 - "$T/ex.jsonl" "$T/n.json" $args <<-'PY'
		import json, sys
		recs = [json.loads(l) for l in open(sys.argv[1])]
		ev = json.load(open(sys.argv[2]))["traceEvents"]
		opt = dict(zip(sys.argv[3::2], map(float, sys.argv[4::2])))
		t0 = next(r.get("start_ns", r.get("ts_ns")) for r in recs
		          if "start_ns" in r or "ts_ns" in r)
		lo = t0 + opt.get("--from", 0) * 1e9
		hi = t0 + opt.get("--to", 1e9) * 1e9
		md = opt.get("--min-dur-us", 0) * 1e3
		# what should remain, from is-cat's records alone
		want = sorted(r["start_ns"] for r in recs
		              if "start_ns" in r and "end_ns" in r
		              and r["type"] not in ("clock",)
		              and r["end_ns"] >= lo and r["start_ns"] < hi
		              and r["end_ns"] - r["start_ns"] >= md)
		got = sorted(round(e["ts"] * 1000) for e in ev if e["ph"] == "X")
		assert got == want, (sys.argv[3:], len(got), len(want))
		assert all(e["dur"] * 1000 >= md for e in ev if e["ph"] == "X")
		# instants and counters inside the window only
		for e in ev:
		    if e["ph"] in ("i", "C") and e.get("s") != "p":
		        assert lo <= e["ts"] * 1000 < hi, e
		# a flow's ends are inside slices that were kept
		xs = {(e["pid"], e["tid"], e["ts"]) for e in ev if e["ph"] == "X"}
		for e in ev:
		    if e["ph"] in ("s", "f"):
		        assert (e["pid"], e["tid"], e["ts"]) in xs, e
		# names are whole whatever the window: the process, its two
		# threads, the GPU (a stream is named when it is used)
		assert sum(1 for e in ev if e["ph"] == "M") >= 4
		PY
	done
	# only for perfetto, and in order
	run -2 --separate-stderr is-report --from 1 "$T/ex.ist"
	assert_equal "$stderr" "is-report: --from, --to and --min-dur-us shape the perfetto export (an analysis of a window: is-analyze --from/--to)"
	run -2 --separate-stderr is-report -f perfetto --from 2 --to 1 "$T/ex.ist"
	assert_equal "$stderr" "is-report: --to must come after --from"
	run -2 --separate-stderr is-report -f perfetto --min-dur-us x "$T/ex.ist"
	assert_equal "$stderr" "is-report: --min-dur-us: 'x' is not a number of microseconds"
}

@test "a Perfetto export past 1 GB is foreseen early, within 10% of what it then writes" {
	# (the foresight's arithmetic at scale: the export's code runs under
	# ASan in the tests beside, a 1.4 GB one took 29 s there)
	[ -z "${IST_SANITIZE:-}" ] || skip "a 1.4 GB export: its foresight is checked without the sanitizers"
	# 7 M events: about 1.4 GB of JSON, counted, not stored
	"$IST_BUILD/bench/bench" -J -m realistic -n 7000000 -o "$T/big.ist" > /dev/null
	is-report -f perfetto "$T/big.ist" 2> "$T/err" | wc -c > "$T/bytes"
	grep -q "^is-report: warning: the Perfetto export of '$T/big.ist' will be about [0-9.]* GB (foreseen from the first [0-9]*% of the trace)" "$T/err" ||
	    fail "$(cat "$T/err")"
	python3 - "$T/err" "$T/bytes" <<-'PY'
	import re, sys
	est = float(re.search(r"about ([0-9.]+) GB", open(sys.argv[1]).read()).group(1)) * 1e9
	real = int(open(sys.argv[2]).read())
	assert real > 1e9 and abs(est - real) <= 0.1 * real, (est, real)
	PY
	# the small example: no such warning
	run -0 --separate-stderr is-report -f perfetto -o "$T/p.json" "$T/ex.ist"
	assert_equal "$stderr" ""
}

@test "progress on a terminal for a big input (is-merge, is-analyze, is-report), erased at the end; none off a terminal, with -q, or for a small input" {
	command -v script >/dev/null || fail "script (util-linux) is missing"
	"$IST_BUILD/bench/bench" -J -m realistic -n 700000 -o "$T/in.ist" > /dev/null
	is-merge -o "$T/m.ist" "$T/in.ist"
	for cmd in "is-merge -o $T/m2.ist $T/in.ist" "is-analyze -o $T/a.ist $T/m.ist" \
	    "is-report -o $T/r.md $T/m.ist" "is-report -f perfetto -o $T/p.json $T/m.ist"; do
		script -qec "$cmd" /dev/null > "$T/tty.txt"
		set -- $cmd
		python3 - "$T/tty.txt" "$1" "$(stat -c %s "${!#}")" <<-'PY'
		import re, sys
		out = open(sys.argv[1], encoding="utf-8", newline="").read()
		tool, size = sys.argv[2], int(sys.argv[3])
		lines = re.findall(r"\r%s: +(\d+)%% ([0-9.]+) of ([0-9.]+) MiB, "
		                   r"[0-9.]+ M events/s, \d+ s left\x1b\[K" % tool, out)
		assert lines, repr(out[:300])
		pct = [int(l[0]) for l in lines]
		assert pct == sorted(pct) and pct[-1] <= 100, pct
		# the total is the input's size, and the line is erased at the end
		assert all(l[2] == "%.1f" % (size / 1048576) for l in lines), (lines[0], size)
		assert out.endswith("\r\x1b[K"), repr(out[-40:])
		PY
		# -q: nothing
		script -qec "${cmd/ / -q }" /dev/null > "$T/q.txt"
		assert_equal "$(cat "$T/q.txt")" ""
	done
	# off a terminal: nothing on stderr, and the same outputs
	run -0 --separate-stderr is-analyze -o "$T/a2.ist" "$T/m.ist"
	assert_equal "$stderr" ""
	cmp "$T/a.ist" "$T/a2.ist"
	cmp "$T/m.ist" "$T/m2.ist"
	# a small input: nothing, even on a terminal
	script -qec "is-report -o $T/s.md $T/ex.ist" /dev/null > "$T/small.txt"
	assert_equal "$(cat "$T/small.txt")" ""
}

@test "bad input: one line naming the file, exit 1, no output file" {
	: > "$T/empty"
	run -1 --separate-stderr is-report -o "$T/out.md" "$T/empty"
	assert_equal "$stderr" "is-report: '$T/empty' is empty"
	[ ! -e "$T/out.md" ]
	# first a byte that is neither white space nor JSON's first: random
	# bytes began with '{' or '[' about once in 120 runs
	{ printf '\001'; head -c 99 /dev/urandom; } > "$T/rand"
	run -1 --separate-stderr is-report -f html -o "$T/out.html" "$T/rand"
	assert_equal "$stderr" "is-report: '$T/rand' is not an InferScope trace (no zstd frame magic)"
	[ ! -e "$T/out.html" ]
	# cut inside the second of two traces: the first is reported
	n=$(stat -c %s "$T/ex.ist")
	cat "$T/ex.ist" "$T/ex.ist" | head -c $((n + 1000)) > "$T/cut.ist"
	run -1 --separate-stderr is-report -o "$T/out.md" "$T/cut.ist"
	[[ $stderr == "is-report: warning: trace '$T/cut.ist' is truncated"* ]]
	grep -q 'the trace is truncated' "$T/out.md"
	run -2 --separate-stderr is-report -f pdf "$T/ex.ist"
	assert_equal "$stderr" "is-report: --format wants md, html, json, perfetto or text, not 'pdf'"
	run -1 --separate-stderr is-report /nonexistent
	assert_equal "$stderr" "is-report: cannot open '/nonexistent': No such file or directory"
	run -1 --separate-stderr is-report -o /dev/full "$T/ex.ist"
}

@test "the HTML viewer's data on a real run: ranges thinned to a budget, GC pauses against gc.callbacks, import phases, flame graph sums exact" {
	cat > "$T/app.py" <<-'PY'
	import gc
	n = [0]
	gc.callbacks.append(lambda phase, info: phase == "start" and n.__setitem__(0, n[0] + 1))
	import decimal, fractions
	def fib(k):
	    return k if k < 2 else fib(k - 1) + fib(k - 2)
	def churn():
	    for _ in range(20):
	        l = [[] for _ in range(20000)]
	        gc.collect(0)
	fib(25)
	churn()
	print(n[0])
	PY
	cd "$T"
	is-record -o rec.ist -- /usr/bin/python3 app.py > collections.txt
	is-merge rec.ist | is-analyze -o a.ist
	is-report -f html -o r.html a.ist
	is-cat a.ist > a.jsonl
	python3 - "$(cat collections.txt)" <<-'PY'
	import json, re
	import sys
	html = open("r.html").read()
	D = json.loads(re.search(r'<script type="application/json" id="is-data">(.*?)</script>', html, re.S).group(1))
	ev = [json.loads(l) for l in open("a.jsonl")]
	calls = [e for e in ev if e["type"] == "cpu_call"]
	S = [D["slices"][i:i + 7] for i in range(0, len(D["slices"]), 7)]
	# fib(25) alone is 242785 calls: thinned to the budget, the shortest
	# dropped, the collections kept whatever their length
	assert len(calls) > 250000 and len(S) <= 60000 and D["min_dur"] > 0, (len(calls), len(S))
	assert all(s[3] >= D["min_dur"] for s in S if not s[6])
	drawn = ("cpu_call", "scope", "nvtx_range", "cuda_api", "sync", "gpu_kernel", "h2d_copy", "d2h_copy", "d2d_copy", "memset")
	assert D["dropped"] + len(S) == sum(e["type"] in drawn for e in ev), (D["dropped"], len(S))
	# every collection the program counted through gc.callbacks, marked
	own = int(sys.argv[1])
	gcs = [s for s in S if s[6]]
	assert own >= 20 and len(gcs) == own, (own, len(gcs))
	assert all(D["names"][s[4]].startswith("gc (generation ") for s in gcs)
	# the main thread: its lane, its import phases (decimal's import in one)
	main = min((e for e in ev if e["type"] == "thread" and e.get("name") == "MainThread"), key=lambda e: e["pid"])
	li = next(i for i, l in enumerate(D["lanes"]) if l["name"] == "MainThread %d" % main["tid"])
	mine = [e for e in calls if e["pid"] == main["pid"] and e["tid"] == main["tid"]]
	imp = next(e for e in mine if e["name"].endswith("._find_and_load") and
	           any(c["name"] == "decimal.<module>" and e["start_ns"] <= c["start_ns"] and c["end_ns"] <= e["end_ns"] for c in mine))
	ph = [D["imports"][i:i + 3] for i in range(0, len(D["imports"]), 3)]
	t0 = D["t0"]
	assert any(p[0] == li and p[1] <= imp["start_ns"] - t0 and imp["end_ns"] - t0 <= p[1] + p[2] for p in ph), ph
	# the flame graph's top: the thread's outermost calls, to the ns
	mine.sort(key=lambda e: (e["start_ns"], -e["end_ns"]))
	top, end = 0, None
	for e in mine:
	    if end is None or e["start_ns"] >= end:
	        top += e["end_ns"] - e["start_ns"]
	        end = e["end_ns"]
	    else:
	        end = max(end, e["end_ns"])
	root = D["lanes"][li]["flame"]
	assert root[1] == top, (root[1], top)
	# fib(25)'s node: the one call, whole
	fibcall = next(e for e in mine if e["name"] == "__main__.fib")
	mod = next(k for k in root[3] if D["names"][k[0]] == "__main__.<module>")
	node = next(k for k in mod[3] if D["names"][k[0]] == "__main__.fib")
	assert node[1] == fibcall["end_ns"] - fibcall["start_ns"], (node[1], fibcall)
	PY
}

@test "every example's HTML in headless Chromium: the viewer runs without a script error, a lane per recorded thread, a screenshot with ink" {
	command -v chromium >/dev/null || fail "chromium is not installed (scripts/deps.sh check installs it)"
	cd "$T"
	cp ex.ist trace.ist
	is-record -o mlp.rec -- /usr/bin/python3 "$ROOT/examples/mlp_infer.py"
	is-merge mlp.rec | is-analyze -o mlp.ist
	OMP_NUM_THREADS=1 is-record -o enc.rec -- /usr/bin/python3 "$ROOT/examples/torch_encoder.py" 3
	is-merge enc.rec | is-analyze -o enc.ist
	for x in trace mlp enc; do
		is-report -f html -o $x.html $x.ist
		is-cat $x.ist > $x.jsonl
	done
	PYTHONPATH=$ROOT/tests/py timeout 300 python3 - <<-'PY'
	import base64, json, os, struct
	from cdp import Page
	drawn = {"cpu_call", "scope", "nvtx_range", "cuda_api", "sync", "gpu_kernel",
	         "h2d_copy", "d2h_copy", "d2d_copy", "memset"}
	for x in ("trace", "mlp", "enc"):
	    ev = [json.loads(l) for l in open(x + ".jsonl")]
	    lanes = {(e["pid"], e.get("tid", e["pid"])) if "device" not in e else ("gpu", e["device"], e.get("stream"))
	             for e in ev if e["type"] in drawn}
	    with Page("file://%s/%s.html" % (os.getcwd(), x)) as p:
	        # a script error stops the viewer before it is shown
	        assert p.eval("document.getElementById('is-viewer').style.display") == "block", x
	        shown = json.loads(p.eval("document.getElementById('is-timeline').dataset.lanes"))
	        assert len(shown) == min(len(lanes), 48), (x, len(shown), len(lanes))
	        png = base64.b64decode(p.call("Page.captureScreenshot", format="png")["data"])
	    open(x + ".png", "wb").write(png)
	    w, h = struct.unpack(">II", png[16:24])
	    assert png[:8] == b"\x89PNG\r\n\x1a\n" and w >= 1000 and h >= 1000, (x, w, h)
	    # a blank page of that size compresses to a few KiB
	    assert len(png) > 40000, (x, len(png))
	PY
}

@test "a file's Perfetto export and HTML, read ahead on a second core, are those of the same trace through a pipe" {
	"$IST_BUILD/bench/bench" -J -m realistic -n 200000 -o "$T/in.ist" > /dev/null
	is-merge "$T/in.ist" | is-analyze -o "$T/a.ist"
	for f in perfetto html; do
		is-report -f $f -o "$T/file.$f" "$T/a.ist" 2> /dev/null
		cat "$T/a.ist" | is-report -f $f -o "$T/pipe.$f" 2> /dev/null
		[ -s "$T/file.$f" ] || fail "no $f written"
		cmp "$T/file.$f" "$T/pipe.$f"
	done
}
