#!/usr/bin/env bash
# Accuracy and overhead of the profiler against perf and gperftools on the same binaries
# in the same run (issue 6). Prints one table and writes it with the machine's
# description to bench/results/accuracy.md (with any setting below other than the
# defaults: to $BUILD/bench/accuracy.md instead, and it says so). See bench/accuracy.py
# for the workloads, the truth each is measured against, and how each profiler is run
# and read.
#
# Usage: bench/accuracy.sh                      (after `make build`)
#   REPS=<n>             rounds per workload, one run per profiler each (default 3)
#   OVERHEAD_REPS=<n>    rounds for ratio-1, whose overhead is the target (default 7)
#   SECONDS_PER_RUN=<s>  CPU seconds per run (default 1.0)
#   TRUTH_REPS=<n>       repeats of the calibration timings (default 3)
#   ONLY=<names>         only these workloads, e.g. ONLY=ratio-1,Osprey:mixed
#   BUILD=<dir>          build directory (default build)   WORKDIR=<dir>  keep scratch files
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/accuracy.py "$@"
