# Two commands for a new user (README):  make run  |  make test
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed
SOURCES := $(shell find src probe -name '*.py' -o -name '*.c' -o -name '*.h' -o -name '*.def' \
             -o -name meson.build) pyproject.toml meson.build meson.options
# meson builds the probe everywhere (the wheel, the sanitizer build, the C tests); the venv has it
# (the test extra). MESON=meson uses one from PATH instead, without building the venv first.
MESON ?= $(VENV)/bin/meson
MESON_RUN = $(if $(findstring /,$(MESON)),PATH="$(abspath $(dir $(MESON))):$$PATH" )$(MESON)
MESON_DEP := $(if $(filter $(VENV)/bin/meson,$(MESON)),$(STAMP))
SAN_DIR := build/san

# Each stage of the set-up says what it does in one line; apt's, pip's and the compiler's
# output go to SETUP_LOG, shown (its end) only when a stage fails (scripts/stage).
export SETUP_LOG := build/setup.log
STAGE := scripts/stage $(SETUP_LOG)
# how many runs, of how many benchmarks, the quick plan holds here (the probe's catalogue)
QUICK_PLAN = $(VENV)/bin/python -c 'from latscope import scenarios; \
  s = scenarios.quick().scenarios; print(f"{len(s)} runs of {len({x.benchmark for x in s})} benchmarks")'

.PHONY: run test test-bytecode build-deps system-deps probe-test cross cross-test pytest lint clean \
    $(CROSS:%=cross-%) $(CROSS:%=cross-test-%)

run: $(STAMP)
	@echo "running the quick suite: $$($(QUICK_PLAN)), about a minute…"
	@$(VENV)/bin/latscope quick

# the dependencies first, then the probe (meson-python compiles it) and latscope, without
# build isolation: meson-python, meson and ninja are in the venv by then (ninja on PATH)
$(STAMP): $(SOURCES) | build-deps
	@$(STAGE) "installing Python dependencies into $(VENV) (about a minute the first time)" \
	    scripts/python-deps $(VENV) $(PYTHON) test
	@$(STAGE) "building the probe and installing latscope into $(VENV)" \
	    env PATH="$(abspath $(VENV))/bin:$$PATH" \
	    $(VENV)/bin/python -m pip install --no-deps --no-build-isolation .
	@touch $@

# The C stages run side by side: each waits on meson's set-up, a linker, qemu-user or Wine at
# some point, and one after another they left a CPU idle (81 s in all on a 2-CPU VM). Their
# system packages are installed first, once (SYSTEM_DEPS=: in the stages: one apt at a time).
test: system-deps $(STAMP)
	@$(MAKE) --no-print-directory -j4 --output-sync=line SYSTEM_DEPS=: \
	    probe-test cross-test cross-windows-test test-bytecode
	$(PYTEST)

# The test modules compiled once, beside the C stages, with pytest's assertions rewritten
# (tests/__pycache__): each of pytest's workers collects every test module, and without the
# cache (a fresh clone, or PYTHONDONTWRITEBYTECODE set) each rewrote and compiled all of them
# again, 4 s of CPU per worker.
test-bytecode: $(STAMP)
	@$(STAGE) "compiling the Python tests for pytest's workers (tests/__pycache__)" \
	    env PYTHONDONTWRITEBYTECODE= $(VENV)/bin/python -m pytest --collect-only -q \
	    -p no:cacheprovider tests

# system packages: installed when root with apt-get, else listed (scripts/system-deps)
SYSTEM_DEPS ?= scripts/system-deps
build-deps:
	@$(SYSTEM_DEPS) build
system-deps:
	@$(SYSTEM_DEPS) test

