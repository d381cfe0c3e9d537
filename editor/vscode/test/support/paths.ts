import * as fs from "fs";
import * as path from "path";

/** editor/vscode, from out/test/support at run time. */
export const ROOT = path.resolve(__dirname, "..", "..", "..");
export const FIXTURES = path.join(ROOT, "fixtures");
export const ARTIFACTS = path.join(ROOT, "test-artifacts");

export function readFixture(name: string): unknown {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES, name), "utf8"));
}

/** A deep copy of a JSON value. */
export function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}
