# Two commands for a new user (README):  make run  |  make test
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed
SOURCES := $(shell find src probe -name '*.py' -o -name '*.c' -o -name '*.h' -o -name meson.build) \
           pyproject.toml meson.build meson.options
PROBE_SRC := $(filter-out probe/main.c,$(wildcard probe/*.c))
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# ZeroMQ benchmarks when libzmq is installed (as meson does); without it they stay unavailable
ZMQ = $(shell pkg-config --exists libzmq 2>/dev/null && echo -DHAVE_ZMQ=1 $$(pkg-config --libs libzmq))

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

# C unit tests and the probe itself under AddressSanitizer + UndefinedBehaviorSanitizer
probe-test: system-deps
	@mkdir -p build/san
	$(CC) -std=c11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE $(SAN) -o build/san/test-probe \
	    probe/tests/test_main.c $(PROBE_SRC) -lpthread -lm $(ZMQ)
	$(CC) -std=c11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE $(SAN) -o build/san/latscope-probe \
	    probe/main.c $(PROBE_SRC) -lpthread -lm $(ZMQ)
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 build/san/test-probe

pytest: $(STAMP) probe-test
	LATSCOPE_SAN_PROBE=$(CURDIR)/build/san/latscope-probe $(VENV)/bin/python -m pytest -q -rs -n 2 --dist loadfile tests

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

clean:
	rm -rf build $(VENV)
