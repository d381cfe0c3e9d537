# Writes the raw files of postprocess-rate-note.test into argv[1].
import json, sys

def raw(name, n, weight_ns, engine):
    d = {"version": 1, "pid": 4242, "exe": "/w/" + name, "rate_hz": 997,
         "platform": "linux-x86_64", "start_unix_ns": 1700000000000000000,
         "end_unix_ns": 1700000000000000000 + n * weight_ns,
         "images": [{"path": "/w/" + name, "base": 93824992231424, "slide": 93824992231424,
                     "text": 93824992235520, "text_size": 8192, "arch": "x86_64"}],
         "threads": [{"fiber": 0, "label": "main", "tid": 4242}],
         "stacks": [[93824992235824, 93824992235941]],
         "samples": [[i * weight_ns, 0, 0, 0] for i in range(n)],
         "dropped": 0, "sample_weights_ns": [weight_ns] * n}
    if engine:
        d["engine"] = engine
    with open(f"{sys.argv[1]}/{name}.osprof.json", "w") as f:
        json.dump(d, f)

raw("timer", 100, 4000000, "cpu_timer")
raw("sampler", 100, 4000000, "sampler")
raw("met", 400, 1000000, "perf_event")
raw("short", 10, 4000000, "cpu_timer")
raw("unnamed", 100, 4000000, None)
