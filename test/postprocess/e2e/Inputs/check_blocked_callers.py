"""check_blocked_callers.py <file.speedscope.json> <blocked leaf> <caller>...: every sample
of the main profile whose stack holds <blocked leaf> also holds each <caller>, and there
is at least one such sample. Prints the stacks that miss one."""
import json
import sys


def main():
    path, leaf, callers = sys.argv[1], sys.argv[2], sys.argv[3:]
    doc = json.load(open(path, encoding="utf-8"))
    names = [f["name"] for f in doc["shared"]["frames"]]
    main_profile = next(p for p in doc["profiles"] if p["name"] == "main")
    seen = bad = 0
    for stack in main_profile["samples"]:
        frames = [names[i] for i in stack]
        if leaf not in frames:
            continue
        seen += 1
        missing = [c for c in callers if c not in frames]
        if missing:
            bad += 1
            if bad <= 3:
                print(f"missing {missing}: {';'.join(frames)}")
    print(f"{path}: {seen} samples in {leaf}, {bad} without its callers")
    if seen == 0 or bad:
        sys.exit(1)


main()
