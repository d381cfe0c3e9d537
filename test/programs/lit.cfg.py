# lit configuration for test/programs.
#
# Every `<name>.osp` here is compiled and run with `osprey <name>.osp --run`; its stdout
# must equal `<name>.out` byte for byte (an absent .out means empty stdout) and its exit
# status must equal the `// exit: N` directive (default 0). Further directives, each on
# a line of its own near the top of the program:
#   // env: NAME=value         extra environment variable for the run (repeatable)
#   // stderr: text            stderr must contain this text (repeatable)
#   // compile-error: text     the program must not compile: exit 1, stderr equal to the
#                              golden <name>.err (every diagnostic, exact) and containing
#                              this text; `scripts/update-goldens.sh <name>` writes the
#                              golden (repeatable)
#   // stdin: text             a line of the program's stdin (repeatable; default: empty)
#   // unsupported: sanitizer  not run in sanitizer builds (their runtime owns fatal
#                              signals: a crash is reported by ASan, not by the runtime)
#   // network: private        run in a network namespace of its own with only loopback up
#                              (`unshare --user --net`), so a fixed port is always free
#                              and no listener outlives the run; where the machine allows
#                              no unprivileged namespaces the program runs as usual
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import osprey_format  # noqa: E402

config.name = "osprey-programs"
config.test_source_root = os.path.dirname(__file__)


config.test_format = osprey_format.OspreyProgram()
config.excludes = ["osprey_format.py"]
