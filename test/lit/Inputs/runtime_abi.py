#!/usr/bin/env python3
"""Check that the compiler's runtime declarations match runtime/core/osprey_rt.h.

usage: runtime_abi.py <osprey> <clang> <osprey_rt.h> <builtins.def> <program.osp>...

1. Every program is compiled with `osprey --emit-llvm`; every declaration of a runtime symbol
   (osp_*, osprey_ffi_*, fiber_set_deterministic_mode) is collected with its return type,
   parameter types and ABI attributes (zeroext/signext).
2. Every SYMBOL/ABI row of builtins.def is turned into the same shape, so rows no program
   happens to call are checked too.
3. A C file that includes osprey_rt.h and takes the address of each of those symbols is
   compiled with clang to IR; its declarations are what the C compiler says the ABI is.
Any difference, or a symbol the header does not declare, is one line on stderr and exit 1.
"""
import os
import re
import subprocess
import sys
import tempfile

RUNTIME = re.compile(r"^(osp_|osprey_ffi_|fiber_set_deterministic_mode$)")
DECL = re.compile(r"^declare\s+(.*?)\s*@([A-Za-z0-9_.$]+)\((.*)\)")
KEEP_ATTRS = {"zeroext", "signext"}
ABI_LETTER = {"i": "i64", "f": "double", "p": "ptr", "b": "zeroext i1", "r": "{ i64, i64 }",
              "w": "i64", "v": "void"}


def split_top(text):
    """Split a parameter list at commas outside braces."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{<(":
            depth += 1
        elif ch in "}>)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def norm_type(text):
    """A parameter or return: its type and the ABI attributes that matter, nothing else."""
    text = text.strip()
    m = re.search(r"\{[^}]*\}", text)
    if m:
        ty = re.sub(r"\s+", " ", m.group(0))
        rest = text[:m.start()] + text[m.end():]
    else:
        ty = None
        rest = text
    attrs = []
    for tok in rest.split():
        if tok in KEEP_ATTRS:
            attrs.append(tok)
        elif ty is None and re.fullmatch(r"i\d+|ptr|double|float|void", tok):
            ty = tok
    return " ".join(sorted(attrs) + [ty or "?"])


def parse_decls(ir):
    decls = {}
    for line in ir.splitlines():
        m = DECL.match(line)
        if not m or not RUNTIME.match(m.group(2)):
            continue
        ret = norm_type(m.group(1))
        params = tuple(norm_type(p) for p in split_top(m.group(3)) if p.strip() != "...")
        decls[m.group(2)] = (ret, params)
    return decls


def show(sig):
    return "%s (%s)" % (sig[0], ", ".join(sig[1]))


def table_rows(path):
    rows = {}
    row = re.compile(r'^BUILTIN\(\s*(\w+),\s*"([^"]*)",\s*(\d+),\s*[\w|]+,\s*(NULL|"[^"]*"),'
                     r'\s*(NULL|"[^"]*"),\s*(NULL|"[^"]*")\)')
    for line in open(path, encoding="utf-8"):
        m = row.match(line.strip())
        if not m or m.group(5) == "NULL":
            continue
        sym, abi = m.group(5).strip('"'), m.group(6).strip('"')
        ret, _, params = abi.partition(":")
        rows[sym] = (norm_type(ABI_LETTER[ret]), tuple(norm_type(ABI_LETTER[c]) for c in params))
    return rows


def main():
    osprey, clang, header, table, programs = (sys.argv[1], sys.argv[2], sys.argv[3],
                                              sys.argv[4], sys.argv[5:])
    emitted = {}  # symbol -> (signature, where)
    failures = 0
    for prog in programs:
        p = subprocess.run([osprey, prog, "--emit-llvm"], capture_output=True, text=True)
        if p.returncode != 0:
            continue  # compile-error programs declare nothing
        for sym, sig in parse_decls(p.stdout).items():
            if sym in emitted and emitted[sym][0] != sig:
                print("runtime-abi: %s declared two ways: %s in %s, %s in %s" %
                      (sym, show(emitted[sym][0]), emitted[sym][1], show(sig), prog),
                      file=sys.stderr)
                failures += 1
            emitted.setdefault(sym, (sig, os.path.basename(prog)))
    for sym, sig in table_rows(table).items():
        if sym in emitted and emitted[sym][0] != sig:
            print("runtime-abi: %s: builtins.def says %s, codegen emits %s" %
                  (sym, show(sig), show(emitted[sym][0])), file=sys.stderr)
            failures += 1
        emitted.setdefault(sym, (sig, "builtins.def"))
    htext = open(header, encoding="utf-8").read()
    known = [s for s in sorted(emitted) if re.search(r"\b%s\s*\(" % re.escape(s), htext)]
    for s in sorted(set(emitted) - set(known)):
        print("runtime-abi: %s (from %s) is not declared in %s" % (s, emitted[s][1], header),
              file=sys.stderr)
        failures += 1
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "abi.c")
        with open(c, "w") as fh:
            fh.write('#include "osprey_rt.h"\nvoid *osp_abi_refs[] = {\n')
            for s in known:
                fh.write("    (void *)&%s,\n" % s)
            fh.write("};\n")
        p = subprocess.run([clang, "-std=gnu17", "-O0", "-S", "-emit-llvm", "-I",
                            os.path.dirname(header), c, "-o", "-"], capture_output=True, text=True)
        if p.returncode != 0:
            print("runtime-abi: clang failed on osprey_rt.h:\n" + p.stderr, file=sys.stderr)
            return 1
        cdecls = parse_decls(p.stdout)
    for s in known:
        if s not in cdecls:
            print("runtime-abi: clang emitted no declaration of %s" % s, file=sys.stderr)
            failures += 1
        elif cdecls[s] != emitted[s][0]:
            print("runtime-abi: %s: osprey_rt.h is %s, the compiler uses %s (%s)" %
                  (s, show(cdecls[s]), show(emitted[s][0]), emitted[s][1]), file=sys.stderr)
            failures += 1
    print("runtime-abi: %d runtime functions checked, %d mismatches" % (len(known), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
