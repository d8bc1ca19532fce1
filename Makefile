# InferScope - make builds, make check tests, make demo shows.
# Knobs: PREFIX DESTDIR CC CFLAGS SANITIZE=address,undefined DEVELOPER=1
#        FUZZ_SECONDS (make fuzz)

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
PYDIR ?= $(PREFIX)/lib/inferscope/python
# the Python API alone (no bootstrap), which each Python's inferscope.pth
# puts on its path; and a wheel of it for venvs
APIDIR ?= $(PREFIX)/lib/inferscope/site
WHEELDIR ?= $(PREFIX)/share/inferscope
VERSION = 0.1.0

CC ?= cc
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wno-unused-parameter
ifeq ($(DEVELOPER),1)
WARN += -Werror
endif
# Traces from anywhere may hold any 64-bit time or size: arithmetic on them
# wraps (-fwrapv) instead of being undefined, and the code validates what
# it uses to index memory.
# lib/README.md: each folder, and what it may depend on
LIB_DIRS = trace config record merge analyze rules report
LIB_INC = -Ilib $(LIB_DIRS:%=-Ilib/%) -I$(B)/gen
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC -fwrapv $(WARN) $(CFLAGS) $(LIB_INC)
LIBS = -lcbor -lzstd -ljansson -lyaml -lcmark-gfm -lcmark-gfm-extensions \
       -lpthread -lm

# The Python collector is built for every CPython 3.8 or later found here:
# PYTHON, Debian's, and the newest pyenv build of each of 3.8 to 3.14
# (PYTHONS= replaces the list, PYTHON= adds one).
PYTHON ?= python3
PYTHON_SYS ?= /usr/bin/python3
PYENV_ROOT ?= $(HOME)/.pyenv
PYTHONS ?= $(PYTHON) $(wildcard /usr/bin/python3) \
    $(foreach v,8 9 10 11 12 13 14,$(lastword $(sort \
    $(wildcard $(PYENV_ROOT)/versions/3.$(v).*/bin/python3))))

ifneq ($(SANITIZE),)
B ?= build-san
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer \
              -fno-sanitize-recover=all
LDSAN = -fsanitize=$(SANITIZE)
else
B ?= build
endif
# what _inferscope_io (the trace reader for Python) links: below
ifneq ($(SANITIZE),)
PYIO_LIB = $(B)/plain/libinferscope.a
else
PYIO_LIB = $(B)/libinferscope.a
endif

