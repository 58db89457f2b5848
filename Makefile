# tlsgate: CMake does the work; these targets are the front door.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build deps run test bench fuzz clean format deb

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

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)
