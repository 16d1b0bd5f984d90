# wap5 — build, test and demo.
#   make          bin/wap5 and bin/libsockcap.so
#   make test     every test (Go unit, C, integration with real programs)
#   make demo     trace a small real multi-process system and show the analysis
GO      ?= go
CC      ?= $(shell $(GO) env CC)
CFLAGS  ?= -O2 -g
WARN     = -Wall -Wextra -Werror
# urfave_cli_no_docs: leave out urfave/cli's man-page and markdown writers (blackfriday, md2man), which
# wap5 does not use: ~3 ms less start-up per command (bench/results-nestpass.md)
export GOFLAGS ?= -mod=mod -tags=urfave_cli_no_docs

LIBSRC  := $(wildcard libsockcap/c/*.c)
LIBHDR  := $(wildcard libsockcap/c/*.h)

.PHONY: all deps test test-c demo bench clean fuzz FORCE

all: bin/wap5 bin/libsockcap.so

FORCE:

# go build decides what is stale (file times miss edits older than the binary,
# e.g. after a checkout); with its cache an up-to-date build takes a second.
bin/wap5: FORCE
	@mkdir -p bin
	$(GO) build -o $@ ./cmd/wap5

bin/libsockcap.so: $(LIBSRC) $(LIBHDR)
	@mkdir -p bin
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -fvisibility=hidden \
	  -Wl,--version-script=libsockcap/c/exports.map \
	  -o $@ $(LIBSRC) -ldl -lpthread

# Tests that need real servers find bin/ via WAP5_BIN; they skip with a clear
# message only when run outside `make test` and a program is missing.
# deps installs the Debian packages tests and demo use (quick when present).
deps:
	scripts/install-deps.sh

# e2e runs alone, after the rest: its checks compare wap5's delays with the
# test servers' own timers within 10 %, and those timers drift from the
# capture's stamps when the servers are preempted — e.g. by the libsockcap
# capture tests running beside them on a 2-core machine (docs/e2e.md).
test: deps all
	WAP5_BIN=$(CURDIR)/bin $(GO) test -count=1 -timeout 25m $$($(GO) list ./... | grep -v '^wap5/e2e$$')
	WAP5_BIN=$(CURDIR)/bin $(GO) test -count=1 -timeout 10m ./e2e
	$(MAKE) test-c

test-c:
	@if [ -f libsockcap/c/tests/Makefile ]; then $(MAKE) -C libsockcap/c/tests CC=$(CC); fi

# Long runs (fuzzing, big benchmarks) are not part of `make test`.
FUZZTIME ?= 30s
fuzz:
	scripts/fuzz-all.sh $(FUZZTIME)

bench: all
	scripts/bench-all.sh

demo: deps all
	scripts/demo.sh

clean:
	rm -rf bin
