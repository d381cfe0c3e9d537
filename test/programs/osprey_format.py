"""lit test format for test/programs (see lit.cfg.py)."""
import os
import subprocess

import lit.formats
import lit.Test


class OspreyProgram(lit.formats.TestFormat):
    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig, localConfig):
        src = testSuite.getSourcePath(path_in_suite)
        for f in sorted(os.listdir(src)):
            if f.endswith(".osp"):
                yield lit.Test.Test(testSuite, path_in_suite + (f,), localConfig)

    def execute(self, test, litConfig):
        path = test.getSourcePath()
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
        exit_want, env_add, stderr_want, compile_err, stdin_lines = 0, {}, [], [], []
        for ln in lines:
            s = ln.strip()
            if s.startswith("// unsupported:"):
                what = s[len("// unsupported:"):].strip()
                if what == "sanitizer" and getattr(test.config, "osprey_sanitize", ""):
                    return lit.Test.UNSUPPORTED, "not run in a sanitizer build"
            if s.startswith("// exit:"):
                exit_want = int(s[len("// exit:"):].strip())
            elif s.startswith("// env:"):
                k, _, v = s[len("// env:"):].strip().partition("=")
                env_add[k] = v
            elif s.startswith("// stderr:"):
                stderr_want.append(s[len("// stderr:"):].strip())
            elif s.startswith("// compile-error:"):
                compile_err.append(s[len("// compile-error:"):].strip())
            elif s.startswith("// stdin:"):
                stdin_lines.append(s[len("// stdin:"):].strip())
        env = dict(os.environ)
        env.pop("OSPREY_TEST_FILTER", None)
        env.update(env_add)
        cmd = [test.config.osprey, path, "--run"]
        try:
            # stdin is the `// stdin:` lines (each ending in "\n"), else empty: a test
            # never reads the terminal lit was started from
            p = subprocess.run(cmd, capture_output=True, env=env, timeout=120,
                               cwd=os.path.dirname(path),
                               input="".join(l + "\n" for l in stdin_lines).encode())
        except subprocess.TimeoutExpired:
            return lit.Test.FAIL, "timed out after 120 s"
        out = p.stdout.decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace")
        report = "command: %s\nexit status: %d\n--- stdout ---\n%s--- stderr ---\n%s" % (
            " ".join(cmd), p.returncode, out, err)
        if compile_err:
            if p.returncode != 1:
                return lit.Test.FAIL, "expected a compile error (exit 1)\n" + report
            for want in compile_err:
                if want not in err:
                    return lit.Test.FAIL, "stderr lacks %r\n%s" % (want, report)
            return lit.Test.PASS, ""
        expected_path = path[:-4] + ".out"
        expected = ""
        if os.path.exists(expected_path):
            with open(expected_path, encoding="utf-8", errors="replace", newline="") as fh:
                expected = fh.read()
        if out != expected:
            import difflib
            diff = "".join(difflib.unified_diff(expected.splitlines(True), out.splitlines(True),
                                                "expected", "actual"))
            return lit.Test.FAIL, "stdout differs\n" + diff + "\n" + report
        if p.returncode != exit_want:
            return lit.Test.FAIL, "exit status %d, expected %d\n%s" % (p.returncode, exit_want, report)
        for want in stderr_want:
            if want not in err:
                return lit.Test.FAIL, "stderr lacks %r\n%s" % (want, report)
        return lit.Test.PASS, ""