# C unit tests and the probe itself ($(SAN_DIR)/latscope-probe) under AddressSanitizer +
# UndefinedBehaviorSanitizer; ZeroMQ benchmarks when libzmq is installed (meson finds it)
SAN_OPTS := -Db_sanitize=address,undefined -Dbuildtype=debugoptimized
# (a build directory another meson version set up is set up again)
probe-test: system-deps $(MESON_DEP)
	@$(STAGE) "building the probe with AddressSanitizer and UBSan ($(SAN_DIR))" sh -c '\
	  { test -f $(SAN_DIR)/build.ninja || $(MESON_RUN) setup $(SAN_DIR) $(SAN_OPTS); } && \
	  { $(MESON_RUN) compile -C $(SAN_DIR) || { $(MESON_RUN) setup --wipe $(SAN_DIR) \
	      $(SAN_OPTS) && $(MESON_RUN) compile -C $(SAN_DIR); }; }'
	@$(STAGE) "the probe's C unit tests under ASan+UBSan" sh -c '\
	  ASAN_OPTIONS=detect_leaks=0 $(MESON_RUN) test -C $(SAN_DIR) --print-errorlogs'
	@tail -n 12 $(SAN_DIR)/meson-logs/testlog.txt 2>/dev/null | grep -E '^(Ok|Fail): ' | \
	  tr -s ' ' | paste -sd' ' | sed 's/^/  /' || true

# The probe for other machines: build/cross/TRIPLET/latscope-probe, static, from cross/TRIPLET.ini
# (its compiler, and the emulator meson test runs the C tests under), with
# build/cross/TRIPLET/latscope-probe-run: the probe under that emulator (LATSCOPE_PROBE takes
# it).  Beside it build/cross/TRIPLET-zmq: its twin with ZeroMQ, dynamically linked against
# Debian's libzmq for that architecture (scripts/cross-zmq-sysroot fetches and unpacks it in
# build/cross/sysroot-TRIPLET; where it cannot, one line says so and the static probe is
# built alone).  Another target is one more line of CROSS and its .ini (docs/ports.md).
CROSS := aarch64-linux-gnu arm-linux-gnueabihf
CROSS_DIR := build/cross
# meson setup DIR ARGS, or set up again when another meson version set DIR up
CROSS_BUILD = $(STAGE) "building the probe for $$t$$what ($$d)" sh -c '\
	    { test -f '$$d'/build.ninja || $(MESON_RUN) setup '$$d' '"$$ini"'; } && \
	    { $(MESON_RUN) compile -C '$$d' || { $(MESON_RUN) setup --wipe '$$d' '"$$ini"' && \
	        $(MESON_RUN) compile -C '$$d'; }; }'
# each target a make target of its own (make -j builds them side by side): its static probe,
# then its twin with ZeroMQ
cross: $(CROSS:%=cross-%)
$(CROSS:%=cross-%): cross-%: $(MESON_DEP)
	@$(SYSTEM_DEPS) cross
	@t=$*; d=$(CROSS_DIR)/$$t what= ini="--cross-file cross/$$t.ini"; \
	  $(CROSS_BUILD) && scripts/cross-wrapper cross/$$t.ini $$d || exit 1; \
	  s=$(CROSS_DIR)/sysroot-$$t d=$(CROSS_DIR)/$$t-zmq what=", with ZeroMQ"; \
	  if scripts/cross-zmq-sysroot cross/$$t.ini $$s; then \
	    ini="$$ini --cross-file $$s/zmq.ini"; \
	    $(CROSS_BUILD) && scripts/cross-wrapper $$s/zmq.ini $$d || exit 1; \
	  else rm -rf $$d; fi
cross-test: $(CROSS:%=cross-test-%)
$(CROSS:%=cross-test-%): cross-test-%: cross-%
	@for d in $* $*-zmq; do test -d $(CROSS_DIR)/$$d || continue; \
	  $(STAGE) "the $$d probe's C unit tests under qemu-user" \
	  sh -c '$(MESON_RUN) test -C $(CROSS_DIR)/'$$d' --print-errorlogs' || exit 1; done

# Four workers on two CPUs: many tests wait on a probe, a server or a signal, and two workers
# left the CPUs idle meanwhile (1,540 tests: 304 s with two, 257 s with four, on a 2-CPU VM).
# The 15 slowest tests are named at the end.
PYTEST = LATSCOPE_SAN_PROBE=$(CURDIR)/$(SAN_DIR)/latscope-probe \
    LATSCOPE_CROSS=$(CURDIR)/$(CROSS_DIR) \
    $(VENV)/bin/python -m pytest -q -rs -n 4 --dist loadfile --durations=15 tests
pytest: $(STAMP) probe-test
	$(PYTEST)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

include mk/windows.mk

clean:
	rm -rf build $(VENV)
