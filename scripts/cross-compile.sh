#!/usr/bin/env bash
# Compile the runtime, the inactive profiler stub and the public headers for targets
# other than the Linux host, so code the host build never sees still compiles:
#   wasm32-wasi          clang-19 + Debian's wasi-libc
#   x86_64-w64-mingw32   clang-19 + Debian's mingw-w64 headers
#   aarch64-linux-gnu    clang-19 + Debian's libc6-dev-arm64-cross headers: the whole
#                        runtime with the real profiler (arm64 registers, CFI tables, walk)
# Compile only: objects and an archive per target under build-cross/<target>/ (nothing is
# linked or run). Warnings are errors, as in the host build. Exits non-zero on the first
# file that does not compile. Run by scripts/test.sh; alone: scripts/cross-compile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-cross
CFLAGS=(-std=gnu17 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -fno-omit-frame-pointer
        -Iruntime/core -Iruntime/prof)

# Boehm GC's headers are plain C, the same for every platform (gc_config_macros.h picks
# the target's thread API), but Debian installs them only for the host. The cross builds
# use the host's copy for declarations only — nothing is linked — from a private
# directory searched after the target's own headers, so no other host header leaks in.
gc_inc=$out/gc-include
mkdir -p "$gc_inc"
[ -f /usr/include/gc/gc.h ] || { echo "cross-compile: error: /usr/include/gc/gc.h: install libgc-dev (scripts/setup.sh)" >&2; exit 1; }
ln -sfn /usr/include/gc "$gc_inc/gc"

# wasi-libc: Debian 12 installs it in the multiarch layout (/usr/include/wasm32-wasi),
# newer releases as a sysroot (/usr/share/wasi-sysroot).
if [ -d /usr/share/wasi-sysroot/include ]; then
  WASI=(--sysroot=/usr/share/wasi-sysroot)
elif [ -d /usr/include/wasm32-wasi ]; then
  WASI=(-nostdlibinc -isystem /usr/include/wasm32-wasi)
else
  echo "cross-compile: error: wasi-libc not found (/usr/share/wasi-sysroot, /usr/include/wasm32-wasi): install wasi-libc (scripts/setup.sh)" >&2
  exit 1
fi
[ -d /usr/x86_64-w64-mingw32/include ] ||
  { echo "cross-compile: error: /usr/x86_64-w64-mingw32/include: install mingw-w64 (scripts/setup.sh)" >&2; exit 1; }
[ -f /usr/aarch64-linux-gnu/include/stdio.h ] ||
  { echo "cross-compile: error: /usr/aarch64-linux-gnu/include: install libc6-dev-arm64-cross (scripts/setup.sh)" >&2; exit 1; }
# Debian's cross headers, then clang's own (stddef.h, stdatomic.h, ...), nothing of the host.
A64=(-nostdlibinc -isystem /usr/aarch64-linux-gnu/include -isystem "$(clang-19 -print-resource-dir)/include")

# What each target compiles. runtime/prof: every source of the archive (on these targets
# OSP_PROF_SAMPLER is 0: prof_stub.c provides the hooks and the sampler's files compile
# to nothing); prof_preload.c is only in the Linux LD_PRELOAD library.
prof_sources=()
for f in runtime/prof/*.c; do
  [ "$f" = runtime/prof/prof_preload.c ] || prof_sources+=("$f")
done
# runtime/core on Wasm: none. Every file includes rt_internal.h, hence Boehm GC's
# threaded headers and <pthread.h>, and Debian 12's wasi-libc has no pthreads (nor is
# there a Boehm GC for WASI to link).
wasm_core=()
# runtime/core on Windows: everything except the files built on POSIX-only calls —
#   crash.c    sigaltstack/sigaction fatal-signal handlers, <sys/resource.h>
#   fiber.c    getrlimit(RLIMIT_STACK) for fiber stack sizes (<sys/resource.h>)
#   effects.c  pthread_attr_setguardsize and GC_pthread_create (absent from Win32 GC)
#   gpu.c      the same, for its worker threads
#   stream.c   poll(2), writev(2) (<poll.h>, <sys/uio.h>)
#   strings.c  getentropy(3)
#   process.c  posix_spawn(3), pipe2(2), poll(2), waitpid(2) (<spawn.h>, <poll.h>, <sys/wait.h>)
# (http.c is compiled: without POSIX sockets it builds stubs whose built-ins fail cleanly.)
win_core=()
for f in runtime/core/*.c; do
  case "$(basename "$f")" in crash.c | fiber.c | effects.c | gpu.c | stream.c | strings.c | process.c) ;;
    *) win_core+=("$f") ;; esac
done

compile_target() { # <target> <flags...> -- <sources...>
  local target=$1
  shift
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  local dir=$out/$target objs=()
  rm -rf "$dir"
  mkdir -p "$dir"
  # The public headers alone, as a user's C file includes them.
  printf '#include "osprey_rt.h"\n#include "osp_prof.h"\n' > "$dir/headers.c"
  for src in "$dir/headers.c" "$@"; do
    local obj
    obj="$dir/$(basename "${src%.c}").o"
    clang-19 --target="$target" "${flags[@]}" "${CFLAGS[@]}" -idirafter "$gc_inc" -c "$src" -o "$obj"
    objs+=("$obj")
  done
  llvm-ar-19 rcs "$dir/libosprey_rt.a" "${objs[@]}"
  # The stub really provides the hooks generated code calls.
  local missing
  missing=$(comm -23 <(printf '%s\n' osp_prof_boot osp_prof_thread_register \
      osp_prof_thread_unregister osp_prof_block_begin osp_prof_block_end | sort) \
    <(llvm-nm-19 --defined-only --format=just-symbols "$dir/libosprey_rt.a" 2>/dev/null | sort -u))
  if [ -n "$missing" ]; then
    echo "cross-compile: error: $target: the archive does not define" $missing >&2
    exit 1
  fi
  echo "cross-compile: $target: ${#objs[@]} objects ($(($# )) sources + headers) -> $dir/libosprey_rt.a"
}

compile_target wasm32-wasi "${WASI[@]}" -- "${prof_sources[@]}" "${wasm_core[@]}"
compile_target x86_64-w64-mingw32 -- "${prof_sources[@]}" "${win_core[@]}"
compile_target aarch64-linux-gnu "${A64[@]}" -- runtime/prof/*.c runtime/core/*.c
