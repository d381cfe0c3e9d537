// Refreshes fixtures/driver/ with a real export pair written by the driver, plus the state of
// every sample taken from the raw profile the exports were made from:
//   osprey <example> --build --profile -o <tmp>/<stem>     (the profiling build)
//   OSPREY_PROFILE=<tmp>/<stem>.osprof.json <tmp>/<stem>   (run it: the raw profile)
//   osprey --postprocess <raw> --binary <exe> -o <tmp>/<stem>   (the exports)
// <stem>.speedscope.json and <stem>.profile.json are copied unchanged. <stem>.states.json holds,
// per speedscope profile, the raw `state` of each of its samples (0 on-CPU, 1 waiting): the
// profiles are the raw thread rows with samples, in row order, each with its samples in raw
// order (docs/spec/profiler.md §(g.2)). The script checks that every profile's length and
// on-CPU count agree with the summary before writing anything.
// Usage (after `make build`): node editor/vscode/scripts/make-driver-fixture.mjs [osprey] [example.osp]
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..", "..");
const osprey = path.resolve(process.argv[2] ?? path.join(repo, "build", "bin", "osprey"));
const source = path.resolve(process.argv[3] ?? path.join(repo, "examples", "demo.osp"));
const stem = path.basename(source).replace(/\.[^.]*$/, "");
const out = path.join(repo, "editor", "vscode", "fixtures", "driver");

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: ["ignore", "ignore", "inherit"], ...opts });
  if (r.status !== 0) {
    console.error(`make-driver-fixture: ${cmd} ${args.join(" ")} failed (status ${r.status ?? r.signal})`);
    process.exit(1);
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "osprey-fixture-"));
try {
  const exe = path.join(tmp, stem);
  const raw = path.join(tmp, `${stem}.osprof.json`);
  run(osprey, [source, "--build", "--profile", "-o", exe]);
  run(exe, [], { cwd: tmp, env: { ...process.env, OSPREY_PROFILE: raw } });
  run(osprey, ["--postprocess", raw, "--binary", exe, "-o", path.join(tmp, stem)]);
  const rawDoc = JSON.parse(fs.readFileSync(raw, "utf8"));
  const speedscope = JSON.parse(fs.readFileSync(path.join(tmp, `${stem}.speedscope.json`), "utf8"));
  const summary = JSON.parse(fs.readFileSync(path.join(tmp, `${stem}.profile.json`), "utf8"));
  const rows = new Map();
  for (const [, row, , state] of rawDoc.samples) {
    if (!rows.has(row)) rows.set(row, []);
    rows.get(row).push(state);
  }
  const states = [...rows.keys()].sort((a, b) => a - b).map((r) => rows.get(r));
  const sampled = summary.fibers.filter((f) => f.samples > 0);
  if (states.length !== speedscope.profiles.length || sampled.length !== states.length) {
    console.error(`make-driver-fixture: ${states.length} raw rows with samples, ${speedscope.profiles.length} profiles, ${sampled.length} sampled fibers`);
    process.exit(1);
  }
  states.forEach((s, i) => {
    const on = s.filter((x) => x === 0).length;
    if (s.length !== speedscope.profiles[i].samples.length || on !== sampled[i].oncpuSamples) {
      console.error(`make-driver-fixture: profile ${i}: ${s.length} states (${on} on-CPU) against ${speedscope.profiles[i].samples.length} samples (${sampled[i].oncpuSamples} on-CPU)`);
      process.exit(1);
    }
  });
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  fs.copyFileSync(path.join(tmp, `${stem}.speedscope.json`), path.join(out, `${stem}.speedscope.json`));
  fs.copyFileSync(path.join(tmp, `${stem}.profile.json`), path.join(out, `${stem}.profile.json`));
  fs.writeFileSync(path.join(out, `${stem}.states.json`), JSON.stringify(states) + "\n");
  console.log(`wrote ${out}/${stem}.{speedscope.json,profile.json,states.json}`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
