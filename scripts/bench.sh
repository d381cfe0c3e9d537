#!/usr/bin/env bash
# Run every benchmark under bench/ (each prints its figures) and keep each one's output
# in bench/results/<name>.txt (bench/accuracy.sh also writes bench/results/accuracy.md).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
for b in bench/*.sh; do
  [ -e "$b" ] || continue
  name=$(basename "$b" .sh)
  echo "=== $b ==="
  bash "$b" 2>&1 | tee "bench/results/$name.txt"
done
