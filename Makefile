# fp8gen build and test entry points. CI runs `bash .ci/run`, which runs `make test`.
#
#   make deps    install hipcc, the LLVM 15 and 22 tools (Debian) if missing, download Go modules
#   make test    make check, go test (the AMD compile check must run, not skip),
#                a short run of every fuzz target and the mutation check
#   make check   gofmt check, go vet, go generate, and fail if generated code or the README's
#                performance table is stale
#   make readme  rewrite the README's performance table from bench/results/*.json
#   make gpu     build the test binaries, the CLI and fp8gen-plot into .gpu/ for the GPU machine
#   make golden  rewrite the golden files (review the diff like code)
#   make fuzz    each fuzz target for FUZZTIME (new failing inputs land in testdata/fuzz)
#   make mutants plant each bug of scripts/mutants one at a time; fail if any survives

SHELL := bash
GO ?= go

# Debian packages the tests need: hipcc (HIP 5.2 on clang 15) with the HIP
# headers and the device bitcode, llvm-15 for llvm-objdump/llvm-readelf,
# clang-tools-15 for clang-offload-bundler; clang-22, lld-22 and llvm-22
# (bookworm-security) to compile gfx942 and gfx950 as themselves, which
# clang 15 does not know (amdgpu.CompileFreestanding); g++ to run the
# emitted numeric prelude on the host (emit's TestPreludeMatchesGo), python3
# for the PyTorch loader's torch-free tests (manifests, expressions, shape
# checks).
APT_PACKAGES := hipcc libamdhip64-dev rocm-device-libs llvm-15 clang-tools-15 clang-22 lld-22 llvm-22 g++ python3

# make test fails, rather than skips, the AMD compile check when hipcc or
# clang 22 is missing. `make test REQUIRE_HIPCC=0` lets it skip on a machine without it.
REQUIRE_HIPCC ?= 1
# Likewise python3 for the PyTorch loader's torch-free tests.
REQUIRE_PYTHON ?= 1
TEST_TIMEOUT ?= 20m
FUZZTIME ?= 5s
# How long a worker may spend shrinking an input it found (one with new
# coverage, or a failing one) before it fuzzes on. Go's default, 60s, is
# longer than the whole run: a worker that finds a new 2 KB manifest in
# FuzzParse spends the rest of FUZZTIME minimizing it, which left the
# target at a few dozen executions.
FUZZMINIMIZETIME ?= 1s

# The fuzz targets, as PACKAGE:TARGET.
FUZZ_TARGETS := ./fp8:FuzzEncodeSat ./expr:FuzzExpr ./ir:FuzzDSL ./npy:FuzzRead ./cmd/fp8gen:FuzzFlags ./export:FuzzParse

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

.PHONY: all deps test fmt vet check readme gpu golden fuzz mutants

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
	$(MAKE) --no-print-directory check
	FP8GEN_REQUIRE_HIPCC=$(REQUIRE_HIPCC) FP8GEN_REQUIRE_PYTHON=$(REQUIRE_PYTHON) $(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory mutants

# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" as -fuzztime ends (go.dev/issue/75804, fixed in Go
# 1.27): such a run, with no failing input written and no panic, is run
# once more; any other failure fails.
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		for try in 1 2; do \
			echo "$(GO) test $$pkg -run '^$$' -fuzz '^$$name$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME)"; \
			out=$$($(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) 2>&1); rc=$$?; \
			echo "$$out"; \
			[ $$rc -eq 0 ] && break; \
			if [ $$try -eq 1 ] && echo "$$out" | grep -q 'context deadline exceeded' && \
				! echo "$$out" | grep -q 'Failing input written\|panic:\|_test.go:[0-9]'; then \
				echo "fuzz: $$name: the fuzz coordinator's deadline race (go.dev/issue/75804), no failing input; once more"; \
				continue; \
			fi; \
			exit 1; \
		done; \
	done

mutants:
	$(GO) run ./scripts/mutants

# The generated files: Go files with fp8gen's header, and the folders of
# exports beside them (FILE_kernels).
GENERATED = $$(grep -rl --include='*.go' --exclude-dir=.git --exclude-dir=.gpu '^// Code generated by fp8gen; DO NOT EDIT\.$$' . | \
	while read -r f; do echo "$$f"; d="$${f%.go}_kernels"; [ -d "$$d" ] && echo "$$d"; done)

check:
	$(gofmt_check)
	$(GO) vet ./...
	$(GO) generate ./...
	@files="$(GENERATED)"; [ -n "$$files" ] || { echo "check: no generated files found" >&2; exit 1; }; \
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		stale=$$(git status --porcelain --untracked-files=all -- $$files); \
		if [ -n "$$stale" ]; then echo "$$stale"; echo "check: go generate changed the files above; commit the regenerated code" >&2; exit 1; fi; \
	else echo "check: not a git work tree; the staleness test in go test ./examples/... still runs"; fi
	@echo "check: generated files up to date"
	$(GO) run ./cmd/fp8gen-plot --readme README.md --check $(RESULTS)

# The committed bench results the README's performance table is made from.
RESULTS = $$(ls bench/results/*.json)

readme:
	$(GO) run ./cmd/fp8gen-plot --readme README.md $(RESULTS)

# One test binary per package with tests, named after its path (runtime ->
# .gpu/runtime.test, cmd/fp8gen -> .gpu/cmd_fp8gen.test), without the symbol
# table (-s: stack traces keep their names), so that the few a GPU run needs
# fit the device tool's 64 MiB. A test binary runs in its package's
# directory to find its testdata/.
gpu:
	@mkdir -p .gpu
	@module=$$($(GO) list -m) || exit 1; \
	pkgs=$$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...) || exit 1; \
	for p in $$pkgs; do \
		rel=$${p#"$$module"}; rel=$${rel#/}; \
		if [ -z "$$rel" ]; then rel=.; name=root; else name=$$(echo "$$rel" | tr / _); fi; \
		echo "$(GO) test -c -ldflags=-s -o .gpu/$$name.test ./$$rel"; \
		$(GO) test -c -ldflags=-s -o ".gpu/$$name.test" "./$$rel" || exit 1; \
	done
	@for c in fp8gen fp8gen-plot; do if [ -d cmd/$$c ]; then echo "$(GO) build -buildvcs=true -ldflags=-s -o .gpu/$$c ./cmd/$$c"; $(GO) build -buildvcs=true -ldflags=-s -o .gpu/$$c ./cmd/$$c || exit 1; fi; done

golden:
	$(GO) test ./golden -update
