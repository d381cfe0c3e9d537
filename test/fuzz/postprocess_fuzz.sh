#!/usr/bin/env bash
# Fuzz the raw profile reader and the exports behind it with libFuzzer + ASan.
# Usage: test/fuzz/postprocess_fuzz.sh [seconds]     (default 600)
# New interesting inputs are added to test/fuzz/postprocess_corpus/ (kept in git;
# ctest's postprocess_fuzz_corpus replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
out=build-fuzz
mkdir -p "$out"
CFLAGS=(-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
        -Ipostprocess -Icommon -Iruntime/prof -D_GNU_SOURCE -std=gnu17)
# the whole post-processor (the reader's callers reach every file of it) and its output helper
objs=()
for f in postprocess/*.c common/atomic_output.c; do
  o="$out/$(basename "$f" .c).o"
  clang-19 "${CFLAGS[@]}" -c "$f" -o "$o"
  objs+=("$o")
done
clang++-19 -g -O1 -fsanitize=address -fno-rtti -fno-exceptions -Ipostprocess -Icommon \
  -isystem /usr/lib/llvm-19/include -D__STDC_CONSTANT_MACROS -D__STDC_LIMIT_MACROS \
  -c postprocess/symbolizer.cpp -o "$out/symbolizer.o"
clang-19 "${CFLAGS[@]}" -fsanitize=fuzzer -c test/fuzz/postprocess_fuzz.c -o "$out/postprocess_fuzz.o"
clang++-19 -fsanitize=fuzzer,address,undefined "$out/postprocess_fuzz.o" "${objs[@]}" \
  "$out/symbolizer.o" -L/usr/lib/llvm-19/lib -lLLVM-19 -lcjson -lz -lm -lpthread \
  -Wl,-rpath,/usr/lib/llvm-19/lib -o "$out/postprocess_fuzz"
mkdir -p "$out/new-corpus"
(cd "$out" && ASAN_OPTIONS=detect_leaks=1 ./postprocess_fuzz -jobs=1 -workers=1 \
  -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict=../test/fuzz/postprocess.dict new-corpus ../test/fuzz/postprocess_corpus)
# keep a minimal corpus covering everything found
"$out/postprocess_fuzz" -merge=1 test/fuzz/postprocess_corpus "$out/new-corpus" >/dev/null 2>&1
echo "corpus: $(ls test/fuzz/postprocess_corpus | wc -l) files"
