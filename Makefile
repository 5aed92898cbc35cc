# SPDX-License-Identifier: BSD-2-Clause
# sluice - rate limits for any program, by LD_PRELOAD.
#
#   make            build build/libsluice.so and build/sluice
#   make demo       install missing Debian packages, build, run the built-in demo
#   make test       install missing packages, build, run every test (unit, ASan+UBSan,
#                   TSan, fuzz smoke, integration); ends with "N passed, N failed"
#   make unit       unit tests only (SAN=asan or SAN=tsan for a sanitizer build)
#   make contract   the held-call contract: each case bare and under the shim
#   make boundary   fails if core/ or conf/ calls a name the shim interposes, or if
#                   source files call each other in a circle (tests/check-calls.py)
#   make bench      benchmarks; writes BENCH.md
#   make bench-insn the instruction counts alone (callgrind, ~90 s), printed
#   make install    PREFIX=/usr/local DESTDIR= : bin/sluice, lib/sluice/libsluice.so, man
#                   pages, examples, bash completion (debian/ builds a .deb of it)
#   make deps       install the Debian packages the build and tests need
#   make format     clang-format every source file
#
# Knobs: CC (cc), CFLAGS (-O2 -g), CPPFLAGS, LDFLAGS, PREFIX (/usr/local), DESTDIR (empty),
#        SAN (empty|asan|tsan), V=1 shows full commands, BUILD (build; sanitizer builds go
#        to build/SAN).

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
SAN     ?=
V       ?= 0

ifeq ($(SAN),)
BUILD   ?= build
SANFLAGS =
# Link-time optimisation for the release build: the request path crosses
# shim/ and core/ in many small calls (recv -> gate -> admit -> scan ->
# decide -> table), and LTO inlines across files what -O2 cannot: -87
# instructions per keep-alive request in nginx, -55 per new connection
# (callgrind, bench/insn.sh). Fat objects: tests/check-boundary.sh reads
# them with nm, as it reads the sanitizer builds' (which keep no LTO), and
# the command and the unit tests link their plain code.
LTO      = -flto=auto -ffat-lto-objects
else ifeq ($(SAN),asan)
BUILD   ?= build/asan
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SAN),tsan)
BUILD   ?= build/tsan
SANFLAGS = -fsanitize=thread
else
$(error SAN must be empty, asan or tsan)
endif

Q := $(if $(filter 1,$(V)),,@)
PKG_CFLAGS := $(shell pkg-config --cflags libconfuse libsodium 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs libconfuse libsodium 2>/dev/null)
# The library links libsodium and libnghttp2 (like hiredis and http_parser
# below) from their Debian archives (PIC), privately: every process that
# loads it would otherwise pay the dynamic linker for mapping and
# relocating more objects (about 300,000 instructions per exec, measured
# with callgrind on /bin/true), and their symbols stay local
# (shim/exports.map), so a program that carries its own libsodium or
# libnghttp2 is left alone. libconfuse stays a shared dependency (about
# 92,000 instructions per exec): Debian 12's libconfuse.a is not PIC, so it
# cannot go into a shared object. The command links them all as usual.
SHIM_LIBS   = -lconfuse $(SODIUM_SL) $(NGHTTP2_SL) $(JANSSON_SL)
# the command alone serves metrics over HTTP; the library never links it
CLI_LIBS   := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
CFLAGS  ?= -O2 -g
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
ALL_CFLAGS = -std=gnu11 $(CFLAGS) $(WARN) -fPIC -fvisibility=hidden -D_GNU_SOURCE \
             $(SANFLAGS) $(LTO) $(PKG_CFLAGS) -MMD -MP
