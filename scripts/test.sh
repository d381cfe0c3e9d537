#!/usr/bin/env bash
# Build and run every test suite; exits non-zero on the first failing phase.
#  1. release build (RelWithDebInfo): ctest (cmocka unit tests + lit suites)
#  2. AddressSanitizer + UndefinedBehaviorSanitizer build: the same ctest run
#  3. ThreadSanitizer build of the runtime only: runtime tests labelled "tsan"
#  4. editor extension: unit, browser and packaging tests (npm)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
CMAKE_FLAGS=(-G Ninja -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

phase() { printf '\n=== %s ===\n' "$*"; }

phase "npm packages for the test suites"
for d in test/consumers editor/vscode; do
  if [ -f "$d/package-lock.json" ]; then (cd "$d" && npm ci --no-audit --no-fund); fi
done

phase "release build"
cmake -S . -B build "${CMAKE_FLAGS[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$JOBS"
phase "release tests"
ctest --test-dir build --output-on-failure -j "$JOBS"

phase "ASan+UBSan build"
cmake -S . -B build-asan "${CMAKE_FLAGS[@]}" -DCMAKE_BUILD_TYPE=Debug \
      -DOSPREY_SANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$JOBS"
phase "ASan+UBSan tests"
ctest --test-dir build-asan --output-on-failure -j "$JOBS" -LE no-sanitizer

phase "TSan build (runtime)"
cmake -S . -B build-tsan "${CMAKE_FLAGS[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DOSPREY_SANITIZE=thread -DOSPREY_RUNTIME_ONLY=ON >/dev/null
cmake --build build-tsan -j "$JOBS"
phase "TSan tests (runtime)"
ctest --test-dir build-tsan --output-on-failure -j "$JOBS" -L tsan

if [ -f editor/vscode/package.json ]; then
  phase "editor extension"
  (cd editor/vscode && npm test)
fi

phase "all tests passed"
