"""folded_share.py <file.folded> <stack> <min%>: the share of the folded file's samples
whose stack is <stack> or lies under it (frames separated by ';', root first). Prints the
share; exits 1 when it is below <min%>, listing the heaviest stacks."""
import sys


def main():
    path, want, floor = sys.argv[1], sys.argv[2], float(sys.argv[3])
    total = under = 0
    stacks = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            n = int(count)
            total += n
            stacks[stack] = stacks.get(stack, 0) + n
            if stack == want or stack.startswith(want + ";"):
                under += n
    share = 100.0 * under / total if total else 0.0
    print(f"{path}: {share:.1f}% of {total} samples under {want}")
    if share < floor:
        for stack, n in sorted(stacks.items(), key=lambda kv: -kv[1])[:5]:
            print(f"  {n} {stack}")
        sys.exit(1)


main()
