# openwop_interrupt — PGXS build.
#
#   make && make install          build and install into the server found by pg_config
#   make installcheck             pg_regress + isolation suites against a running server
#   test/run                      everything, in throwaway clusters (what CI runs)

EXTENSION    = openwop_interrupt
MODULE_big   = openwop_interrupt
# The source tree: the Debian build (pg_buildext) builds in build-<version>/
# with VPATH set, so every list below is taken from here, relative to it.
src_dir     := $(dir $(abspath $(firstword $(MAKEFILE_LIST))))
# The C layers, the lowest first: a file calls only files of its own
# folder and of the folders before it (test/checks/layers.sh; each folder's
# header says what the folders after it may use; docs/architecture.md).
LAYERS       = ipc base store auth domain api bgw
OBJS         = $(patsubst $(src_dir)%.c,%.o,$(sort $(foreach l,$(LAYERS),$(wildcard $(src_dir)src/$(l)/*.c)))) src/module.o
DATA         = $(patsubst $(src_dir)%,%,$(sort $(wildcard $(src_dir)sql/openwop_interrupt--*.sql)))
# The router extension (router/, SQL and PL/Proxy only) is installed with it,
# so one package holds both; make -C router install installs it alone.
DATA        += router/openwop_router.control
router_dir   = router/
include $(src_dir)router/scripts.mk
PG_CONFIG   ?= pg_config

# JSON Schema "pattern" runs on PCRE2 (Debian: libpcre2-dev to build).
SHLIB_LINK  += -lpcre2-8
# The event chain's SHA-256 calls OpenSSL's libcrypto directly when the
# server is built with it (src/store/chain.c; Debian: libssl-dev to build).
SHLIB_LINK  += $(if $(filter openssl,$(with_ssl)),-lcrypto)

# Warnings are errors: the tree must build clean on Debian's PostgreSQL 15.
# The library serves the schema of its own version (src/store/schema.c).
EXTVERSION  := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(src_dir)openwop_interrupt.control)
PG_CPPFLAGS += -DOW_SCHEMA_VERSION='"$(EXTVERSION)"'
PG_CPPFLAGS += -I$(src_dir)src
PG_CFLAGS   += -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers

# pg_regress reads test/sql, the isolation suite test/specs; both compare with test/expected
# (--inputdir=test: PostgreSQL 15's pg_regress has no --expecteddir) and write test/results.
REGRESS      = $(patsubst $(src_dir)test/sql/%.sql,%,$(sort $(wildcard $(src_dir)test/sql/*.sql)))
REGRESS_OPTS = --inputdir=$(src_dir)test --outputdir=test/results --load-extension=$(EXTENSION) --encoding=UTF8
ISOLATION    = $(patsubst $(src_dir)test/specs/%.spec,%,$(sort $(wildcard $(src_dir)test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=$(src_dir)test --outputdir=test/results/isolation --load-extension=$(EXTENSION) --encoding=UTF8

PGXS := $(shell $(PG_CONFIG) --pgxs)

# Debian's PGXS also emits LLVM bitcode with the clang the server was built
# with (its CLANG); skip that when that clang is not installed.
pgxs_clang := $(shell sed -n 's/^CLANG *= *//p' $(dir $(PGXS))../Makefile.global 2>/dev/null)
ifeq ($(shell command -v $(or $(pgxs_clang),clang) 2>/dev/null),)
override with_llvm = no
endif

include $(PGXS)

# sql/ and router/sql/ ship 0.1.0's scripts and the updates: CREATE EXTENSION
# takes a full script of the version asked for when there is one, so one
# an older build installed (0.2.0 ... 0.11.0) would be run instead of the
# chain.  make install removes those it does not install.
installed_scripts = $(notdir $(wildcard $(DESTDIR)$(datadir)/$(datamoduledir)/openwop_interrupt--*.sql \
                                        $(DESTDIR)$(datadir)/$(datamoduledir)/openwop_router--*.sql))
stale_scripts     = $(filter-out $(notdir $(DATA) $(DATA_built)),$(installed_scripts))
install: remove-stale-scripts
.PHONY: remove-stale-scripts
remove-stale-scripts:
	$(if $(stale_scripts),rm -f $(addprefix '$(DESTDIR)$(datadir)/$(datamoduledir)/,$(addsuffix ',$(stale_scripts))))

# Every object is rebuilt when a shared header changes (their structs cross files).
$(OBJS): $(wildcard $(src_dir)src/*.h $(src_dir)src/*/*.h)
src/store/schema.o: $(src_dir)openwop_interrupt.control
# A VPATH build writes its objects and results under the build directory.
$(OBJS): | build-dirs
.PHONY: build-dirs
build-dirs:
	@mkdir -p $(addprefix src/,$(LAYERS)) test/results/isolation

# The two installcheck halves on their own, so a pg_regress failure does not
# keep the isolation suite from running (test/suites.sh runs both).
.PHONY: installcheck-regress installcheck-isolation
installcheck-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
installcheck-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)

# Benchmarks (not part of the tests): a throwaway durable cluster, every
# figure next to its baseline; see docs/benchmarks.md.
.PHONY: bench bench-quick
bench:
	bench/run
bench-quick:
	bench/run --quick
