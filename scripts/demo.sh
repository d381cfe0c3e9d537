#!/usr/bin/env bash
# The README's first command: compile examples/demo.osp for profiling, run it under the
# sampler, and write the five exports to build/demo/ followed by the report.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/demo
exec build/bin/osprey examples/demo.osp --profile -o build/demo/demo
