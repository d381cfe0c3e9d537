#!/usr/bin/env bash
# Fuzz the HTTP request-head and reply parsing (runtime/core/http_parse.c)
# with libFuzzer + ASan + UBSan. Usage: test/fuzz/http_fuzz.sh [seconds]  (default 600; one
# job, niced, to spare shared cores). Seeds: the kept corpus test/fuzz/http_corpus (hand-written requests and replies, well-formed and broken);
# new interesting inputs are merged back into it (kept in git; ctest's
# runtime_http_fuzz_corpus replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
out=build-fuzz
mkdir -p "$out/http-new" test/fuzz/http_corpus
CFLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=gnu17
        -Iruntime/core)
clang-19 "${CFLAGS[@]}" runtime/core/http_parse.c \
  test/fuzz/http_fuzz.c -o "$out/http_fuzz"
(cd "$out" && nice -n 10 ./http_fuzz -jobs=1 -workers=1 -max_total_time="$secs" -max_len=16384 \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix=./http- http-new ../test/fuzz/http_corpus)
if ls "$out"/http-crash-* "$out"/http-leak-* "$out"/http-timeout-* "$out"/http-oom-* >/dev/null 2>&1; then
  echo "fuzz: failures found:"; ls "$out"/http-crash-* "$out"/http-leak-* "$out"/http-timeout-* "$out"/http-oom-* 2>/dev/null
  exit 1
fi
# keep a small corpus covering everything found: a set-cover merge into a fresh directory
rm -rf "$out/http-min" && mkdir -p "$out/http-min"
"$out/http_fuzz" -set_cover_merge=1 "$out/http-min" test/fuzz/http_corpus "$out/http-new" >/dev/null 2>&1
keep=$(ls test/fuzz/http_corpus/regress-* 2>/dev/null || true)
[ -n "$keep" ] && cp $keep "$out/http-min"/
rm -f test/fuzz/http_corpus/*
cp "$out/http-min"/* test/fuzz/http_corpus/
echo "corpus: $(ls test/fuzz/http_corpus | wc -l) files in test/fuzz/http_corpus"