LIB_SRC = $(foreach d,$(LIB_DIRS),$(wildcard lib/$(d)/*.c))
LIB_OBJ = $(LIB_SRC:%.c=$(B)/%.o)
LIB_H = $(wildcard lib/*/*.h)
# what the agents (agents/: injected into the recorded programs) link:
# the trace format's schema, CBOR checks, interner and writer, nothing else
TRACE_CORE = lib/trace/schema.c lib/trace/cbor.c lib/trace/strtab.c \
    lib/trace/writer.c
# and every agent's own: its output file, kept by path (agents/stream.h)
AGENT_CORE = agents/stream.c agents/term.c agents/capture.c $(TRACE_CORE)
AGENT_CFLAGS = -shared -fPIC -fvisibility=hidden -std=c11 -D_GNU_SOURCE \
    -fwrapv $(WARN) $(CFLAGS) -Ilib/trace -Iagents
TOOLS = is-cat is-info is-merge is-record is-analyze is-report inferscope
TOOL_BIN = $(TOOLS:%=$(B)/bin/%)
UNIT_SRC = $(wildcard tests/unit/*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
MANPAGES = $(wildcard man/*.[0-9])

# NVTX injection: header-only NVTX 3 from the CUDA toolkit (no CUDA needed
# at run time); left out, with a note, where the headers are missing.
CUDA_HOME ?= /usr/local/cuda
NVTX_H = $(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h)
ifneq ($(NVTX_H),)
NVTX_LIB = $(B)/lib/libinferscope-nvtx.so
NVTX_EXAMPLE = $(B)/examples/nvtx_pipeline
endif

# The CUDA collector: HAVE_CUPTI=auto builds it where CUPTI's headers (CUDA
# 12.0 or newer) are found in CUDA_HOME, 1 requires them, 0 leaves it out.
# It links no libcupti: it finds one when the program runs (cupti_load.h).
HAVE_CUPTI ?= auto
CUPTI_H = $(firstword $(wildcard $(CUDA_HOME)/include/cupti.h \
    $(CUDA_HOME)/extras/CUPTI/include/cupti.h))
CUPTI_SO = $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so \
    $(CUDA_HOME)/lib/libcupti.so $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so))
ifneq ($(CUPTI_H),)
CUPTI_INC = -I$(dir $(CUPTI_H)) -I$(CUDA_HOME)/include
CUPTI_NEW_ENOUGH := $(shell printf '\043include <cupti_version.h>\n\043if \
    CUPTI_API_VERSION < 19\n\043error old\n\043endif\n' | \
    $(CC) -E $(CUPTI_INC) - >/dev/null 2>&1 && echo yes)
endif
ifeq ($(HAVE_CUPTI),1)
ifneq ($(CUPTI_NEW_ENOUGH),yes)
$(error HAVE_CUPTI=1 but no CUPTI of CUDA 12.0 or newer in CUDA_HOME=$(CUDA_HOME))
endif
endif
ifneq ($(HAVE_CUPTI),0)
ifeq ($(CUPTI_NEW_ENOUGH),yes)
CUPTI_LIBDIR = $(if $(CUPTI_SO),$(dir $(CUPTI_SO)),$(CUDA_HOME)/lib64/)
CUPTI_LIB = $(B)/lib/libinferscope-cupti.so
CUPTI_TEST = $(B)/tests/test_cupti
# the tests' stand-in libcupti and the CUDA program that loads the
# collector as the driver does (tests/cupti.bats)
CUPTI_FAKE = $(B)/tests/fake-cupti/libcupti.so.13 $(B)/tests/fake_driver \
    $(B)/tests/fake-cupti/libdummy.so
endif
endif

.PHONY: pyext all deps check check-gpu check-unit check-bats check-man demo \
        bench floors fuzz load install uninstall clean vectors

all: $(B)/.deps $(TOOL_BIN) $(B)/bench/bench $(B)/tests/replay_reader pyext \
    $(NVTX_LIB) $(NVTX_EXAMPLE) $(CUPTI_LIB)

# never sanitized: the CUDA driver loads it into other programs
# and linked with -z defs: nothing of libcupti's left to the loader
$(B)/lib/libinferscope-cupti.so: agents/cupti.c agents/cupti_convert.c \
    agents/cupti_load.c $(AGENT_CORE) agents/*.h lib/trace/*.h | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(AGENT_CFLAGS) $(CUPTI_INC) \
	    -DIST_CUPTI_BUILD_LIBDIR='"$(CUPTI_LIBDIR)"' -o $@ agents/cupti.c \
	    agents/cupti_convert.c agents/cupti_load.c $(AGENT_CORE) \
	    -Wl,-z,defs -lcbor -lzstd -lpthread -ldl

# never sanitized: loaded by the fake driver into a plain program
$(B)/tests/fake-cupti/libcupti.so.13: tests/cupti/fake_cupti.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -fvisibility=hidden -std=c11 $(WARN) $(CFLAGS) \
	    $(CUPTI_INC) -Wl,-soname,libcupti.so.13 -o $@ $< -lpthread -ldl

$(B)/tests/fake-cupti/libdummy.so: | $(B)/.deps
	@mkdir -p $(dir $@)
	printf 'int ist_dummy(void);\nint ist_dummy(void) { return 0; }\n' | \
	    $(CC) -shared -fPIC -x c -o $@ -

$(B)/tests/fake_driver: tests/cupti/fake_driver.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) $(CFLAGS) -rdynamic -o $@ $< -ldl -lpthread

# the record conversion, on activity records built in memory
$(B)/tests/test_cupti: tests/cupti/test_cupti.c agents/cupti_convert.c \
    tests/unit/tap.h $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iagents $(CUPTI_INC) -Itests/unit -o $@ \
	    tests/cupti/test_cupti.c agents/cupti_convert.c \
	    $(B)/libinferscope.a $(LIBS) -lstdc++ $(LDSAN)

$(B)/examples/nvtx_pipeline: examples/nvtx_pipeline.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -I$(CUDA_HOME)/include \
	    -o $@ $< -ldl

# never sanitized: it is loaded into other programs
$(B)/lib/libinferscope-nvtx.so: agents/nvtx.c agents/collector.c \
    $(AGENT_CORE) agents/*.h lib/trace/*.h | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(AGENT_CFLAGS) -I$(CUDA_HOME)/include -o $@ agents/nvtx.c \
	    agents/collector.c $(AGENT_CORE) -lcbor -lzstd -lpthread

# the extension is never built with sanitizers: Python is not instrumented
pyext: $(B)/.deps $(PYIO_LIB)
	@for p in $(PYTHONS); do sh scripts/build-pyext.sh "$$p" $(B)/python \
	    "$(CC)" "$(CFLAGS)" "agents/collector.c $(AGENT_CORE)" \
	    "-lcbor -lzstd" "$(PYIO_LIB) $(LIBS)" || exit 1; done

# Plain make only checks for the Debian packages it needs; make deps (and
# so make check and make demo, for which the variable is set below)
# installs what is missing, as root.
INSTALL_DEPS =
check demo bench: INSTALL_DEPS = install
deps:
	@sh scripts/deps.sh check install
	@sh scripts/deps.sh demo install

$(B)/.deps: scripts/deps.sh
	@mkdir -p $(B)
	@sh scripts/deps.sh build $(INSTALL_DEPS)
	@touch $@

$(B)/.deps-check: scripts/deps.sh
	@mkdir -p $(B)
	@sh scripts/deps.sh check $(INSTALL_DEPS)
	@touch $@

$(B)/lib/%.o: lib/%.c $(LIB_H) | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# the HTML report's script, inlined as a C string
$(B)/gen/viewer_js.h: lib/report/viewer.js
	@mkdir -p $(dir $@)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@
$(B)/lib/report/report_html.o $(B)/plain/lib/report/report_html.o: \
    $(B)/gen/viewer_js.h

$(B)/libinferscope.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

# _inferscope_io links libinferscope into Python, which runs without the
# sanitizers' runtime: a sanitized build gives it an unsanitized copy
ifneq ($(SANITIZE),)
$(B)/plain/%.o: %.c $(LIB_H) | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -fPIC -fwrapv $(WARN) $(CFLAGS) \
	    $(LIB_INC) -c -o $@ $<
$(PYIO_LIB): $(LIB_SRC:%.c=$(B)/plain/%.o)
	rm -f $@
	ar rcs $@ $^
endif

$(B)/tools/common.o: tools/common.c tools/common.h $(LIB_H) | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/bin/%: tools/%.c tools/common.h $(B)/tools/common.o $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itools -o $@ $< $(B)/tools/common.o \
	    $(B)/libinferscope.a $(LIBS) $(LDSAN)

$(B)/tests/%: tests/unit/%.c tests/unit/tap.h $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(B)/libinferscope.a \
	    $(LIBS) $(LDSAN)

$(B)/tests/replay_reader: tests/fuzz/replay.c tests/fuzz/fuzz_reader.c \
    $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/fuzz/replay.c tests/fuzz/fuzz_reader.c \
	    $(B)/libinferscope.a $(LIBS) $(LDSAN)

$(B)/tests/replay_jsonl: tests/fuzz/replay.c tests/fuzz/fuzz_jsonl.c \
    $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/fuzz/replay.c tests/fuzz/fuzz_jsonl.c \
	    $(B)/libinferscope.a $(LIBS) $(LDSAN)

$(B)/tests/replay_analyze: tests/fuzz/replay.c tests/fuzz/fuzz_analyze.c \
    $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/fuzz/replay.c tests/fuzz/fuzz_analyze.c \
	    $(B)/libinferscope.a $(LIBS) $(LDSAN)

$(B)/tests/replay_config: tests/fuzz/replay.c tests/fuzz/fuzz_config.c \
    $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/fuzz/replay.c tests/fuzz/fuzz_config.c \
	    $(B)/libinferscope.a $(LIBS) $(LDSAN)

$(B)/tests/replay_merge: tests/fuzz/replay.c tests/fuzz/fuzz_merge.c \
    $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/fuzz/replay.c tests/fuzz/fuzz_merge.c \
	    $(B)/libinferscope.a $(LIBS) $(LDSAN)

$(B)/bench/bench: bench/bench.c $(B)/libinferscope.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libinferscope.a $(LIBS) $(LDSAN) -lm

check: all $(B)/.deps-check $(UNIT_BIN) $(B)/tests/replay_jsonl \
    $(B)/tests/replay_config $(B)/tests/replay_analyze \
    $(B)/tests/replay_merge $(CUPTI_TEST) $(CUPTI_FAKE)
	LC_ALL=C TZ=UTC IST_BUILD=$(abspath $(B)) IST_SANITIZE=$(SANITIZE) \
	    PATH="$(abspath $(B))/bin:$$PATH" bats tests/

check-man:
	mandoc -Tlint -W warning $(MANPAGES)

# libFuzzer targets (clang); FUZZ_SECONDS each.  New corpus entries land in
# tests/fuzz/corpus-*; crashes are kept there too once fixed.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -std=c11 -D_GNU_SOURCE -g -O1 $(LIB_INC) -fwrapv \
             -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
fuzz:
	@sh scripts/deps.sh fuzz
	@mkdir -p build-fuzz
	clang $(FUZZ_FLAGS) -o build-fuzz/fuzz_reader tests/fuzz/fuzz_reader.c \
	    $(LIB_SRC) $(LIBS)
	clang $(FUZZ_FLAGS) -o build-fuzz/fuzz_jsonl tests/fuzz/fuzz_jsonl.c \
	    $(LIB_SRC) $(LIBS)
	clang $(FUZZ_FLAGS) -o build-fuzz/fuzz_config tests/fuzz/fuzz_config.c \
	    $(LIB_SRC) $(LIBS)
	clang $(FUZZ_FLAGS) -o build-fuzz/fuzz_analyze tests/fuzz/fuzz_analyze.c \
	    $(LIB_SRC) $(LIBS)
	clang $(FUZZ_FLAGS) -o build-fuzz/fuzz_merge tests/fuzz/fuzz_merge.c \
	    $(LIB_SRC) $(LIBS)
	build-fuzz/fuzz_reader -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=65536 tests/fuzz/corpus-reader
	build-fuzz/fuzz_jsonl -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=4096 tests/fuzz/corpus-jsonl
	build-fuzz/fuzz_config -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=2048 tests/fuzz/corpus-config
	build-fuzz/fuzz_analyze -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=65536 tests/fuzz/corpus-analyze
	build-fuzz/fuzz_merge -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=65536 tests/fuzz/corpus-merge tests/fuzz/corpus-reader

# make bench's floors (agents/python/_inferscope.c, IST_FLOOR): the Python
# collector with callbacks that return at once ($(B)/floor1, the dispatch
# of sys.monitoring's events alone on 3.12+, of the profile hook's on
# Debian's 3.11, the bench's numpy and torch) or that read the clock first
# ($(B)/floor2); never installed
FLOOR_PYTHONS = $(wildcard $(PYTHON_SYS)) $(foreach v,12 13 14,$(lastword \
    $(sort $(wildcard $(PYENV_ROOT)/versions/3.$(v).*/bin/python3))))
