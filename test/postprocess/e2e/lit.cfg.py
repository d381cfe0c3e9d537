# lit configuration for test/postprocess/e2e: `osprey --profile` and `osprey --postprocess`
# end to end (driver, profiler runtime, post-processor), checked with FileCheck and
# Inputs/check_profile.py.
import os

import lit.formats

config.name = "osprey-profile-e2e"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
# `a | FileCheck` fails when `a` fails: a program that prints the right text and exits 1
# does not pass.
config.pipefail = True
config.substitutions.append(("%osprey", config.osprey))
config.substitutions.append(("%FileCheck", config.filecheck))
# A RUN line that expects a failure says so with `%not` (as in test/lit).
config.substitutions.append(("%not", os.path.join(config.llvm_tools_dir, "not")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%golden", config.golden))
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TMPDIR", "HOME", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%cc", getattr(config, "cc", "cc")))

# A sanitizer build: the preload library is instrumented and cannot be preloaded into an
# uninstrumented program (--record tests are unsupported there).
if getattr(config, "sanitize", ""):
    config.available_features.add("sanitizer")


# Unprivileged users for the --attach permission refusal (setpriv from util-linux).
import shutil
if os.geteuid() == 0 and shutil.which("setpriv"):
    config.available_features.add("root-setpriv")

# x86-64 hosts (tests with x86-64 assembly inputs).
import platform
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("x86_64")

# perf_event_open allowed for a process's own threads (perf_event_paranoid <= 2, no seccomp
# filter): a disabled, user-only task-clock counter on this process, closed at once.
def _perf_events_allowed():
    import ctypes
    import struct
    numbers = {"x86_64": 298, "AMD64": 298, "aarch64": 241}
    nr = numbers.get(platform.machine())
    if nr is None:
        return False
    # struct perf_event_attr (PERF_ATTR_SIZE_VER5, 112 bytes): type SOFTWARE (1), config
    # TASK_CLOCK (1); flags word at byte 40: disabled (bit 0), exclude_kernel (bit 5),
    # exclude_hv (bit 6).
    attr = bytearray(112)
    struct.pack_into("<IIQ", attr, 0, 1, 112, 1)
    struct.pack_into("<Q", attr, 40, (1 << 0) | (1 << 5) | (1 << 6))
    buf = ctypes.create_string_buffer(bytes(attr), len(attr))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(nr), buf, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1),
                      ctypes.c_ulong(0))
    if fd < 0:
        return False
    os.close(fd)
    return True


if _perf_events_allowed():
    config.available_features.add("perf-events")
