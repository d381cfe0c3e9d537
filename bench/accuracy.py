#!/usr/bin/env python3
"""Accuracy and overhead of our profiler, side by side with perf and gperftools, on the
same binaries in the same run (issue 6). Driven by bench/accuracy.sh; see there for the
environment variables. Prints one table and writes it, with the machine's description and
the truth it was measured against, to bench/results/accuracy.md -- or, when any setting
differs from the defaults (ONLY, REPS, ...), to <BUILD>/bench/accuracy.md, so a partial
run never replaces the committed table.

Workloads (each in C, bench/accuracy/work.c, and in Osprey, bench/accuracy/workloads_osp.py):
  ratio-1/2/4/16  burn60/burn30/burn10 in a 60/30/10 ratio of iterations, on 1..16 threads
  mixed           2 computing threads + 2 sleeping threads + a waiting main thread
  deep            the same rounds run 200 frames below main (stacks are cut at 128)
  tiny            tinyA/tinyB/tinyC, a few instructions each, called 6:3:1 per iteration

Truth (measured, never assumed):
  burn functions  each function's part timed alone on the same binary (CPU time of runs
                  doing only burn60's, only burn30's, only burn10's part of every round,
                  minus an empty run; medians of interleaved repeats)
  tiny functions  marginal CPU time: runs with 10 more calls of tinyA (of tinyB, of
                  tinyC) per iteration take T_X, the plain run T; one call of X costs
                  (T_X - T) / 10 per iteration, so X's share is calls_X * (T_X - T) / 10 / T
                  (the three shares scaled down together if they exceed 100 % by noise).
                  The variants differ from the plain program by exactly those 10 calls
                  (work.c's tiny_driver_X; workloads_osp.py's tinyDriverN/A/B/C).
                  Callgrind's self instruction counts inside the driver are shown beside
                  it, for reference only: instructions are not time.
  waiting share   from bench/accuracy/measure.c in the same run: wall time the program's
                  threads spent in sleeps, joins and condition waits, against that plus
                  the CPU time of the process (minus our sampler thread's)

Profilers (997 Hz each; the harness holds a disabled perf counter for the whole bench, as
`osprey --profile` and `--record` do during a run, so no run pays the kernel's one-time
switch-on of its perf hooks):
  perf   perf record -F 997 --call-graph fp; perf script folded by accuracy/perf_fold.py;
         weights are the cpu-clock periods (ns of CPU)
  gperf  gperftools' libprofiler.so preloaded, CPUPROFILE_FREQUENCY=997; google-pprof --text
  ours   C: libosprey_prof.so preloaded; Osprey: the binary `osprey --build --profile`
         makes, run with OSPREY_PROFILE as `osprey --profile` runs it; both then through
         `osprey --postprocess <raw> --binary <exe>`; numbers from <stem>.profile.json (and
         the speedscope weights for the waiting share)
"""
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "accuracy"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import perf_counter  # noqa: E402
import perf_fold  # noqa: E402
import workloads_osp  # noqa: E402

HZ = 997
BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(ROOT, "build")))
DEFAULTS = {"REPS": "3", "OVERHEAD_REPS": "7", "SECONDS_PER_RUN": "1.0", "TRUTH_REPS": "3", "ONLY": ""}
REPS = int(os.environ.get("REPS", DEFAULTS["REPS"]))
OVERHEAD_REPS = int(os.environ.get("OVERHEAD_REPS", DEFAULTS["OVERHEAD_REPS"]))  # for ratio-1
SECONDS = float(os.environ.get("SECONDS_PER_RUN", DEFAULTS["SECONDS_PER_RUN"]))
TRUTH_REPS = int(os.environ.get("TRUTH_REPS", DEFAULTS["TRUTH_REPS"]))
ONLY = os.environ.get("ONLY", "")  # comma-separated workload names, for development
# Only a run with the default settings replaces the committed table; any other run (a
# subset, fewer rounds, shorter runs) writes its table under the build directory.
NON_DEFAULT = ([k for k in ("REPS", "OVERHEAD_REPS", "SECONDS_PER_RUN", "TRUTH_REPS")
                if float(os.environ.get(k, DEFAULTS[k])) != float(DEFAULTS[k])] + (["ONLY"] if ONLY else []))
OSPREY = os.path.join(BUILD, "bin", "osprey")
PRELOAD_OURS = os.path.join(BUILD, "lib", "libosprey_prof.so")
GPERF_LIB = next((p for p in ("/usr/lib/x86_64-linux-gnu/libprofiler.so.0",
                              "/usr/lib/aarch64-linux-gnu/libprofiler.so.0",
                              "/usr/lib/x86_64-linux-gnu/libprofiler.so") if os.path.exists(p)), None)
