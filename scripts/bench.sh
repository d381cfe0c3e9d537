#!/usr/bin/env bash
# Run every benchmark under bench/ (each prints its figures) and keep the output.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
for b in bench/*.sh; do
  [ -e "$b" ] || continue
  echo "=== $b ==="
  bash "$b"
done
