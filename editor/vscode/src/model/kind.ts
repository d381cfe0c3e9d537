/**
 * The one classification rule for user code (docs/spec/profiler.md §(f) item 8, §(k) item 35): a frame
 * is `user` when its file name ends in `.osp` or `.ospml`, compared ASCII case-insensitively;
 * everything else (runtime C files, frames without a file, hex frames) is `runtime`. Used by
 * the frame colours, the tooltip and the extension's "is this an Osprey editor" check.
 */

const USER_SUFFIXES = [".osp", ".ospml"];

/** ASCII-only lower-casing: non-ASCII code units are left as they are. */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

/** True when `file` names Osprey source (`.osp` / `.ospml`, ASCII case-insensitive). */
export function isUserFile(file: string): boolean {
  const lower = asciiLower(file);
  return USER_SUFFIXES.some((s) => lower.endsWith(s));
}

/** `"user"` or `"runtime"` for a frame's file, per {@link isUserFile}. */
export function frameKind(file: string): "user" | "runtime" {
  return isUserFile(file) ? "user" : "runtime";
}
