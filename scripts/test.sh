#!/usr/bin/env bash
# Build and run every test suite; exits non-zero on the first failing phase.
#  0. format: clang-format-19 --dry-run --Werror over the tracked C/C++ files (fast fail)
#  1. cross-compile: the runtime, the profiler stub and the headers for Wasm and Windows
#  2. release build (CMake preset "release"): every ctest — cmocka, lit, the editor's npm
#     suite (editor_vscode) and the installed-tree test (driver_install)
#  3. AddressSanitizer + UndefinedBehaviorSanitizer build (preset "asan"): the same
#     ctests except those labelled no-sanitizer
#  4. ThreadSanitizer build of the runtime only (preset "tsan"): the tests labelled tsan
# The presets are in CMakePresets.json; `make build` uses the same "release" one.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

phase() { printf '\n=== %s ===\n' "$*"; }

phase "format (clang-format-19 --dry-run --Werror)"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "test.sh: error: $PWD: not a git checkout (the format check lists tracked files)" >&2; exit 1; }
git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 clang-format-19 --dry-run --Werror
echo "format: $(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | wc -l) files clean (make format fixes them)"

phase "cross-compile (wasm32-wasi, x86_64-w64-mingw32)"
scripts/cross-compile.sh

phase "npm packages for the test suites"
for d in test/consumers editor/vscode; do
  (cd "$d" && npm ci --no-audit --no-fund)
done

# Every ctest carries one area label, so `ctest -L <area>` selects it, and is named
# <area>_<suite> (lit suites: lit_<suite>) (see cmake/OspreyTesting.cmake).
check_labels() {
  ctest --test-dir "$1" --show-only=json-v1 | python3 -c '
import json, sys
areas = {"runtime", "postprocess", "frontend", "codegen", "driver", "editor"}
tests = json.load(sys.stdin)["tests"]
bad = []
for t in tests:
    labels = next((p["value"] for p in t.get("properties", []) if p["name"] == "LABELS"), [])
    area = areas.intersection(labels)
    prefix = t["name"].split("_", 1)[0]
    if len(area) != 1 or (prefix != "lit" and prefix not in area):
        bad.append("%s %s" % (t["name"], labels))
if bad:
    sys.exit("test.sh: error: ctests without exactly one area label (%s) or not named "
             "<area>_<suite> / lit_<suite>: %s" % ("/".join(sorted(areas)), ", ".join(bad)))
print("labels: %d tests, each with one area label and named after it" % len(tests))'
}

# preset:build directory, as in CMakePresets.json
for entry in release:build asan:build-asan tsan:build-tsan; do
  preset=${entry%%:*}
  phase "$preset build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
  check_labels "${entry#*:}"
  phase "$preset tests"
  ctest --preset "$preset" -j "$JOBS"
done

phase "all tests passed"
