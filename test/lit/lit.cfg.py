# lit configuration for test/lit: driver behaviour and generated IR, checked with FileCheck.
import os
import sys

import lit.formats

config.name = "osprey-lit"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".osp", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
# longer names first: lit substitutes in order
config.substitutions.append(("%osprey_libdir", os.path.join(os.path.dirname(os.path.dirname(config.osprey)), "lib")))
config.substitutions.append(("%osprey", config.osprey))
config.substitutions.append(("%FileCheck", config.filecheck))
config.substitutions.append(("%python", sys.executable))
# the C compiler of test programs that are not Osprey (attach-cfi.test)
config.substitutions.append(("%cc", "cc"))
config.substitutions.append(("%not", os.path.join(config.llvm_tools_dir, "not")))
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TMPDIR", "HOME", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# `a | FileCheck` fails when `a` fails: a program that prints the expected text and then
# exits 1 does not pass. A RUN line that expects a failure says so with `%not`.
config.pipefail = True


def _can_make_devices():
    """True when a character device made with mknod in a scratch directory can be opened
    (root, and a file system that allows devices): tests of outputs that are devices use a
    private null device (1:3) there, never the real /dev/null."""
    import stat, tempfile
    try:
        with tempfile.TemporaryDirectory(dir=config.test_exec_root) as d:
            p = os.path.join(d, "null")
            os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            os.close(os.open(p, os.O_WRONLY))
            return True
    except OSError:
        return False


if _can_make_devices():
    config.available_features.add("mknod")


def _has_dev_full():
    """True when /dev/full is the character device that fails every write with ENOSPC.
    Tests only redirect a program's stdout to it (the shell opens it for writing); no
    test ever writes a file at that path."""
    import stat
    try:
        return stat.S_ISCHR(os.stat("/dev/full").st_mode)
    except OSError:
        return False


if _has_dev_full():
    config.available_features.add("dev-full")

# A sanitizer build (OSPREY_SANITIZE): its runtime library is instrumented, so thread start
# and exit cost more CPU and a thread that only sleeps can collect an on-CPU sample there.
if getattr(config, "sanitize", ""):
    config.available_features.add("sanitizer")
