# lit configuration for test/lit: driver behaviour and generated IR, checked with FileCheck.
import os

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
config.substitutions.append(("%not", os.path.join(config.llvm_tools_dir, "not")))
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TMPDIR", "HOME", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.pipefail = False
