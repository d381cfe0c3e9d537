#!/usr/bin/env bash
# `cmake --install` (what `make install PREFIX=...` runs) into a private temporary prefix,
# then use only the installed tree: the driver compiles and runs a program (it finds
# <prefix>/lib/libosprey_rt.a next to <prefix>/bin) and the public headers compile from
# <prefix>/include/osprey.
# Usage: install_test.sh <build dir> <source dir>
set -euo pipefail
build=$1
src=$2
prefix=$(mktemp -d "${TMPDIR:-/tmp}/osprey-install-XXXXXX")
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/osprey lib/libosprey_rt.a lib/libosprey_prof.so include/osprey/osprey_rt.h \
         include/osprey/osp_prof.h; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
[ -x "$prefix/bin/osprey" ] || fail "bin/osprey is not executable"

# The installed driver, from a directory that is neither the build nor the source tree.
work="$prefix/work"
mkdir "$work"
cat > "$work/hello.osp" <<'OSP'
fn greet(who) = "hello, " + who
print(greet("installed"))
OSP
out=$(cd "$work" && "$prefix/bin/osprey" hello.osp --run)
[ "$out" = "hello, installed" ] || fail "osprey --run printed '$out', expected 'hello, installed'"
(cd "$work" && "$prefix/bin/osprey" hello.osp -o hello)
[ "$("$work/hello")" = "hello, installed" ] || fail "the built executable printed the wrong text"

# The headers are self-contained C under include/osprey/.
printf '#include <osprey/osprey_rt.h>\n#include <osprey/osp_prof.h>\nint main(void) { return 0; }\n' \
  > "$work/headers.c"
"${CC:-cc}" -std=c17 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$work/headers.c" \
  || fail "the installed headers do not compile"
echo "install_test: ok ($prefix)"