PPROF = shutil.which("google-pprof") or shutil.which("pprof")
RESULTS = os.path.join(HERE, "results") if not NON_DEFAULT else os.path.join(BUILD, "bench")
BURN = ("burn60", "burn30", "burn10")
TINY = ("tinyA", "tinyB", "tinyC")
MODES = ("plain", "ours", "perf", "gperf")
NAMES = {"ours": "ours", "perf": "perf", "gperf": "gperftools"}
CHECK = []  # (clock.c's RUSAGE_SELF CPU, wait4's CPU) of every run but perf's

BASE_ENV = {k: v for k, v in os.environ.items()
            if not k.startswith("OSPREY_PROFILE") and k not in ("LD_PRELOAD", "CPUPROFILE", "OSPREY_TEST_FILTER")}
BASE_ENV["NO_COLOR"] = "1"


def die(msg):
    sys.exit(f"accuracy: {msg}")


def run(argv, env=None, check=True, **kw):
    p = subprocess.run(argv, env=env if env is not None else BASE_ENV, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, **kw)
    if check and p.returncode != 0:
        die(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return p


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


# ---- tools and binaries ----------------------------------------------------------------

def perf_works():
    if shutil.which("perf") is None:
        return False
    p = subprocess.run(["perf", "record", "-q", "-F", str(HZ), "--call-graph", "fp", "-o", "/dev/null",
                        "--", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.returncode == 0


def build(work):
    cflags = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]
    exe = os.path.join(work, "work")
    run(["clang-19", *cflags, os.path.join(HERE, "accuracy", "work.c"), "-o", exe, "-lpthread"])
    shim = os.path.join(work, "libbench_measure.so")
    run(["clang-19", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
         os.path.join(HERE, "accuracy", "measure.c"), "-o", shim, "-ldl"])
    clock = os.path.join(work, "libbench_clock.so")
    run(["clang-19", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
         os.path.join(HERE, "accuracy", "clock.c"), "-o", clock])
    return exe, (shim, clock)


def build_osprey(work, **params):
    src = os.path.join(work, "workloads.osp")
    with open(src, "w") as f:
        f.write(workloads_osp.source(**params))
    exe = os.path.join(work, "workloads")
    # Exactly the build `osprey <file> --profile` runs: -O2, DWARF, frame pointers.
    run([OSPREY, src, "--build", "--profile", "-o", exe])
    return src, exe


# ---- one run ----------------------------------------------------------------------------

class Ctx:
    def __init__(self, work, shims, perf_ok, gperf_ok):
        self.work, self.perf_ok, self.gperf_ok = work, perf_ok, gperf_ok
        self.shim, self.clock = shims
        self.seq = 0


def read_measure(path):
    with open(path) as f:
        m = dict(kv.split("=") for kv in f.read().split())
    return {k: int(v) for k, v in m.items()}


def run_once(ctx, wl, mode):
    """Run workload `wl` under `mode`; return a dict of measurements and the profile paths."""
    ctx.seq += 1
    tag = os.path.join(ctx.work, f"r{ctx.seq}")
    meas, clk = tag + ".measure", tag + ".clock"
    env = dict(BASE_ENV, OSPREY_BENCH_MEASURE=meas, OSPREY_BENCH_CLOCK=clk, **wl.get("env", {}))
    argv = list(wl["argv"])
    # measure.c first, so the program's own calls reach it directly; clock.c last, so its
    # window holds a preloaded profiler's start-up, stop and file write (see clock.c).
    preload = [ctx.shim]
    res = {"mode": mode}
    if mode == "ours":
        env["OSPREY_PROFILE"] = tag + ".osprof.json"
        env["OSPREY_PROFILE_HZ"] = str(HZ)
        if wl["lang"] == "C":
            preload.append(PRELOAD_OURS)
    elif mode == "gperf":
        env["CPUPROFILE"] = tag + ".gperf"
        env["CPUPROFILE_FREQUENCY"] = str(HZ)
        preload.append(GPERF_LIB)
    preload.append(ctx.clock)
    if mode == "perf":
        argv = ["perf", "record", "-q", "-F", str(HZ), "--call-graph", "fp", "-o", tag + ".perf",
                "--", "env", "LD_PRELOAD=" + " ".join(preload)] + argv
    else:
        env["LD_PRELOAD"] = " ".join(preload)
    err = tag + ".stderr"
    with open(err, "w") as ef:
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=ef)
        _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        with open(err) as ef:
            die(f"{wl['name']} ({mode}) failed with status {status}: {ef.read().strip()[-400:]}")
    m = read_measure(meas)
    m.update(read_measure(clk))
    res.update(wall=m["wall_ns"] / 1e9, cpu=(m["utime_ns"] + m["stime_ns"]) / 1e9,
               blocked=m["blocked_ns"] / 1e9, sampler_cpu=m["sampler_cpu_ns"] / 1e9, tag=tag,
               # The kernel's account of the child from wait4 (for perf runs: perf and the
               # program together); cross-checks the library's RUSAGE_SELF.
               wait4_cpu=None if mode == "perf" else ru.ru_utime + ru.ru_stime)
    if mode == "ours":
        # The profiler's own CPU (sampler thread, start-up, stop and file write), as the raw
        # profile accounts for it: the shim sees the sampler thread's CPU only when it
        # sleeps in a call the shim wraps, which the kernel-timed engines' sampler does not.
        with open(tag + ".osprof.json") as f:
            own = json.load(f).get("profiler_cpu_ns", 0) / 1e9
        res["sampler_cpu"] = max(res["sampler_cpu"], own)
    CHECK.append((res["cpu"], res["wait4_cpu"]))
    return res


# ---- reading each profiler's output ----------------------------------------------------

def stats_ours(wl, r):
    """Post-process our raw profile exactly as `osprey --profile` does; read the summary."""
    raw, stem = r["tag"] + ".osprof.json", r["tag"] + ".ours"
    run([OSPREY, "--postprocess", raw, "--binary", wl["exe"], "-o", stem])
    with open(stem + ".profile.json") as f:
        s = json.load(f)
    with open(stem + ".speedscope.json") as f:
        sp = json.load(f)
    with open(raw) as f:
        raw_d = json.load(f)
    cpu = s["cpuSeconds"]
    self_w = {}
    for h in s["hotFunctions"]:
        self_w[h["name"]] = self_w.get(h["name"], 0.0) + h["selfPct"] / 100.0 * cpu
    samples = s["sampleCount"]
    oncpu = sum(fb["oncpuSamples"] for fb in s["fibers"])
    all_w = sum(pr["endValue"] for pr in sp["profiles"])
    return {"total_w": cpu, "self_w": self_w, "prof_cpu": cpu, "samples": oncpu,
            "wait_samples_share": (samples - oncpu) / samples if samples else 0.0,
            "wait_weight_share": (all_w - cpu) / all_w if all_w else 0.0,
            "dropped": s["droppedSamples"], "late": raw_d.get("late_ticks", 0), "ticks": raw_d.get("ticks", 0)}


def stats_perf(wl, r):
    p = run(["perf", "script", "-i", r["tag"] + ".perf", "-F", "comm,tid,period,ip,sym"])
    self_w, total, n = {}, 0, 0
    for comm, _tid, period, frames in perf_fold.parse(p.stdout.splitlines(), ("env", "perf", "perf-exec")):
        leaf = frames[0] if frames else "[unknown]"
        self_w[leaf] = self_w.get(leaf, 0) + period / 1e9
        total += period / 1e9
        n += 1
    return {"total_w": total, "self_w": self_w, "prof_cpu": total, "samples": n}


PPROF_LINE = re.compile(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.+?)\s*$")


def stats_gperf(wl, r):
    prof = r["tag"] + ".gperf"
    if not os.path.exists(prof):
        return {"total_w": 0, "self_w": {}, "prof_cpu": 0.0, "samples": 0}
    p = run([PPROF, "--text", "--nodefraction=0", "--edgefraction=0", wl["exe"], prof])
    total = 0
    self_w = {}
    for line in p.stdout.splitlines():
        mt = re.match(r"^Total: (\d+) samples", line)
        if mt:
            total = int(mt.group(1))
            continue
        ml = PPROF_LINE.match(line)
        if ml:
            name = ml.group(2)
            self_w[name] = self_w.get(name, 0) + int(ml.group(1))
    # Each sample stands for one interval of the requested rate.
    return {"total_w": total, "self_w": self_w, "prof_cpu": total / HZ, "samples": total}


STATS = {"ours": stats_ours, "perf": stats_perf, "gperf": stats_gperf}


# ---- truth ------------------------------------------------------------------------------

def paired_rounds(ctx, wls, reps):
    """CPU seconds of each workload in `wls` ({key: wl}), `reps` rounds, each round's runs
    back to back in a shuffled order. Returns [{key: cpu}] per round."""
    rounds = []
    for _ in range(reps):
        order = list(wls.items())
        random.shuffle(order)
        rounds.append({k: run_once(ctx, wl, "plain")["cpu"] for k, wl in order})
    return rounds


def median_shares(per_round, funcs):
    """Median over rounds of each function's share, and the spread (half of max - min)."""
    med = {f: statistics.median(r[f] for r in per_round) for f in funcs}
    spread = max((max(r[f] for r in per_round) - min(r[f] for r in per_round)) / 2 for f in funcs)
    return med, spread


def truth_burn(ctx, only_wls, empty_wl):
    """Shares of burn60/30/10 from timing each part alone (CPU minus an empty run), computed
    within each round and then the median over rounds."""
    rounds = paired_rounds(ctx, dict(only_wls, empty=empty_wl), TRUTH_REPS)
    per_round = []
    for r in rounds:
        part = {f: max(0.0, r[f] - r["empty"]) for f in BURN}
        tot = sum(part.values()) or 1.0
        per_round.append({f: 100.0 * part[f] / tot for f in BURN})
    share, spread = median_shares(per_round, BURN)
    cpu = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    return share, spread, cpu


CG_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?):(\S+)(?:\s+\[.*\])?\s*$")


