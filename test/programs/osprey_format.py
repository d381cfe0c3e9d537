"""lit test format for test/programs (see lit.cfg.py for the directives).

Two kinds of program live here:

* A program that compiles and runs: `osprey <name>.osp --run`; stdout must equal
  `<name>.out` byte for byte (absent: empty), the exit status the `// exit:` directive.
* A program that must not compile (it has `// compile-error:` directives or a
  `<name>.err` golden): `osprey <name>.osp --run` from this directory must exit 1 with
  nothing on stdout and stderr equal to `<name>.err` byte for byte — every diagnostic,
  in order, so an extra or cascading one fails the test. Each `// compile-error:` text
  must also appear (it states the intent; the golden is the full list). A program
  without its golden fails with the command that creates it.

The lit parameter `osprey_programs` selects one kind (`compile-errors` or `runs`); without
it both run. Shared with scripts/update-goldens.sh through `classify` and `compile_command`.
"""
import difflib
import os
import subprocess

import lit.formats
import lit.Test

KINDS = ("compile-errors", "runs")


def read_directives(path):
    """The directives of the program at `path`, as a dict of lists/values."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().splitlines()
    d = {"exit": 0, "env": {}, "stderr": [], "compile_error": [], "stdin": [],
         "unsupported": [], "network": None}
    for ln in lines:
        s = ln.strip()
        if s.startswith("// unsupported:"):
            d["unsupported"].append(s[len("// unsupported:"):].strip())
        elif s.startswith("// exit:"):
            d["exit"] = int(s[len("// exit:"):].strip())
        elif s.startswith("// env:"):
            k, _, v = s[len("// env:"):].strip().partition("=")
            d["env"][k] = v
        elif s.startswith("// stderr:"):
            d["stderr"].append(s[len("// stderr:"):].strip())
        elif s.startswith("// compile-error:"):
            d["compile_error"].append(s[len("// compile-error:"):].strip())
        elif s.startswith("// stdin:"):
            d["stdin"].append(s[len("// stdin:"):].strip())
        elif s.startswith("// network:"):
            d["network"] = s[len("// network:"):].strip()
    return d


def classify(path, directives):
    """`compile-errors` for a program that must not compile, else `runs`."""
    if directives["compile_error"] or os.path.exists(path[:-4] + ".err"):
        return "compile-errors"
    return "runs"


def compile_command(osprey, path):
    """argv and cwd of a compile-error program's run: the source by its bare name from its
    own directory, so the diagnostics (and the golden) name `<name>.osp`, not a path."""
    return [osprey, os.path.basename(path), "--run"], os.path.dirname(path)


def program_env(directives):
    env = dict(os.environ)
    env.pop("OSPREY_TEST_FILTER", None)
    env.pop("NO_COLOR", None)
    env.update(directives["env"])
    return env


_PRIVATE_NETWORK = None


def private_network_prefix():
    """argv prefix that runs a command in a new network namespace (of a new user namespace,
    so no privilege is needed) with only its own loopback interface up, or [] when this
    machine does not allow unprivileged namespaces (probed once). A program in it can bind
    any port without meeting another process, and nothing it leaves listening outlives it."""
    global _PRIVATE_NETWORK
    if _PRIVATE_NETWORK is None:
        prefix = ["unshare", "--user", "--map-root-user", "--net", "--", "sh", "-c",
                  'ip link set lo up && exec "$@"', "sh"]
        try:
            ok = subprocess.run(prefix + ["true"], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        _PRIVATE_NETWORK = prefix if ok else []
    return _PRIVATE_NETWORK


def _read(path):
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        return fh.read()


def _diff(expected, actual, what):
    return "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                        "expected " + what, "actual " + what))


class OspreyProgram(lit.formats.TestFormat):
    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig, localConfig):
        kind = litConfig.params.get("osprey_programs")
        if kind is not None and kind not in KINDS:
            litConfig.fatal("osprey_programs=%s: expected one of %s" % (kind, ", ".join(KINDS)))
        src = testSuite.getSourcePath(path_in_suite)
        for f in sorted(os.listdir(src)):
            if not f.endswith(".osp"):
                continue
            path = os.path.join(src, f)
            if kind is None or classify(path, read_directives(path)) == kind:
                yield lit.Test.Test(testSuite, path_in_suite + (f,), localConfig)

    def execute(self, test, litConfig):
        path = test.getSourcePath()
        d = read_directives(path)
        if "sanitizer" in d["unsupported"] and getattr(test.config, "sanitize", ""):
            return lit.Test.UNSUPPORTED, "not run in a sanitizer build"
        if classify(path, d) == "compile-errors":
            return self._compile_error(test, path, d)
        return self._run(test, path, d)

    @staticmethod
    def _spawn(cmd, cwd, d):
        # stdin is the `// stdin:` lines (each ending in "\n"), else empty: a test never
        # reads the terminal lit was started from
        return subprocess.run(cmd, capture_output=True, env=program_env(d), timeout=120, cwd=cwd,
                              input="".join(l + "\n" for l in d["stdin"]).encode())

    @staticmethod
    def _report(cmd, p):
        return "command: %s\nexit status: %d\n--- stdout ---\n%s--- stderr ---\n%s" % (
            " ".join(cmd), p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))

    def _compile_error(self, test, path, d):
        name = os.path.basename(path)[:-4]
        golden = path[:-4] + ".err"
        if os.path.exists(path[:-4] + ".out"):
            return lit.Test.FAIL, ("%s.osp must not compile but has %s.out: remove one"
                                   % (name, name))
        if not os.path.exists(golden):
            return lit.Test.FAIL, (
                "no golden test/programs/%s.err (the program's full, exact diagnostics): "
                "create it with `scripts/update-goldens.sh %s`, then review it" % (name, name))
        cmd, cwd = compile_command(test.config.osprey, path)
        try:
            p = self._spawn(cmd, cwd, d)
        except subprocess.TimeoutExpired:
            return lit.Test.FAIL, "timed out after 120 s"
        report = self._report(cmd, p)
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode != 1:
            return lit.Test.FAIL, "expected a compile error (exit 1)\n" + report
        if p.stdout:
            return lit.Test.FAIL, "a compile error printed to stdout\n" + report
        expected = _read(golden)
        if err != expected:
            return lit.Test.FAIL, ("diagnostics differ from %s.err "
                                   "(scripts/update-goldens.sh %s rewrites it)\n%s\n%s"
                                   % (name, name, _diff(expected, err, "stderr"), report))
        for want in d["compile_error"]:
            if want not in err:
                return lit.Test.FAIL, "stderr lacks the compile-error text %r\n%s" % (want, report)
        return lit.Test.PASS, ""

    def _run(self, test, path, d):
        cmd = [test.config.osprey, path, "--run"]
        if d["network"] == "private":
            cmd = private_network_prefix() + cmd
        elif d["network"] is not None:
            return lit.Test.FAIL, "unknown `// network: %s` (expected `private`)" % d["network"]
        try:
            p = self._spawn(cmd, os.path.dirname(path), d)
        except subprocess.TimeoutExpired:
            return lit.Test.FAIL, "timed out after 120 s"
        report = self._report(cmd, p)
        out = p.stdout.decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace")
        expected_path = path[:-4] + ".out"
        expected = _read(expected_path) if os.path.exists(expected_path) else ""
        if out != expected:
            return lit.Test.FAIL, "stdout differs\n" + _diff(expected, out, "stdout") + "\n" + report
        if p.returncode != d["exit"]:
            return lit.Test.FAIL, "exit status %d, expected %d\n%s" % (p.returncode, d["exit"],
                                                                       report)
        for want in d["stderr"]:
            if want not in err:
                return lit.Test.FAIL, "stderr lacks %r\n%s" % (want, report)
        return lit.Test.PASS, ""
