#!/usr/bin/env python3
"""Fold `perf script` output into collapsed stacks (one line per distinct stack,
`comm;root;...;leaf weight`), for bench/accuracy.py.

    perf script -F comm,tid,period,ip,sym | perf_fold.py [--skip-comm env] [--samples]

Each sample in `perf script` output is a header line (comm, tid, period) followed by
one line per call-chain entry (`<hex ip> <symbol>`), leaf first, and a blank line.
The weight of a stack is the sum of the samples' periods (for the cpu-clock event:
nanoseconds of CPU time), or, with --samples, the number of samples. Symbols perf could
not name are written `[unknown]`; `;` and whitespace inside a name become `_`.
"""
import sys


def parse(lines, skip_comms=()):
    """Yield (comm, tid, period, frames leaf-first) for each sample."""
    head = None
    frames = []
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            if head is not None:
                yield head + (frames,)
            head, frames = None, []
            continue
        if not line[0].isspace():
            if head is not None:
                yield head + (frames,)
            frames = []
            # "<comm> <tid> <period>" — comm may contain spaces, so split from the right.
            parts = line.rsplit(None, 2)
            if len(parts) != 3:
                head = None
                continue
            comm, tid, period = parts
            head = (comm, int(tid.split("/")[-1]), int(period))
            if comm in skip_comms:
                head = None
            continue
        if head is None:
            continue
        parts = line.split(None, 1)
        sym = parts[1] if len(parts) > 1 else "[unknown]"
        # perf appends "+0x<off>" with symoff, and " (<dso>)" with the dso field.
        if sym.endswith(")") and " (" in sym:
            sym = sym[: sym.rindex(" (")]
        frames.append(sym or "[unknown]")
    if head is not None:
        yield head + (frames,)


def clean(name):
    return "".join("_" if c == ";" or c.isspace() else c for c in name) or "[unknown]"


def fold(samples, by_samples=False):
    """{folded stack text: weight} from parse() output."""
    out = {}
    for comm, _tid, period, frames in samples:
        key = ";".join([clean(comm)] + [clean(f) for f in reversed(frames)])
        out[key] = out.get(key, 0) + (1 if by_samples else period)
    return out


def main(argv):
    skip = []
    by_samples = False
    i = 1
    while i < len(argv):
        if argv[i] == "--skip-comm" and i + 1 < len(argv):
            skip.append(argv[i + 1])
            i += 2
        elif argv[i] == "--samples":
            by_samples = True
            i += 1
        else:
            sys.exit(__doc__)
    folded = fold(parse(sys.stdin, tuple(skip)), by_samples)
    for k in sorted(folded):
        sys.stdout.write(f"{k} {folded[k]}\n")


if __name__ == "__main__":
    main(sys.argv)