def truth_tiny_time(ctx, base_wl, extra_wls, empty_wl):
    """Shares of tinyA/B/C from the marginal CPU time of 10 more calls of each, computed
    within each round (the runs of a round back to back) and then the median over rounds.
    More rounds than the burn truth: a difference of two timings is noisier than a ratio."""
    rounds = paired_rounds(ctx, dict(extra_wls, base=base_wl, empty=empty_wl), max(7, TRUTH_REPS))
    calls = {"tinyA": 6, "tinyB": 3, "tinyC": 1}
    per_round = []
    for r in rounds:
        base = r["base"] - r["empty"]
        per_round.append({f: 100.0 * calls[f] * max(0.0, r[f] - r["base"]) / 10 / base for f in TINY})
    share, spread = median_shares(per_round, TINY)
    tot = sum(share.values())
    if tot > 100.0:
        share = {f: v * 100.0 / tot for f, v in share.items()}
    cpu = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    return share, spread, cpu


def truth_tiny(argv, env, driver):
    """Self shares of tinyA/B/C in callgrind's instruction counts inside `driver`."""
    out = os.path.join(os.path.dirname(argv[0]), f"cg-{driver}.out")
    run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect={driver}"] + argv,
        env=dict(BASE_ENV, **env))
    p = run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", out])
    ir = {}
    for line in p.stdout.splitlines():
        m = CG_LINE.match(line)
        if m:
            ir[m.group(3)] = ir.get(m.group(3), 0) + int(m.group(1).replace(",", ""))
    total = sum(ir.values())
    if total == 0:
        die("callgrind counted nothing")
    return {f: 100.0 * ir.get(f, 0) / total for f in TINY}