floors: $(B)/.deps $(PYIO_LIB)
	@for n in 1 2; do for p in $(FLOOR_PYTHONS); do \
	    sh scripts/build-pyext.sh "$$p" $(B)/floor$$n "$(CC)" \
	    "$(CFLAGS) -DIST_FLOOR=$$n" "agents/collector.c $(AGENT_CORE)" \
	    "-lcbor -lzstd" "$(PYIO_LIB) $(LIBS)" || exit 1; done; done

bench: all floors
	@command -v zstd >/dev/null || sh scripts/deps.sh build install
	sh bench/run.sh $(B)
	PYTHON_SYS=$(PYTHON_SYS) sh bench/pipeline.sh $(B)
	$(PYTHON_SYS) bench/overhead.py $(B)
	$(PYTHON_SYS) bench/whatif.py $(abspath $(B))

# is-record under sustained load (LOAD_SECONDS, 60): exact loss accounting
# and bounded memory.
load: all
	sh scripts/load.sh $(B)

# The golden vectors are made by is-cat --encode; see formats/vectors/README.
vectors: all
	python3 scripts/make-vectors.py $(B)/bin

# The real pipeline on the torch CPU example: leaves report.md and
# report.html here.
demo: all
	@sh scripts/deps.sh demo install
	@echo "== is-cat --encode -o $(B)/demo.ist examples/trace.jsonl"
	$(B)/bin/is-cat --encode -o $(B)/demo.ist examples/trace.jsonl
	@echo "== is-info $(B)/demo.ist"
	$(B)/bin/is-info $(B)/demo.ist
	@echo "== inferscope run --trace $(B)/demo-run.ist --report report.md examples/torch_encoder.py"
	INFERSCOPE_PYTHON=$(PYTHON_SYS) $(B)/bin/inferscope run \
	    --trace $(B)/demo-run.ist --report report.md examples/torch_encoder.py
	@echo "== inferscope analyze --output report.html $(B)/demo-run.ist"
	$(B)/bin/inferscope analyze --output report.html $(B)/demo-run.ist
	@echo "== the verdict (report.md)"
	@sed -n 3p report.md

