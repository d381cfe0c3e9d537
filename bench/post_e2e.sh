#!/usr/bin/env bash
# What `osprey prog.osp --profile` adds to `osprey prog.osp --run`, split into compile,
# run and post-process (issue 4 benchmark). Program: test/postprocess/e2e/Inputs/fib.osp
# (fib(38) on main, fib(37) in a fiber), or the file given. Best of 3 runs each.
# Usage: bench/post_e2e.sh [program.osp]
set -euo pipefail
cd "$(dirname "$0")/.."
osprey=$PWD/build/bin/osprey
prog=$(realpath "${1:-test/postprocess/e2e/Inputs/fib.osp}")
if [ ! -x "$osprey" ] || ! "$osprey" --help | grep -q -- '--postprocess'; then
  echo "post_e2e: needs build/bin/osprey with --profile/--postprocess wired (skipped)"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
best() { # best wall seconds of 3 runs of "$@" (output discarded)
  local b=
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N)
    b=$(python3 -c "import sys; v=$e-$s; b='$b'; print(v if not b else min(v, float(b)))")
  done
  echo "$b"
}
c_plain=$(best "$osprey" "$prog" --build -o plain)
c_prof=$(best "$osprey" "$prog" --build --profile -o prof)
r_plain=$(best ./plain)
r_prof=$(best env OSPREY_PROFILE="$tmp/raw.osprof.json" ./prof)
env OSPREY_PROFILE="$tmp/raw.osprof.json" ./prof >/dev/null
p_post=$(best "$osprey" --postprocess raw.osprof.json --binary ./prof -o post)
t_run=$(best "$osprey" "$prog" --run)
t_prof=$(best "$osprey" "$prog" --profile)
python3 - "$c_plain" "$c_prof" "$r_plain" "$r_prof" "$p_post" "$t_run" "$t_prof" <<'PY'
import sys
cp, cq, rp, rq, pp, tr, tq = map(float, sys.argv[1:])
print(f"program: fib(38) on main + fib(37) in a fiber (best of 3, seconds)")
print(f"compile      --run build {cp:6.3f}   --profile build {cq:6.3f}   (+{cq-cp:6.3f})")
print(f"run          plain       {rp:6.3f}   profiled        {rq:6.3f}   (+{rq-rp:6.3f}, {100*(rq-rp)/rp:+.1f}%)")
print(f"post-process                          raw -> 4 files + report {pp:6.3f}")
print(f"end to end   --run       {tr:6.3f}   --profile       {tq:6.3f}   (+{tq-tr:6.3f}, ratio {tq/tr:.2f}x)")
PY
