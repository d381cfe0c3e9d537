# Osprey — top-level entry points. See README.md.
#   make demo    set up, build, and profile examples/demo.osp
#   make test    set up, build, and run every test suite (what CI runs)
#   make bench   run the benchmarks under bench/ and write bench/results/
#   make build   configure and build into build/
SHELL := /bin/bash
JOBS ?= $(shell nproc)
CMAKE_FLAGS := -G Ninja -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19

.PHONY: all setup build demo test bench clean
all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake -S . -B build $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build -j $(JOBS)

demo: build
	@scripts/demo.sh

test: setup
	@scripts/test.sh

bench: build
	@scripts/bench.sh

clean:
	rm -rf build build-asan build-tsan
