#!/usr/bin/env bash
# ospprof-cli end to end: five files written atomically as a set, report on stdout without ESC
# when stdout is not a terminal, one-line error and exit 1 on a bad raw file, and a good
# export left untouched when a later run fails. Usage: cli_test.sh <ospprof-cli> <golden-dir>
set -euo pipefail
cli=$1 golden=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$cli" "$golden/demo.raw.json" -o out/demo --program demo.osp >report.txt 2>err.txt \
  && { echo "expected failure: missing output directory"; exit 1; } || true
grep -q "cannot write out/demo.speedscope.json: No such file or directory" err.txt
mkdir out
"$cli" "$golden/demo.raw.json" -o out/demo --program demo.osp >report.txt
for f in speedscope.json cpuprofile folded profile.json svg; do test -s "out/demo.$f"; done
if grep -q $'\x1b' report.txt; then echo "ESC in a non-TTY report"; exit 1; fi
grep -q '^profile: out/demo.speedscope.json · out/demo.cpuprofile · out/demo.folded · out/demo.profile.json · out/demo.svg$' report.txt
test "$(ls -A out | wc -l)" -eq 5   # no temporaries left behind
cp out/demo.folded good.folded
printf '{"version":1,' > bad.json
if "$cli" bad.json -o out/demo 2>err.txt >/dev/null; then echo "bad file accepted"; exit 1; fi
test "$(cat err.txt)" = "ospprof-cli: error: bad.json: not valid JSON at byte 13"
cmp out/demo.folded good.folded
# valid JSON that is not an object is named as such, not as broken JSON
printf '[]\n' > array.json
if "$cli" array.json -o out/demo 2>err.txt >/dev/null; then echo "array accepted"; exit 1; fi
test "$(cat err.txt)" = "ospprof-cli: error: array.json: top level is not a JSON object"
{ yes || true; } | head -c 100000 > yes.json
if "$cli" yes.json -o out/demo 2>err.txt >/dev/null; then echo "yes accepted"; exit 1; fi
test "$(cat err.txt)" = "ospprof-cli: error: yes.json: not valid JSON at byte 0"
cmp out/demo.folded good.folded
echo "cli: ok"
