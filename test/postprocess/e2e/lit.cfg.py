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
import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts"))
import perf_counter  # noqa: E402

_fd = perf_counter.open_idle_task_clock()
if _fd is not None:
    os.close(_fd)
    config.available_features.add("perf-events")