# ---- the measurement --------------------------------------------------------------------

def calibrate(ctx, c_exe, work):
    """Rounds and iterations so each workload burns about SECONDS of CPU."""
    k_c, k_o = 10000, 3000
    probe = 200
    wl = {"name": "probe", "lang": "C", "argv": [c_exe, "ratio", "1", str(probe), str(k_c)]}
    per_round_c = min(run_once(ctx, wl, "plain")["cpu"] for _ in range(3)) / probe
    wl = {"name": "probe", "lang": "C", "argv": [c_exe, "tiny", "2000000"]}
    per_tiny_c = min(run_once(ctx, wl, "plain")["cpu"] for _ in range(3)) / 2e6
    src, exe = build_osprey(work, k=k_o, rounds=probe, tiny_n=2000000, tinycg_n=1000, tinyx_n=1000,
                            depth=200, sleep_ms=5, nap_slices=1)
    wl = {"name": "probe", "lang": "Osprey", "argv": [exe], "env": {"OSPREY_TEST_FILTER": "ratio1"}}
    per_round_o = min(run_once(ctx, wl, "plain")["cpu"] for _ in range(3)) / probe
    wl = {"name": "probe", "lang": "Osprey", "argv": [exe], "env": {"OSPREY_TEST_FILTER": "tiny"}}
    per_tiny_o = min(run_once(ctx, wl, "plain")["cpu"] for _ in range(3)) / 2e6
    return {
        "c": {"k": k_c, "rounds": max(50, int(SECONDS / per_round_c)),
              "tiny": max(100000, int(SECONDS / per_tiny_c)), "round_s": per_round_c},
        "o": {"k": k_o, "rounds": max(50, int(SECONDS / per_round_o)),
              "tiny": max(100000, int(SECONDS / per_tiny_o)), "round_s": per_round_o},
    }


def workloads(c_exe, o_exe, cal):
    c, o = cal["c"], cal["o"]
    R, K = str(c["rounds"]), str(c["k"])
    wls = []
    for lang, exe in (("C", c_exe), ("Osprey", o_exe)):
        def mk(name, kind, argv=None, test=None):
            w = {"name": name, "lang": lang, "kind": kind, "exe": exe}
            if lang == "C":
                w["argv"] = [exe] + argv
            else:
                w["argv"] = [exe]
                w["env"] = {"OSPREY_TEST_FILTER": test}
            return w
        for n in (1, 2, 4, 16):
            wls.append(mk(f"ratio-{n}", "burn", ["ratio", str(n), R, K], f"ratio{n}"))
        wls.append(mk("mixed", "burn", ["mixed", R, K, "5"], "mixed"))
        wls.append(mk("deep", "burn", ["deep", "200", R, K], "deep"))
        wls.append(mk("tiny", "tiny", ["tiny", str(c["tiny"])], "tiny"))
    if ONLY:
        keep = set(ONLY.split(","))
        wls = [w for w in wls if w["name"] in keep or f"{w['lang']}:{w['name']}" in keep]
    return wls