# http_parser is linked statically (its Debian archive is PIC): no runtime package
# needed, and its symbols stay local, so a host defining its own cannot interpose them.
# hiredis (the Redis backend) is linked statically from a copy of Debian's
# archive (PIC) whose malloc/calloc/realloc/free/strdup are renamed to
# core/fleet/redis_alloc.c's, so it allocates from sluice's arena, never from the
# program's heap; its symbols stay local (shim/exports.map).
HIREDIS_A  := $(shell $(CC) -print-file-name=libhiredis.a)
HIREDIS_SL  = $(BUILD)/gen/libhiredis-sl.a
# libsodium and libnghttp2, linked into the library, get the same renaming:
# their allocations come from sluice's heap too, and libsluice.so refers to
# no allocator of the program's (tests/integration/test_redis_symbols.py).
SODIUM_A   := $(shell $(CC) -print-file-name=libsodium.a)
SODIUM_SL   = $(BUILD)/gen/libsodium-sl.a
NGHTTP2_A  := $(shell $(CC) -print-file-name=libnghttp2.a)
NGHTTP2_SL  = $(BUILD)/gen/libnghttp2-sl.a
# libjansson (JSON answers read for token budgets, core/http/costread.c) too;
# it is also given sluice's allocator at run time (json_set_alloc_funcs).
JANSSON_A  := $(shell $(CC) -print-file-name=libjansson.a)
JANSSON_SL  = $(BUILD)/gen/libjansson-sl.a
LIBS     = $(PKG_LIBS) -l:libhttp_parser.a $(HIREDIS_SL) $(JANSSON_SL) $(shell pkg-config --libs libnghttp2) -ldl -lpthread
LIB_LIBS = $(SHIM_LIBS) -l:libhttp_parser.a $(HIREDIS_SL) -ldl -lpthread
# -Bsymbolic-functions: the library's own references to its hooks (the
# addresses sl_resolve_next compares with) bind at link time, not by ~60
# symbol lookups in every process that loads it (~30,000 instructions).
SHIM_LDFLAGS = -Wl,--version-script=shim/exports.map -Wl,-z,now -Wl,-Bsymbolic-functions
VERSION  = 0.1.0

