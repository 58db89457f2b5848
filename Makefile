# tlsgate: CMake does the work; these targets are the front door.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build deps run test quick check format format-check analyze tsan bench fuzz clean deb

all: build

deps:
	@scripts/deps.sh build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Install what is missing, build, and serve https://127.0.0.1:8443/ in the foreground.
run:
	@scripts/deps.sh build
	@$(MAKE) --no-print-directory build
	exec $(BUILD)/tlsgate

# Install what is missing, build with warnings as errors, run every test.
test:
	@scripts/deps.sh test
	cmake -S . -B $(BUILD) -DTLSGATE_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# Measure tlsgate against nginx and HAProxy (crypto, handshakes, keep-alive, throughput,
# replayed-flight saturation) and write bench/out/report.md + PNG charts (bench/report.sh).
# BENCH_QUICK=1: short runs and fewer cases (under 5 minutes).
bench:
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory build
	BUILD_DIR=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) bench/report.sh

# The Debian package $(BUILD)/tlsgate_VERSION_ARCH.deb (dpkg-deb, no network; dist/mkdeb.sh).
deb: build
	cmake --build $(BUILD) --target deb

fuzz:
	@scripts/deps.sh test
	tests/fuzz/run.sh

# The developer loop: the quick tier (unit, differential, fuzz replays, fast integration;
# under a minute). `make test` runs every tier.
quick: build
	cd $(BUILD) && ctest -L quick --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# Before a commit (CONTRIBUTING.md), and in CI: formatting, layering, static analysis
# (cppcheck), then a -Werror build and the quick tier. Every step runs; the summary says
# which failed (scripts/check.sh). Under 5 minutes on 2 cores from a built tree.
check:
	@scripts/deps.sh test
	BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/check.sh

# Rewrite every C file with the committed .clang-format (Debian's clang-format 14).
format:
	scripts/format.sh

format-check:
	scripts/format.sh --check

analyze:
	scripts/analyze.sh

# ThreadSanitizer build in build-tsan/: the tests that cross threads (the provider's timer
# thread and batch queues, the gateway's wake queue, async TLS); see CONTRIBUTING.md.
tsan:
	@scripts/deps.sh test
	cmake -S . -B build-tsan -DTLSGATE_WERROR=ON -DTLSGATE_TSAN=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest -L tsan --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

clean:
	rm -rf $(BUILD)
