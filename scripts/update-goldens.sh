#!/usr/bin/env bash
# Write the diagnostic goldens of test/programs: for every program that must not compile
# (it has `// compile-error:` directives, or already a <name>.err), run the built driver
# exactly as the lit_programs_errors test does and store its stderr as <name>.err.
#
# Usage: scripts/update-goldens.sh [-B <build dir>] [<name>...]
#   <name>     a program of test/programs, with or without .osp (default: all of them)
#   -B <dir>   the build whose bin/osprey to use (default: build)
#
# A golden is written only when the compile fails as a compile error should (exit 1,
# nothing on stdout, every `// compile-error:` text present); otherwise the program is
# reported and the script exits 1, leaving its golden as it was. Review the diff
# (`git diff test/programs`) before committing: the golden is the expected output.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ "${1:-}" = "-B" ]; then
  [ $# -ge 2 ] || { echo "usage: $0 [-B <build dir>] [<name>...]" >&2; exit 2; }
  build=$2
  shift 2
fi
osprey="$build/bin/osprey"
[ -x "$osprey" ] || { echo "update-goldens: error: $osprey: not built (make build)" >&2; exit 1; }
# osprey_format.py is a lit format: lit comes with LLVM 19 (llvm-19-tools)
lit_dir="$(llvm-config-19 --prefix)/build/utils/lit"
exec env PYTHONPATH="$lit_dir${PYTHONPATH:+:$PYTHONPATH}" python3 - "$(realpath "$osprey")" "$@" <<'PY'
import os
import subprocess
import sys

sys.path.insert(0, "test/programs")
import osprey_format as fmt  # noqa: E402

osprey, names = sys.argv[1], sys.argv[2:]
src = os.path.abspath("test/programs")
if names:
    paths = [os.path.join(src, n if n.endswith(".osp") else n + ".osp") for n in names]
else:
    paths = [os.path.join(src, f) for f in sorted(os.listdir(src)) if f.endswith(".osp")]
bad = 0
for path in paths:
    rel = os.path.relpath(path)
    if not os.path.exists(path):
        print("update-goldens: error: %s: no such program" % rel, file=sys.stderr)
        bad += 1
        continue
    d = fmt.read_directives(path)
    if fmt.classify(path, d) != "compile-errors":
        if names:
            print("update-goldens: error: %s: has no `// compile-error:` directive" % rel,
                  file=sys.stderr)
            bad += 1
        continue
    cmd, cwd = fmt.compile_command(osprey, path)
    p = subprocess.run(cmd, cwd=cwd, env=fmt.program_env(d), capture_output=True, timeout=120,
                       input="".join(l + "\n" for l in d["stdin"]).encode())
    err = p.stderr.decode("utf-8", "replace")
    why = None
    if p.returncode != 1:
        why = "exit status %d, not a compile error (1)" % p.returncode
    elif p.stdout:
        why = "printed to stdout"
    else:
        missing = [w for w in d["compile_error"] if w not in err]
        if missing:
            why = "stderr lacks the compile-error text %r" % missing[0]
    if why:
        print("update-goldens: error: %s: %s; golden not written" % (rel, why), file=sys.stderr)
        bad += 1
        continue
    golden = path[:-4] + ".err"
    old = None
    if os.path.exists(golden):
        with open(golden, encoding="utf-8", errors="replace", newline="") as fh:
            old = fh.read()
    if old == err:
        continue
    tmp = "%s.tmp-%d" % (golden, os.getpid())
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(err)
    os.replace(tmp, golden)
    print("%s %s" % ("updated" if old is not None else "wrote", os.path.relpath(golden)))
sys.exit(1 if bad else 0)
PY
