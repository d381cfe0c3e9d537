#!/bin/sh
# signal-at.sh <marker> <signal> <command...>: run the command in the background, wait
# until the file <marker> is not empty (at most 60 s), send it <signal>, wait for it and
# print "exit=<status>". For driver tests that interrupt osprey in a given phase (the
# command must be osprey itself, or `exec` it, to receive the signal).
marker=$1 sig=$2
shift 2
"$@" &
pid=$!
i=0
while [ ! -s "$marker" ] && [ $i -lt 600 ]; do
  sleep 0.1
  i=$((i + 1))
done
[ -s "$marker" ] || echo "signal-at: $marker stayed empty"
kill "-$sig" "$pid"
wait "$pid"
echo "exit=$?"
