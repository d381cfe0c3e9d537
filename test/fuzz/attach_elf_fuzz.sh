#!/usr/bin/env bash
# Fuzz driver/attach_elf.c (the ELF images --attach reads from another process) and the
# CFI walk over their .eh_frame (driver/attach_unwind.c, runtime/prof/prof_cfi.c) with
# libFuzzer + ASan + UBSan. Usage: test/fuzz/attach_elf_fuzz.sh [seconds]   (default 300)
# Seeds: the kept corpus, this machine's vDSO and the first pages of a few binaries; new
# interesting inputs are merged into test/fuzz/attach_elf_corpus/ (kept in git; ctest's
# driver_attach_elf_corpus replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-300}
out=build-fuzz
mkdir -p "$out" "$out/attach-elf-seeds" test/fuzz/attach_elf_corpus
clang-19 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=gnu17 \
  -D_GNU_SOURCE -Idriver -Iruntime/prof driver/attach_elf.c driver/attach_unwind.c \
  runtime/prof/prof_cfi.c test/fuzz/fuzz_attach_elf.c -o "$out/fuzz_attach_elf"
python3 - "$out/attach-elf-seeds" <<'PY'
import sys
out = sys.argv[1]
# the vDSO of this process, as --attach copies it
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[vdso]"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        with open("/proc/self/mem", "rb") as m:
            m.seek(lo)
            open(out + "/vdso", "wb").write(m.read(hi - lo))
for p in ("/bin/true", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"):
    try:
        open(out + "/" + p.replace("/", "_"), "wb").write(open(p, "rb").read(8192))
    except OSError:
        pass
PY
# a whole small image, section headers and .eh_frame included (a few KiB)
printf 'static int f(int x) { return x * 3; }\nvoid _start(void) { for (;;) f(1); }\n' > "$out/tiny.c"
clang-19 -O1 -nostdlib -static -fasynchronous-unwind-tables -Wl,--build-id -s "$out/tiny.c" \
  -o "$out/attach-elf-seeds/whole_tiny"
mkdir -p "$out/attach-elf-new"
(cd "$out" && ./fuzz_attach_elf -jobs=1 -workers=1 -max_total_time="$secs" -max_len=16384 \
  -timeout=10 attach-elf-new attach-elf-seeds ../test/fuzz/attach_elf_corpus)
"$out/fuzz_attach_elf" -merge=1 test/fuzz/attach_elf_corpus "$out/attach-elf-new" \
  "$out/attach-elf-seeds" >/dev/null 2>&1
echo "corpus: $(ls test/fuzz/attach_elf_corpus | wc -l) files"
