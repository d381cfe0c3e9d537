#!/usr/bin/env bash
# Fuzz the collapsed-stacks reader of `osprey --diff` and the diff behind it (libFuzzer +
# ASan + UBSan). Usage: test/fuzz/folded_fuzz.sh [seconds]     (default 300)
# New interesting inputs go to test/fuzz/folded_corpus/ (kept in git; ctest's
# postprocess_folded_fuzz_corpus replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-300}
out=build-fuzz-folded
mkdir -p "$out"
CFLAGS=(-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
        -Ipostprocess -Icommon -Iruntime/prof -D_GNU_SOURCE -std=gnu17)
objs=()
for f in postprocess/*.c common/atomic_output.c; do
  o="$out/$(basename "$f" .c).o"
  clang-19 "${CFLAGS[@]}" -c "$f" -o "$o"
  objs+=("$o")
done
clang++-19 -g -O1 -fsanitize=address -fno-rtti -fno-exceptions -Ipostprocess -Icommon \
  -isystem /usr/lib/llvm-19/include -D__STDC_CONSTANT_MACROS -D__STDC_LIMIT_MACROS \
  -c postprocess/symbolizer.cpp -o "$out/symbolizer.o"
clang-19 "${CFLAGS[@]}" -fsanitize=fuzzer -c test/fuzz/folded_fuzz.c -o "$out/folded_fuzz.o"
clang++-19 -fsanitize=fuzzer,address,undefined "$out/folded_fuzz.o" "${objs[@]}" \
  "$out/symbolizer.o" -L/usr/lib/llvm-19/lib -lLLVM-19 -lcjson -lz -lm -lpthread \
  -Wl,-rpath,/usr/lib/llvm-19/lib -o "$out/folded_fuzz"
mkdir -p test/fuzz/folded_corpus
(cd "$out" && ASAN_OPTIONS=detect_leaks=1 ./folded_fuzz -max_total_time="$secs" -max_len=2048 \
  -timeout=10 -rss_limit_mb=2048 ../test/fuzz/folded_corpus)
