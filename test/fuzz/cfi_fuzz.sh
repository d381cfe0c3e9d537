#!/usr/bin/env bash
# Fuzz the CFI table builder and the hybrid walk (runtime/prof/prof_cfi.c, prof_unwind.c)
# with libFuzzer + ASan + UBSan. Usage: test/fuzz/cfi_fuzz.sh [seconds]  (default 600; one
# job, niced, to spare shared cores). Seeds: the kept corpus test/fuzz/cfi_corpus (real
# .eh_frame sections and slices of them); new interesting inputs are merged back into it
# (kept in git; ctest's cfi_fuzz_corpus replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
out=build-fuzz
mkdir -p "$out/cfi-new" test/fuzz/cfi_corpus
CFLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=gnu17
        -Iruntime/prof)
clang-19 "${CFLAGS[@]}" runtime/prof/prof_cfi.c runtime/prof/prof_unwind.c \
  test/fuzz/cfi_fuzz.c -o "$out/cfi_fuzz"
(cd "$out" && nice -n 10 ./cfi_fuzz -jobs=1 -workers=1 -max_total_time="$secs" -max_len=16384 \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix=./cfi- cfi-new ../test/fuzz/cfi_corpus)
if ls "$out"/cfi-crash-* "$out"/cfi-leak-* "$out"/cfi-timeout-* "$out"/cfi-oom-* >/dev/null 2>&1; then
  echo "fuzz: failures found:"; ls "$out"/cfi-crash-* "$out"/cfi-leak-* "$out"/cfi-timeout-* "$out"/cfi-oom-* 2>/dev/null
  exit 1
fi
# keep a small corpus covering everything found: a set-cover merge into a fresh directory
rm -rf "$out/cfi-min" && mkdir -p "$out/cfi-min"
"$out/cfi_fuzz" -set_cover_merge=1 "$out/cfi-min" test/fuzz/cfi_corpus "$out/cfi-new" >/dev/null 2>&1
keep=$(ls test/fuzz/cfi_corpus/regress-* 2>/dev/null || true)
[ -n "$keep" ] && cp $keep "$out/cfi-min"/
rm -f test/fuzz/cfi_corpus/*
cp "$out/cfi-min"/* test/fuzz/cfi_corpus/
echo "corpus: $(ls test/fuzz/cfi_corpus | wc -l) files in test/fuzz/cfi_corpus"
