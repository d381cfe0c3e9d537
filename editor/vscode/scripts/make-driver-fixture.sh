#!/usr/bin/env bash
# Refreshes fixtures/driver/ with a real export pair written by the driver:
#   osprey <example> --profile   (run in a private temporary directory)
# Usage (from the repository root, after `make build`):
#   editor/vscode/scripts/make-driver-fixture.sh [build/bin/osprey] [examples/demo.osp]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
osprey=$(realpath "${1:-$root/build/bin/osprey}")
source=$(realpath "${2:-$root/examples/demo.osp}")
stem=$(basename "${source%.*}")
out="$root/editor/vscode/fixtures/driver"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/osprey-fixture-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && "$osprey" "$source" --profile </dev/null)
rm -rf "$out"
mkdir -p "$out"
cp "$tmp/$stem.speedscope.json" "$tmp/$stem.profile.json" "$out/"
echo "wrote $out/$stem.speedscope.json and $out/$stem.profile.json"
