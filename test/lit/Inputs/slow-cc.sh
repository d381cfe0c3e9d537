#!/bin/sh
# A link compiler that never finishes: writes "linking" to the file $SLOW_CC_MARK, then sleeps (as
# this process, so a signal forwarded by the driver ends it). For interrupt tests.
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
printf 'partial' > "$out"
echo linking > "$SLOW_CC_MARK"
exec sleep 60
