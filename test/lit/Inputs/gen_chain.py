"""Write a generated Osprey program to argv[2] (shape argv[1], size argv[3]).

Shapes (each prints something checkable):
  add N       let x = 1 + 1 + ... + 1 (N terms), print(x)
  pipe N      0 |> f |> f ... (N pipes), f(x) = x + 1
  method N    "a".trim().trim()... (N calls)
  nested N M  M parentheses around a chain of N terms, then `+ 1` N times more
  parens M    M parentheses around 1
  blocks M    M nested blocks around 1
"""
import sys

shape, out = sys.argv[1], sys.argv[2]
n = int(sys.argv[3])
if shape == "add":
    src = "let x = " + " + ".join(["1"] * n) + "\nprint(x)\n"
elif shape == "pipe":
    src = "fn f(x) = x + 1\nlet x = 0" + " |> f" * n + "\nprint(x)\n"
elif shape == "method":
    src = 'let s = " a "' + ".trim()" * n + "\nprint(s)\n"
elif shape == "nested":
    m = int(sys.argv[4])
    src = ("let x = " + "(" * m + " + ".join(["1"] * n) + ")" * m + " + 1" * n + "\nprint(x)\n")
elif shape == "parens":
    src = "let x = " + "(" * n + "1" + ")" * n + "\nprint(x)\n"
elif shape == "blocks":
    src = "let x = " + "{ " * n + "1" + " }" * n + "\nprint(x)\n"
else:
    sys.exit("unknown shape " + shape)
with open(out, "w") as fh:
    fh.write(src)
