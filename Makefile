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

.PHONY: run test build-deps system-deps probe-test pytest lint clean

run: $(STAMP)
	$(VENV)/bin/latscope quick

$(STAMP): $(SOURCES) | build-deps
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q '.[test]'
	@touch $@

test: system-deps probe-test pytest

# system packages: installed when root with apt-get, else listed (scripts/system-deps)
build-deps:
	@scripts/system-deps build
system-deps:
	@scripts/system-deps test

# C unit tests and the probe itself ($(SAN_DIR)/latscope-probe) under AddressSanitizer +
# UndefinedBehaviorSanitizer; ZeroMQ benchmarks when libzmq is installed (meson finds it)
SAN_OPTS := -Db_sanitize=address,undefined -Dbuildtype=debugoptimized
probe-test: system-deps $(MESON_DEP)
	@test -f $(SAN_DIR)/build.ninja || $(MESON_RUN) setup $(SAN_DIR) $(SAN_OPTS)
	@# a build directory another meson version set up is set up again
	$(MESON_RUN) compile -C $(SAN_DIR) || { $(MESON_RUN) setup --wipe $(SAN_DIR) $(SAN_OPTS) && \
	    $(MESON_RUN) compile -C $(SAN_DIR); }
	ASAN_OPTIONS=detect_leaks=0 $(MESON_RUN) test -C $(SAN_DIR) --print-errorlogs

pytest: $(STAMP) probe-test
	LATSCOPE_SAN_PROBE=$(CURDIR)/$(SAN_DIR)/latscope-probe $(VENV)/bin/python -m pytest -q -rs -n 2 --dist loadfile tests

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

clean:
	rm -rf build $(VENV)
