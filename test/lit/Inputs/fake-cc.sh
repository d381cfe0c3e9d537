#!/bin/sh
# A stand-in link compiler for driver tests: writes a shell script as the "executable".
# FAKE_PROGRAM holds the script body (e.g. `exit 42`, `kill -TERM $$`).
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
printf '#!/bin/sh\n%s\n' "$FAKE_PROGRAM" > "$out"
chmod +x "$out"
