# Osprey — top-level entry points. See README.md.
#   make demo                 set up, build, and profile examples/demo.osp
#   make test                 set up, build, and run every test suite (what CI runs)
#   make bench                run the benchmarks under bench/ and write bench/results/
#   make build                configure and build into build/ (CMake preset "release")
#   make install PREFIX=dir   build, then install bin/osprey, lib/, include/osprey/ under dir
#   make format               clang-format-19 every tracked C/C++ file in place
# Every build goes through CMakePresets.json (release, asan, tsan); scripts/test.sh too.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local

.PHONY: all setup build demo test bench install format clean
all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

demo: build
	@scripts/demo.sh

test: setup
	@scripts/test.sh

bench: build
	@scripts/bench.sh

install: build
	@cmake --install build --prefix "$(PREFIX)"

format:
	@git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 clang-format-19 -i

clean:
	rm -rf build build-asan build-tsan build-cross