def quartiles(v):
    """Lower and upper quartile of v: statistics.quantiles(n=4, method='inclusive'), which
    interpolates between order statistics (for 7 values: the 2.5th and 5.5th smallest)."""
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def fmt_err(errs):
    return "/".join(f"{e:+.1f}" for e in errs)


def main():
    t_start = time.time()
    # Kept open until the process ends: no profiler's run pays the kernel's one-time
    # switch-on of its perf hooks (see the module docstring).
    held = perf_counter.open_idle_task_clock()  # noqa: F841
    load_start = loadavg()
    for tool in ("clang-19", "valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            die(f"{tool} not found (scripts/setup.sh installs it)")
    for f in (OSPREY, PRELOAD_OURS):
        if not os.path.exists(f):
            die(f"{f} missing; run make build first")
    perf_ok = perf_works()
    gperf_ok = GPERF_LIB is not None and PPROF is not None
    work = os.environ.get("WORKDIR") or subprocess.check_output(["mktemp", "-d"], text=True).strip()
    keep_work = "WORKDIR" in os.environ
    try:
        c_exe, shim = build(work)
        ctx = Ctx(work, shim, perf_ok, gperf_ok)
        cal = calibrate(ctx, c_exe, work)
        o = cal["o"]
        nap_slices = max(1, int(o["rounds"] * o["round_s"] / 2 / 0.005))
        o_src, o_exe = build_osprey(work, k=o["k"], rounds=o["rounds"], tiny_n=o["tiny"],
                                    tinycg_n=200000, tinyx_n=o["tiny"] // 2, depth=200, sleep_ms=5,
                                    nap_slices=nap_slices)

        # Truth.
        c = cal["c"]
        only_c = {f: {"name": f, "lang": "C", "argv": [c_exe, "only", f[4:], str(c["rounds"]), str(c["k"])]}
                  for f in BURN}
        empty_c = {"name": "empty", "lang": "C", "argv": [c_exe, "only", "60", "0", str(c["k"])]}
        only_o = {f: {"name": f, "lang": "Osprey", "argv": [o_exe], "env": {"OSPREY_TEST_FILTER": "only" + f[4:]}}
                  for f in BURN}
        empty_o = {"name": "empty", "lang": "Osprey", "argv": [o_exe], "env": {"OSPREY_TEST_FILTER": "none"}}
        truth = {}
        spread = {}
        truth["C", "burn"], spread["C", "burn"], tc_raw = truth_burn(ctx, only_c, empty_c)
        truth["Osprey", "burn"], spread["Osprey", "burn"], to_raw = truth_burn(ctx, only_o, empty_o)
        half = str(c["tiny"] // 2)
        truth["C", "tiny"], spread["C", "tiny"], tc_tiny = truth_tiny_time(
            ctx, {"name": "tiny", "lang": "C", "argv": [c_exe, "tiny", half]},
            {f: {"name": f, "lang": "C", "argv": [c_exe, "tinyx", half, f[4:]]} for f in TINY}, empty_c)
        truth["Osprey", "tiny"], spread["Osprey", "tiny"], to_tiny = truth_tiny_time(
            ctx, {"name": "tiny", "lang": "Osprey", "argv": [o_exe], "env": {"OSPREY_TEST_FILTER": "tinyxbase"}},
            {f: {"name": f, "lang": "Osprey", "argv": [o_exe], "env": {"OSPREY_TEST_FILTER": "tinyx" + f[4:]}}
             for f in TINY}, empty_o)
        ir = {"C": truth_tiny([c_exe, "tiny", "200000"], {}, "tiny_driver"),
              "Osprey": truth_tiny([o_exe], {"OSPREY_TEST_FILTER": "tinycg"}, "tinyDriver")}
        tc_raw.update({"tiny": tc_tiny["base"], **{f"tiny+10{f[4:]}": tc_tiny[f] for f in TINY}})
        to_raw.update({"tiny": to_tiny["base"], **{f"tiny+10{f[4:]}": to_tiny[f] for f in TINY}})

        wls = workloads(c_exe, o_exe, cal)
        modes = ["plain", "ours"] + (["perf"] if perf_ok else []) + (["gperf"] if gperf_ok else [])
        rows = []
        for wl in wls:
            runs = {m: [] for m in modes}
            for _ in range(OVERHEAD_REPS if wl["name"] == "ratio-1" else REPS):
                order = modes[:]
                random.shuffle(order)
                for m in order:
                    runs[m].append(run_once(ctx, wl, m))
            funcs = BURN if wl["kind"] == "burn" else TINY
            tr = truth[wl["lang"], wl["kind"]]
            for m in modes[1:]:
                st = [STATS[m](wl, r) for r in runs[m]]
                tot = sum(s["total_w"] for s in st)
                pct = [100.0 * sum(s["self_w"].get(f, 0.0) for s in st) / tot if tot else 0.0 for f in funcs]
                errs = [p - tr[f] for p, f in zip(pct, funcs)]
                n = max(1, sum(s["samples"] for s in st))
                # Sampling noise of each share: the binomial standard error, in points.
                sig = [100.0 * ((p / 100) * (1 - p / 100) / n) ** 0.5 for p in pct]
                # Overhead: wall time over the unprofiled run of the same round (the modes of
                # a round run back to back, in a shuffled order), median over the rounds.
                pair = sorted(r["wall"] / b["wall"] for r, b in zip(runs[m], runs["plain"]))
                row = {
                    "lang": wl["lang"], "workload": wl["name"], "profiler": m, "funcs": funcs,
                    "pct": pct, "errs": errs, "sig": sig, "reps": len(runs[m]),
                    "cpu_ratio": statistics.median(s["prof_cpu"] / r["cpu"] for s, r in zip(st, runs[m])),
                    "rate": statistics.median(s["samples"] / r["cpu"] for s, r in zip(st, runs[m])),
                    "samples": sum(s["samples"] for s in st),
                    "overhead": statistics.median(pair),
                    "ov_range": quartiles(pair),
                    "cpu_over": statistics.median(r["cpu"] for r in runs[m]) / statistics.median(r["cpu"] for r in runs["plain"]),
                }
                if m == "ours":
                    # Our sampler thread's CPU over the run's wall time: the share of a
                    # core it took, from the program when no core was free.
                    row["sampler_share"] = statistics.median(r["sampler_cpu"] / r["wall"] for r in runs[m])
                    row["dropped"] = sum(s["dropped"] for s in st)
                    row["late"] = sum(s["late"] for s in st) / max(1, sum(s["ticks"] for s in st))
                if m == "ours" and wl["name"] == "mixed":
                    row["wait_samples"] = statistics.median(s["wait_samples_share"] for s in st)
                    row["wait_weight"] = statistics.median(s["wait_weight_share"] for s in st)
                    row["wait_truth"] = statistics.median(
                        r["blocked"] / (r["blocked"] + r["cpu"] - r["sampler_cpu"]) for r in runs[m])
                rows.append(row)
            print(f"  {wl['lang']:<6} {wl['name']:<9} done ({time.time() - t_start:.0f} s)", file=sys.stderr)
        report(rows, truth, spread, ir, cal, tc_raw, to_raw, perf_ok, gperf_ok, load_start, t_start)
    finally:
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)


def machine():
    model = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    hv = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"Hypervisor vendor:\s*(\S+)", out)
        if m:
            hv = f", {m.group(1)} guest"
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs{hv}, Linux {os.uname().release}"


