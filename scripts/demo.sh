#!/usr/bin/env bash
# The README's first command: compile and run the example program.
set -euo pipefail
cd "$(dirname "$0")/.."
exec build/bin/osprey examples/demo.osp --run
