# The Windows probe (docs/windows.md), included by the Makefile: cross-built with MinGW-w64
# into build/cross/x86_64-w64-mingw32/latscope-probe.exe, its C unit tests run under Wine
# (meson test, the cross file's exe_wrapper: scripts/wine-run).  Without the cross compiler
# or Wine (not installed, not root) it says so and skips; tests/test_windows.py then skips too.
WIN_TRIPLET := x86_64-w64-mingw32
WIN_DIR := build/cross/$(WIN_TRIPLET)
WIN_HAVE = command -v $(WIN_TRIPLET)-gcc >/dev/null 2>&1
WIN_SETUP = $(MESON_RUN) setup --cross-file cross/$(WIN_TRIPLET).ini $(WIN_DIR)

.PHONY: cross cross-windows cross-windows-test
cross: cross-windows
cross-windows: $(MESON_DEP)
	@$(SYSTEM_DEPS) cross
	@if ! $(WIN_HAVE); then echo "note: no $(WIN_TRIPLET)-gcc: the Windows probe is not built"; \
	else $(STAGE) "building the Windows probe ($(WIN_DIR))" sh -c '\
	  { test -f $(WIN_DIR)/build.ninja || $(WIN_SETUP); } && \
	  { $(MESON_RUN) compile -C $(WIN_DIR) || { $(WIN_SETUP) --wipe && \
	    $(MESON_RUN) compile -C $(WIN_DIR); }; }'; fi

cross-windows-test: cross-windows
	@if ! $(WIN_HAVE); then :; elif ! scripts/wine-run --version >/dev/null 2>&1; then \
	  echo "note: no wine64: the Windows probe's tests are skipped"; \
	else $(STAGE) "the Windows probe's C unit tests under Wine" sh -c '\
	  $(MESON_RUN) test -C $(WIN_DIR) --print-errorlogs'; fi
