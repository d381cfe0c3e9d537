"""check_thread_time.py <stem> <fiber>: the fiber's samples, on-CPU and waiting together,
weigh no more than the run's wall time (a thread is never on a CPU and waiting at once).
Prints both."""
import json
import sys


def main():
    stem, fiber = sys.argv[1], sys.argv[2]
    summary = json.load(open(stem + ".profile.json", encoding="utf-8"))
    doc = json.load(open(stem + ".speedscope.json", encoding="utf-8"))
    profile = next(p for p in doc["profiles"] if p["name"] == fiber)
    weight = sum(profile["weights"])
    wall = summary["wallSeconds"]
    print(f"{fiber}: {weight:.3f}s of samples in {wall:.3f}s wall")
    if weight > wall + 0.01:
        sys.exit(f"{fiber} is on-CPU and waiting at once: {weight:.3f}s of samples in {wall:.3f}s")


main()
