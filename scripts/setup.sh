#!/usr/bin/env bash
# Install every Debian package the build, the tests and the benchmarks need, if it is
# missing. Safe to run repeatedly; does nothing when all are present.
# Usage: scripts/setup.sh            (needs root, or sudo)
set -euo pipefail

PACKAGES=(
  # build
  make cmake ninja-build python3 pkg-config
  clang-19 llvm-19-dev llvm-19-tools libclang-rt-19-dev libstdc++-12-dev
  libcjson-dev libcmocka-dev libgc-dev zlib1g-dev libzstd-dev libxml2-dev libedit-dev libffi-dev
  # format check (scripts/test.sh, make format)
  clang-format-19
  # cross-compiling the runtime and the profiler stub (scripts/cross-compile.sh); the
  # AArch64 Linux headers compile the profiler's arm64 code (CFI tables, walk, registers)
  wasi-libc mingw-w64 libc6-dev-arm64-cross linux-libc-dev-arm64-cross
  # tests of `extern` and `// @link:` against a real C library (test/programs/ffi_sqlite.osp)
  libsqlite3-dev
  # profiler: libc's internal functions and thread entries named from their detached
  # debug files (/usr/lib/debug/.build-id); gdb for the unwinder's validation test
  libc6-dbg gdb
  # a private network namespace for HTTP test programs on a fixed port
  # (`// network: private` in test/programs: unshare from util-linux, ip from iproute2)
  util-linux iproute2
  # editor extension and browser tests
  nodejs chromium
  # pprof consumer for the --pprof test (go tool pprof)
  golang-go
  # benchmarks
  linux-perf libgoogle-perftools-dev google-perftools valgrind
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done
# Debian's nodejs ships npm separately; nodesource's includes it.
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
