# fp8gen build and test entry points. CI runs `bash .ci/run`, which runs `make test`.
#
#   make deps    install hipcc and the LLVM 15 tools (Debian) if missing, download Go modules
#   make test    gofmt check, go vet, go test (the AMD compile check must run, not skip),
#                a short run of every fuzz target and the mutation check
#   make check   gofmt check, go vet, go generate, and fail if generated code is stale
#   make gpu     build the test binaries and the CLI into .gpu/ for the GPU machine
#   make golden  rewrite the golden files (review the diff like code)
#   make fuzz    each fuzz target for FUZZTIME (new failing inputs land in testdata/fuzz)
#   make mutants plant each bug of scripts/mutants one at a time; fail if any survives

SHELL := bash
GO ?= go

# Debian packages the tests need: hipcc (HIP 5.2 on clang 15) with the HIP
# headers and the device bitcode, llvm-15 for llvm-objdump/llvm-readelf,
# clang-tools-15 for clang-offload-bundler, and g++ to run the emitted numeric
# prelude on the host (emit's TestPreludeMatchesGo).
APT_PACKAGES := hipcc libamdhip64-dev rocm-device-libs llvm-15 clang-tools-15 g++

# make test fails, rather than skips, the AMD compile check when hipcc is
# missing. `make test REQUIRE_HIPCC=0` lets it skip on a machine without it.
REQUIRE_HIPCC ?= 1
TEST_TIMEOUT ?= 20m
FUZZTIME ?= 10s

# The fuzz targets, as PACKAGE:TARGET.
FUZZ_TARGETS := ./fp8:FuzzEncodeSat ./expr:FuzzExpr ./ir:FuzzDSL ./npy:FuzzRead ./cmd/fp8gen:FuzzFlags

# The Go files to format-check: tracked and new files in a git work tree,
# every .go file otherwise.
GO_FILES = $$(if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files --cached --others --exclude-standard -- '*.go' | while read -r f; do [ -f "$$f" ] && echo "$$f"; done; \
	else \
		find . -name '*.go' -not -path './.git/*' -not -path './.gpu/*'; \
	fi)

define gofmt_check
	@echo "gofmt -l"
	@files="$(GO_FILES)"; [ -z "$$files" ] || { \
		bad=$$(gofmt -l $$files) || exit 1; \
		if [ -n "$$bad" ]; then echo "gofmt: these files need formatting (run gofmt -w):"; echo "$$bad"; exit 1; fi; }
endef

.PHONY: all deps test fmt vet check gpu golden fuzz mutants

all: test

deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "deps: no apt-get here; install by hand:$$missing (the AMD compile check needs them)"; \
		else \
			if [ "$$(id -u)" = 0 ]; then sudo=""; \
			elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
			else echo "deps: need root or sudo to install:$$missing" >&2; exit 1; fi; \
			echo "deps: installing$$missing"; \
			$$sudo apt-get update -q && \
			$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
		fi; \
	fi
	$(GO) mod download

fmt:
	$(gofmt_check)

vet:
	$(GO) vet ./...

# Steps run in order in one recipe, so make -j cannot reorder them.
test: deps
	$(gofmt_check)
	$(GO) vet ./...
	FP8GEN_REQUIRE_HIPCC=$(REQUIRE_HIPCC) $(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory mutants

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "$(GO) test $$pkg -run '^$$' -fuzz '^$$name$$' -fuzztime $(FUZZTIME)"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

mutants:
	$(GO) run ./scripts/mutants

check:
	$(gofmt_check)
	$(GO) vet ./...
	$(GO) generate ./...
	@git diff --exit-code || { echo "check: go generate changed the files above; commit the regenerated code" >&2; exit 1; }

# One test binary per package with tests, named after its path
# (runtime -> .gpu/runtime.test, cmd/fp8gen -> .gpu/cmd_fp8gen.test). A test
# binary runs in its package's directory to find its testdata/.
gpu:
	@mkdir -p .gpu
	@module=$$($(GO) list -m) || exit 1; \
	pkgs=$$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...) || exit 1; \
	for p in $$pkgs; do \
		rel=$${p#"$$module"}; rel=$${rel#/}; \
		if [ -z "$$rel" ]; then rel=.; name=root; else name=$$(echo "$$rel" | tr / _); fi; \
		echo "$(GO) test -c -o .gpu/$$name.test ./$$rel"; \
		$(GO) test -c -o ".gpu/$$name.test" "./$$rel" || exit 1; \
	done
	@if [ -d cmd/fp8gen ]; then echo "$(GO) build -o .gpu/fp8gen ./cmd/fp8gen"; $(GO) build -o .gpu/fp8gen ./cmd/fp8gen; fi

golden:
	$(GO) test ./golden -update
