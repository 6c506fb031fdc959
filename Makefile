# Top-level Makefile: thin wrapper around CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local
PYTHON ?= python3

.PHONY: all everything run test plots install test-asan fuzz fuzz-replay gpu-check format format-check bench bench-cpu clean

# The library (static and shared) and the program only; tests and benchmarks are built by the
# targets that run them.
all: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target mixsparse mixsparse_shared mixsparse-cli

# Everything: the library, the program, the tests and the benchmarks.
everything: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

# The program and the shared library it links, nothing else, then the main job.
run: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target mixsparse-cli
	$(BUILD)/mixsparse run

test: everything
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Header, libmixsparse.a and .so, the program, mixsparse.pc and the CMake package under PREFIX
# (DESTDIR, when set, is prepended for staging).
install: all
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# Tests under AddressSanitizer + UndefinedBehaviorSanitizer (CPU backend only).
test-asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMSP_SANITIZE=ON -DMSP_CUDA=OFF
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# libFuzzer target for the Matrix Market parser (clang); fuzz-replay runs the seed corpus once.
fuzz:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DMSP_CUDA=OFF -DMSP_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_mtx
	./build-fuzz/fuzz/fuzz_mtx -max_total_time=60 fuzz/corpus-work fuzz/corpus

fuzz-replay:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DMSP_CUDA=OFF -DMSP_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_mtx
	./build-fuzz/fuzz/fuzz_mtx -runs=0 fuzz/corpus

# On a GPU machine: CUDA cross tests plain, then under compute-sanitizer memcheck and racecheck.
gpu-check: everything
	./scripts/gpu-check.sh $(BUILD)

bench: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target mixsparse-bench
	$(BUILD)/bench/mixsparse-bench

# CPU backend against Eigen, GraphBLAS and librsb (each when installed), 2 threads, fp64.
bench-cpu: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target mixsparse-bench-cpu
	$(BUILD)/bench/mixsparse-bench-cpu --threads 2

# docs/performance.md and its charts (docs/img/) from the benchmark results in docs/results/
# (charts need python3-matplotlib).
plots:
	$(PYTHON) scripts/perf-doc.py

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) build-asan build-fuzz