# Needs a CUDA GPU and torch: the GPU examples through the whole pipeline,
# held to Kineto, and the CUDA collector's probes (tests/gpu/).
check-gpu: all $(B)/.deps-check
	LC_ALL=C TZ=UTC IST_BUILD=$(abspath $(B)) \
	    PATH="$(abspath $(B))/bin:$$PATH" bats tests/gpu/

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
	    $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 $(TOOL_BIN) $(DESTDIR)$(BINDIR)
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1
	install -m 644 man/*.5 $(DESTDIR)$(MANDIR)/man5
	install -m 644 man/*.7 $(DESTDIR)$(MANDIR)/man7
	for t in $(TOOLS); do \
	    install -m 644 completions/inferscope.bash \
	        $(DESTDIR)$(BASHCOMPDIR)/$$t || exit 1; done
	install -m 644 completions/_inferscope $(DESTDIR)$(ZSHCOMPDIR)
	install -d $(DESTDIR)$(PYDIR)/inferscope $(DESTDIR)$(PYDIR)/__pycache__ \
	    $(DESTDIR)$(PYDIR)/inferscope/__pycache__
	install -m 644 $(B)/python/sitecustomize.py $(DESTDIR)$(PYDIR)
	install -m 644 $(B)/python/__pycache__/sitecustomize.*.pyc \
	    $(DESTDIR)$(PYDIR)/__pycache__
	install -m 644 $(B)/python/inferscope/__init__.py \
	    $(DESTDIR)$(PYDIR)/inferscope
	install -m 644 $(B)/python/inferscope/__pycache__/__init__.*.pyc \
	    $(DESTDIR)$(PYDIR)/inferscope/__pycache__
	install -m 755 $(B)/python/_inferscope*.so $(DESTDIR)$(PYDIR)
	install -d $(DESTDIR)$(APIDIR)/inferscope $(DESTDIR)$(WHEELDIR)
	install -m 644 $(B)/python/inferscope/__init__.py \
	    $(DESTDIR)$(APIDIR)/inferscope
	install -m 755 $(B)/python/_inferscope*.so $(DESTDIR)$(APIDIR)
	$(PYTHON_SYS) scripts/make-wheel.py $(B)/python $(DESTDIR)$(WHEELDIR) \
	    $(VERSION) >/dev/null
	@for p in $(PYTHONS); do \
	    site=$$($$p -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	    install -d "$(DESTDIR)$$site" && \
	    echo "$(APIDIR)" > "$(DESTDIR)$$site/inferscope.pth" || exit 1; done
	if [ -n "$(NVTX_LIB)" ]; then install -m 755 $(NVTX_LIB) \
	    $(DESTDIR)$(PREFIX)/lib/inferscope/; fi
	if [ -n "$(CUPTI_LIB)" ]; then install -m 755 $(CUPTI_LIB) \
	    $(DESTDIR)$(PREFIX)/lib/inferscope/; fi

uninstall:
	for t in $(TOOLS); do rm -f $(DESTDIR)$(BINDIR)/$$t \
	    $(DESTDIR)$(MANDIR)/man1/$$t.1 $(DESTDIR)$(BASHCOMPDIR)/$$t; done
	rm -rf $(DESTDIR)$(PYDIR) $(DESTDIR)$(APIDIR) $(DESTDIR)$(WHEELDIR)
	-for p in $(PYTHONS); do \
	    site=$$($$p -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	    rm -f "$(DESTDIR)$$site/inferscope.pth"; done
	rm -f $(DESTDIR)$(PREFIX)/lib/inferscope/libinferscope-nvtx.so \
	    $(DESTDIR)$(PREFIX)/lib/inferscope/libinferscope-cupti.so
	rm -f $(DESTDIR)$(MANDIR)/man5/is-trace.5 \
	    $(DESTDIR)$(MANDIR)/man7/inferscope.7 \
	    $(DESTDIR)$(ZSHCOMPDIR)/_inferscope

clean:
	rm -rf build build-san build-fuzz demo.ist