def tool_versions():
    v = []
    p = subprocess.run(["perf", "--version"], capture_output=True, text=True) if shutil.which("perf") else None
    if p and p.returncode == 0:
        v.append(p.stdout.strip())
    p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libgoogle-perftools4"], capture_output=True, text=True)
    if p.returncode == 0 and p.stdout:
        v.append("gperftools " + p.stdout.strip())
    return ", ".join(v)


# A self% miss counts as beyond sampling noise only past 3 standard errors: the verdict
# makes about a hundred comparisons per table, so at 2 a perfect profiler would be flagged
# a few times in every run.
NOISE_SIGMAS = 3
# "No worse than perf" is judged only where ours is more than this many points off the
# truth: below it both profilers are within the sampling noise of every row (the printed
# legend gives the smallest 2sig of the table), and "worse" would only rank two noise draws.
PERF_FLOOR = 1.0
TARGET_OV = 1.01
# Busy threads per workload, to say where our sampler thread has no free core.
BUSY = {"ratio-1": 1, "ratio-2": 2, "ratio-4": 4, "ratio-16": 16, "mixed": 2, "deep": 1, "tiny": 1}


def sig_diff(a, b):
    return (a * a + b * b) ** 0.5


def verdicts(rows):
    """Targets for ours, each miss judged against its measured noise. Returns the list of
    (beyond noise?, text) and the number of "worse than perf" cases under the floor."""
    out = []
    under_floor = 0
    for r in rows:
        if r["profiler"] != "ours":
            continue
        key = f"{r['lang']} {r['workload']}"
        peer = next((p for p in rows if p["profiler"] == "perf" and p["lang"] == r["lang"]
                     and p["workload"] == r["workload"]), None)
        for f, e, sg in zip(r["funcs"], r["errs"], r["sig"]):
            if abs(e) > 2.0:
                sure = abs(e) - NOISE_SIGMAS * sg > 2.0
                out.append((sure, f"{key}: {f} self% off by {e:+.1f} pts (target 2; "
                                  f"{NOISE_SIGMAS}-sigma noise {NOISE_SIGMAS * sg:.1f})"))
            if peer is not None:
                pi = peer["funcs"].index(f)
                pe, ps = peer["errs"][pi], peer["sig"][pi]
                if abs(e) > abs(pe):
                    if abs(e) <= PERF_FLOOR:
                        under_floor += 1
                        continue
                    sure = abs(e) - abs(pe) > NOISE_SIGMAS * sig_diff(sg, ps)
                    out.append((sure, f"{key}: {f} self% error {e:+.1f} pts vs perf's {pe:+.1f} "
                                      f"({NOISE_SIGMAS}-sigma noise of the difference "
                                      f"{NOISE_SIGMAS * sig_diff(sg, ps):.1f})"))
        if abs(r["cpu_ratio"] - 1) > 0.05:
            out.append((True, f"{key}: profile CPU {r['cpu_ratio']:.3f} of rusage (target 0.95..1.05)"))
        if r["overhead"] > TARGET_OV:
            q1, q3 = r["ov_range"]
            vs = ""
            if peer is not None:
                vs = (f"; perf {peer['overhead']:.3f} (quartiles {peer['ov_range'][0]:.3f}.."
                      f"{peer['ov_range'][1]:.3f})")
            out.append((q1 > TARGET_OV,
                        f"{key}: wall overhead {r['overhead']:.3f} (target <= {TARGET_OV:.3f}; quartiles "
                        f"{q1:.3f}..{q3:.3f}; the profiler's own CPU {100 * r['sampler_share']:.1f} % "
                        f"of a core{vs})"))
    return out, under_floor