CORE_SRC := $(wildcard core/*.c core/*/*.c)
CONF_SRC := $(wildcard conf/*.c)
SHIM_SRC := $(wildcard shim/*.c)
CLI_SRC  := $(wildcard cli/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
BENCH_SRC:= $(wildcard bench/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_OBJ  := $(call obj,$(CORE_SRC) $(CONF_SRC))
SHIM_OBJ := $(call obj,$(SHIM_SRC))
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

.PHONY: all demo test unit contract integration bench bench-insn install deps format help clean fuzz \
        boundary FORCE
.SECONDARY:
all: $(BUILD)/libsluice.so $(BUILD)/sluice

help:
	@sed -n '4,20p' Makefile

# Rebuild everything when the flags change.
$(BUILD)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(ALL_CFLAGS) $(LIBS) $(LIB_LIBS) $(SHIM_LDFLAGS)' | cmp -s - $@ || \
		echo '$(CC) $(ALL_CFLAGS) $(LIBS) $(LIB_LIBS) $(SHIM_LDFLAGS)' > $@
FORCE:

$(BUILD)/obj/%.o: %.c $(BUILD)/.flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -DSL_VERSION_TEXT='"$(VERSION)"' -c $< -o $@

$(HIREDIS_SL): $(HIREDIS_A)
	@mkdir -p $(@D)
	$(Q)objcopy $(foreach f,malloc calloc realloc free strdup,--redefine-sym $(f)=sl_hi_$(f)) $< $@
$(SODIUM_SL): $(SODIUM_A)
	@mkdir -p $(@D)
	$(Q)objcopy $(foreach f,malloc calloc realloc free strdup,--redefine-sym $(f)=sl_hi_$(f)) $< $@
$(NGHTTP2_SL): $(NGHTTP2_A)
	@mkdir -p $(@D)
	$(Q)objcopy $(foreach f,malloc calloc realloc free strdup,--redefine-sym $(f)=sl_hi_$(f)) $< $@
# Debian's libjansson.a is not PIC: its one reference to a library's data,
# stdin (json_loadf, never called), goes to core/http/costread.c's.
$(JANSSON_SL): $(JANSSON_A)
	@mkdir -p $(@D)
	$(Q)objcopy $(foreach f,malloc calloc realloc free strdup,--redefine-sym $(f)=sl_hi_$(f)) \
		--redefine-sym stdin=sl_jansson_stdin $< $@

# core/fleet/redis.lua, as the C string sl_redis_lua (core/fleet/redis_hello.c sends it with SCRIPT LOAD).
$(BUILD)/gen/redis_lua.h: core/fleet/redis.lua
	@mkdir -p $(@D)
	$(Q){ echo 'static const char sl_redis_lua[] ='; \
	      sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/    "&\\n"/' $<; echo '    ;'; } > $@
$(BUILD)/obj/core/fleet/redis_hello.o: $(BUILD)/gen/redis_lua.h
$(BUILD)/obj/core/fleet/redis_hello.o: ALL_CFLAGS += -I$(BUILD)/gen
$(LIB_OBJ): | $(HIREDIS_SL) $(SODIUM_SL) $(NGHTTP2_SL) $(JANSSON_SL)

# cli/live.html, as the C string SL_LIVE_HTML (cli/live.c serves it at /).
$(BUILD)/gen/live_html.h: cli/live.html
	@mkdir -p $(@D)
	$(Q){ echo '#define SL_LIVE_HTML \'; \
	      sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/    "&\\n" \\/' $<; echo '    ""'; } > $@
$(BUILD)/obj/cli/live.o: $(BUILD)/gen/live_html.h
$(BUILD)/obj/cli/live.o: ALL_CFLAGS += -I$(BUILD)/gen

$(BUILD)/libsluice.so: $(SHIM_OBJ) $(LIB_OBJ) shim/exports.map $(BUILD)/.flags
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared $(CFLAGS) $(WARN) $(SANFLAGS) $(LTO) $(LDFLAGS) $(SHIM_LDFLAGS) \
		-o $@ $(SHIM_OBJ) $(LIB_OBJ) $(LIB_LIBS)

$(BUILD)/sluice: $(call obj,$(CLI_SRC)) $(LIB_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS) $(CLI_LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIB_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(SANFLAGS) -o $@ $^ $(LIBS) -lcmocka

# The shim's request gate, tested with a fake transport (ready and wait stubbed).
$(BUILD)/tests/test_gate: $(BUILD)/obj/tests/unit/test_gate.o $(call obj,shim/gate.c shim/hold.c) $(LIB_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(SANFLAGS) -o $@ $^ $(LIBS) -lcmocka

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB_OBJ)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SANFLAGS) -o $@ $^ $(LIBS)

# The held-call contract test (tests/contract/run.sh): a plain program, no
# link with sluice, so the shim is what it meets.
$(BUILD)/tests/contract: tests/contract/contract.c $(BUILD)/.flags
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=gnu11 $(CFLAGS) $(WARN) -D_GNU_SOURCE -o $@ $< -lpthread

contract: all $(BUILD)/tests/contract
	$(Q)tests/contract/run.sh

unit: $(UNIT_BIN)
	$(Q)tests/run-unit.sh $(UNIT_BIN)

boundary: $(LIB_OBJ) $(SHIM_OBJ) $(call obj,$(CLI_SRC))
	$(Q)tests/check-boundary.sh $(BUILD) core conf
	$(Q)tests/check-calls.py --self-test
	$(Q)tests/check-calls.py $(BUILD)

deps:
	$(Q)scripts/deps.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

test: deps
	$(Q)tests/run-all.sh

integration: all
	$(Q)tests/integration/run.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
	$(Q)bench/run.sh

# The callgrind section alone (instructions per request, connection, start-up
# and outbound TLS request, then the head scanner per byte of a realistic
# head, bench/h1_insn.sh; about 90 s): prints it, BENCH.md is not touched.
bench-insn: all $(BUILD)/bench/bench_h1
	$(Q)BUILD=$(BUILD) bash bench/insn.sh
	$(Q)BUILD=$(BUILD) bash bench/h1_insn.sh

# FHS places under PREFIX (default /usr/local), staged under DESTDIR.
DOC = $(DESTDIR)$(PREFIX)/share/doc/sluice
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/sluice \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DOC)/examples/monitoring $(DOC)/examples/systemd $(DOC)/docs \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(BUILD)/sluice $(DESTDIR)$(PREFIX)/bin/sluice
	install -m 0755 $(BUILD)/libsluice.so $(DESTDIR)$(PREFIX)/lib/sluice/libsluice.so
	install -m 0644 docs/sluice.1 $(DESTDIR)$(PREFIX)/share/man/man1/sluice.1
	install -m 0644 docs/sluice.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/sluice.conf.5
	install -m 0644 README.md $(DOC)/README.md
	install -m 0644 docs/*.md docs/*.txt $(DOC)/docs/
	install -m 0644 examples/*.conf examples/*.txt $(DOC)/examples/
	install -m 0644 examples/monitoring/* $(DOC)/examples/monitoring/
	install -m 0644 examples/systemd/* $(DOC)/examples/systemd/
	install -m 0644 scripts/sluice.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/sluice

format:
	clang-format -i core/*.[ch] core/*/*.[ch] conf/*.[ch] shim/*.[ch] cli/*.c tests/unit/*.[ch] bench/*.c

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
