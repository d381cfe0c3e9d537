#!/usr/bin/env bash
# runtime/core's start-up layering (runtime/core/rt_internal.h): stream.c calls nothing
# defined in crash.c or start.c, and crash.c nothing defined in start.c. Checked on the
# compiled objects: no undefined symbol of a lower file is defined by a higher one.
# Usage: layering_test.sh <nm> <object>...   (the objects of osprey_rt_core)
set -euo pipefail
nm=$1
shift
obj() {
  for o in "$@"; do
    case "$(basename "$o")" in "$want.o" | "$want.obj") echo "$o"; return; esac
  done
  echo "layering_test: no object for $want among the arguments" >&2
  exit 1
}
want=stream.c; stream=$(obj "$@")
want=crash.c; crash=$(obj "$@")
want=start.c; start=$(obj "$@")
defined() { "$nm" --defined-only --extern-only --format=just-symbols "$1" | sort -u; }
undefined() { "$nm" --undefined-only --format=just-symbols "$1" | sort -u; }
bad=0
check() { # <lower object> <higher object>
  local calls
  calls=$(comm -12 <(undefined "$1") <(defined "$2"))
  if [ -n "$calls" ]; then
    echo "layering_test: FAIL: $(basename "$1") calls up into $(basename "$2"):" $calls >&2
    bad=1
  fi
}
check "$stream" "$crash"
check "$stream" "$start"
check "$crash" "$start"
# The check can fail: start.c does call down into both.
[ -n "$(comm -12 <(undefined "$start") <(defined "$stream"))" ] ||
  { echo "layering_test: FAIL: start.c calls nothing in stream.c (objects mixed up?)" >&2; bad=1; }
[ "$bad" = 0 ] && echo "layering_test: ok"
exit "$bad"
