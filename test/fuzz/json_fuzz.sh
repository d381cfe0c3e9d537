#!/usr/bin/env bash
# Fuzz the JSON parser of jsonParse/jsonGet/jsonLength (runtime/core/json_parse.c)
# with libFuzzer + ASan + UBSan. Usage: test/fuzz/json_fuzz.sh [seconds]  (default 600; one
# job, niced, to spare shared cores). Seeds: the kept corpus test/fuzz/json_corpus (hand-written JSON texts, valid and broken);
# new interesting inputs are merged back into it (kept in git; ctest's
# runtime_json_fuzz_corpus replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
out=build-fuzz
mkdir -p "$out/json-new" test/fuzz/json_corpus
CFLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=gnu17
        -Iruntime/core)
clang-19 "${CFLAGS[@]}" runtime/core/json_parse.c \
  test/fuzz/json_fuzz.c -o "$out/json_fuzz"
(cd "$out" && nice -n 10 ./json_fuzz -jobs=1 -workers=1 -max_total_time="$secs" -max_len=16384 \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix=./json- json-new ../test/fuzz/json_corpus)
if ls "$out"/json-crash-* "$out"/json-leak-* "$out"/json-timeout-* "$out"/json-oom-* >/dev/null 2>&1; then
  echo "fuzz: failures found:"; ls "$out"/json-crash-* "$out"/json-leak-* "$out"/json-timeout-* "$out"/json-oom-* 2>/dev/null
  exit 1
fi
# keep a small corpus covering everything found: a set-cover merge into a fresh directory
rm -rf "$out/json-min" && mkdir -p "$out/json-min"
"$out/json_fuzz" -set_cover_merge=1 "$out/json-min" test/fuzz/json_corpus "$out/json-new" >/dev/null 2>&1
keep=$(ls test/fuzz/json_corpus/regress-* 2>/dev/null || true)
[ -n "$keep" ] && cp $keep "$out/json-min"/
rm -f test/fuzz/json_corpus/*
cp "$out/json-min"/* test/fuzz/json_corpus/
echo "corpus: $(ls test/fuzz/json_corpus | wc -l) files in test/fuzz/json_corpus"