def report(rows, truth, spread, ir, cal, tc_raw, to_raw, perf_ok, gperf_ok, load_start, t_start):
    lines = []
    out = lines.append
    out(f"accuracy: {REPS} interleaved rounds per workload ({OVERHEAD_REPS} for ratio-1), one run per "
        f"profiler and round, ~{SECONDS:.1f} s CPU each, {HZ} Hz requested")
    if NON_DEFAULT:
        out(f"  (not the default settings: {', '.join(f'{k}={os.environ[k]}' for k in NON_DEFAULT)})")

    def tr(lang, kind):
        fs = BURN if kind == "burn" else TINY
        return "/".join(f"{truth[lang, kind][f]:.1f}" for f in fs) + f" (±{spread[lang, kind]:.1f})"
    out("truth, % of CPU time: burn60/30/10 each timed alone; tinyA/B/C marginal time of 10 more calls;")
    out("  medians over rounds (± half the largest range over rounds)")
    for lang in ("C", "Osprey"):
        out(f"  {lang:<7} burn {tr(lang, 'burn')}   tiny {tr(lang, 'tiny')}   (callgrind instructions, "
            f"for reference: tiny {'/'.join(f'{ir[lang][f]:.1f}' for f in TINY)})")
    out("")
    hdr = (f"{'lang':<6} {'workload':<9} {'profiler':<10} {'self% err (pts)':>17} {'max':>5} {'2sig':>4} "
           f"{'CPU prof/rusage':>15} {'samples/CPU-s':>14} {'wall overhead':>22} {'waiting: ours vs truth':>27}")
    out(hdr)
    out("-" * len(hdr))
    for r in rows:
        wait = ""
        if "wait_truth" in r:
            wait = (f"{100 * r['wait_samples']:.1f}% ({100 * r['wait_weight']:.1f}% wt) "
                    f"vs {100 * r['wait_truth']:.1f}%")
        ov = f"{r['overhead']:.3f} ({r['ov_range'][0]:.2f}..{r['ov_range'][1]:.2f})"
        out(f"{r['lang']:<6} {r['workload']:<9} {NAMES[r['profiler']]:<10} {fmt_err(r['errs']):>17} "
            f"{max(abs(e) for e in r['errs']):5.1f} {2 * max(r['sig']):4.1f} {r['cpu_ratio']:15.3f} "
            f"{r['rate']:7.0f} ({r['rate'] / HZ:.2f}) {ov:>22} {wait:>27}")
    out("")
    out("self% err: the profiler's self% minus the truth for burn60/burn30/burn10 (tiny: tinyA/tinyB/tinyC),")
    out("  from all runs of the workload pooled; max: the largest |err|; 2sig: twice the largest binomial")
    out("  standard error of those shares (the sampling noise: a perfect profiler with this many samples")
    out("  is off by more than this 1 time in 20). CPU prof/rusage: CPU seconds in the profile over the")
    out("  process's user+system time (median of runs). samples/CPU-s: on-CPU samples per second of process")
    out(f"  CPU (over {HZ}). wall overhead: wall time over the unprofiled run of the same round, median over")
    out("  rounds (lower..upper quartile of the rounds, statistics.quantiles inclusive). waiting (mixed):")
    out("  ours' share of samples classified waiting (and of weight) vs the share of thread time the")
    out("  program spent in sleeps, joins and condition waits.")
    vs, under_floor = verdicts(rows)
    sure = [v for s, v in vs if s]
    unsure = [v for s, v in vs if not s]
    cpus = os.cpu_count() or 1
    crowded = [w for w, n in BUSY.items() if n >= cpus and any(r["workload"] == w for r in rows)]
    min2sig = min(2 * max(r["sig"]) for r in rows)
    out("")
    rules = (
        f"targets for ours: self% within 2 pts of the truth and no worse than perf's; profile CPU within "
        f"5 % of rusage; wall overhead <= {TARGET_OV:.3f} on every workload. How a miss is judged. self%: "
        f"beyond noise past {NOISE_SIGMAS} standard errors (of the share, or of the difference from perf's). "
        f"'No worse than perf' is judged only where ours is more than {PERF_FLOOR:.0f} pt off the truth "
        f"({under_floor} case{'' if under_floor == 1 else 's'} where ours is further off than perf but "
        f"within {PERF_FLOOR:.0f} pt {'is' if under_floor == 1 else 'are'} not listed; the smallest 2sig in this table is {min2sig:.1f}). CPU: no noise allowance. Wall overhead: "
        f"beyond noise when the lower quartile of the rounds' ratios is above {TARGET_OV:.3f}, within noise "
        "otherwise; perf's figure is given beside each miss. Where busy threads are at least as many as "
        f"CPUs ({', '.join(crowded) if crowded else 'none here'}, on {cpus} CPUs) our sampler thread's own "
        "CPU competes with the program: that is part of the real cost and is counted.")
    lines.extend(textwrap.wrap(rules, width=100, subsequent_indent="  "))
    out(f"{len(sure)} missed beyond noise, {len(unsure)} within noise:")
    for v in sure:
        out("  MISSED        " + v)
    for v in unsure:
        out("  within noise  " + v)
    pairs = [(a, b) for a, b in CHECK if b is not None and b > 0.1]
    if pairs:
        dev = max(abs(a / b - 1) for a, b in pairs)
        out(f"rusage cross-check: the program's own RUSAGE_SELF at exit and wait4's account of it agree within "
            f"{100 * dev:.1f} % over {len(pairs)} runs")
    if not perf_ok:
        out("perf: not usable here (perf record failed); its rows are missing")
    if not gperf_ok:
        out("gperftools: libprofiler.so or google-pprof missing; its rows are missing")

    text = "\n".join(lines)
    print(text)
    load_end = loadavg()
    os.makedirs(RESULTS, exist_ok=True)
    c, o = cal["c"], cal["o"]
    md = [
        "# Profiler accuracy and overhead (bench/accuracy.sh)",
        "",
        f"Machine: {machine()}. Load average {load_start} at start, {load_end} at end; "
        f"{time.time() - t_start:.0f} s. Tools: {tool_versions()}.",
        "",
        f"Workloads: C built with `clang-19 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer` "
        f"({c['rounds']} rounds of {10 * c['k']} iterations, tiny {c['tiny']} iterations); Osprey built with "
        f"`osprey --build --profile` ({o['rounds']} rounds of {10 * o['k']} iterations, tiny {o['tiny']} iterations). "
        "Truth runs, median CPU seconds: "
        f"C {', '.join(f'{k} {v:.3f}' for k, v in tc_raw.items())}; "
        f"Osprey {', '.join(f'{k} {v:.3f}' for k, v in to_raw.items())}.",
        "",
        "```",
        text,
        "```",
        "",
    ]
    with open(os.path.join(RESULTS, "accuracy.md"), "w") as f:
        f.write("\n".join(md))
    where = os.path.relpath(os.path.join(RESULTS, "accuracy.md"), ROOT)
    note = ""
    if NON_DEFAULT:
        note = (f" (not bench/results/: {', '.join(NON_DEFAULT)} differ from the defaults, so this is not "
                "the committed table)")
    print(f"\nload average {load_end} at end; {time.time() - t_start:.0f} s; written to {where}{note}")


if __name__ == "__main__":
    main()
