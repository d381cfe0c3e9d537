#!/usr/bin/env bash
# Fuzz the front end with libFuzzer (clang-19, ASan + UBSan), then merge the new
# inputs into the kept corpus test/fuzz/corpus (minimised with -merge=1, then the 48
# smallest kept).
# Usage: test/fuzz/run.sh [seconds]   (default 600; one job, to spare shared cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
out=build-fuzz
mkdir -p "$out" test/fuzz/corpus
clang-19 -std=gnu17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Ifrontend frontend/*.c test/fuzz/fuzz_frontend.c -o "$out/fuzz_frontend"
work="$out/corpus-work"
mkdir -p "$work"
# seeds: the kept corpus plus every program and lit input
cp test/fuzz/corpus/* "$work"/ 2>/dev/null || true
for f in test/programs/*.osp test/lit/*.osp test/lit/Inputs/*.osp examples/*.osp; do
  [ -e "$f" ] && cp "$f" "$work/seed-$(basename "$f")"
done
# -jobs=1 writes its log (fuzz-0.log) into the working directory: keep it in $out
(cd "$out" && ./fuzz_frontend corpus-work -max_total_time="$secs" -jobs=1 -workers=1 -max_len=4096 \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=./)
if ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* >/dev/null 2>&1; then
  echo "fuzz: failures found:"; ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null
  exit 1
fi
mkdir -p "$out/merged"
rm -f "$out/merged"/*
"$out/fuzz_frontend" -merge=1 "$out/merged" "$work" >/dev/null 2>&1
# keep a small corpus (the replay test also runs every test program): the 48 smallest merged
# inputs of at least 20 bytes
rm -f test/fuzz/corpus/*
find "$out/merged" -type f -size +19c -printf '%s %p\n' | sort -n | sed -n '1,48p' | cut -d' ' -f2- |
  while read -r f; do cp "$f" test/fuzz/corpus/; done
echo "corpus: $(ls test/fuzz/corpus | wc -l) inputs kept in test/fuzz/corpus"
