// Writes images/icon.png, the extension's 128×128 icon: a small flame graph (stacked bars
// in the frame colours' warm range, narrowing upwards like a flame) on a dark rounded square.
// Deterministic; uses only node's zlib. Usage: npm run icon
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as zlib from "node:zlib";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const N = 128;
const px = new Uint8Array(N * N * 4);

function set(x, y, [r, g, b, a]) {
  const i = (y * N + x) * 4;
  // "over" compositing onto what is there
  const A = a / 255;
  px[i] = Math.round(r * A + px[i] * (1 - A));
  px[i + 1] = Math.round(g * A + px[i + 1] * (1 - A));
  px[i + 2] = Math.round(b * A + px[i + 2] * (1 - A));
  px[i + 3] = Math.max(px[i + 3], a);
}

// Background: rounded square, radius 22, with a 1.5 px anti-aliased edge.
const R = 22;
for (let y = 0; y < N; y++) {
  for (let x = 0; x < N; x++) {
    const cx = Math.min(Math.max(x + 0.5, R), N - R);
    const cy = Math.min(Math.max(y + 0.5, R), N - R);
    const d = Math.hypot(x + 0.5 - cx, y + 0.5 - cy);
    const cover = Math.max(0, Math.min(1, R - d + 0.5));
    if (cover > 0) set(x, y, [24, 28, 38, Math.round(255 * cover)]);
  }
}

// Flame graph: rows from the bottom (root) up; each row a list of [x0, x1] spans.
const rows = [
  [[14, 114]],
  [[14, 78], [80, 114]],
  [[18, 56], [58, 76], [82, 108]],
  [[22, 50], [60, 72], [86, 102]],
  [[26, 44], [88, 98]],
  [[30, 40]],
];
const colors = [
  [232, 80, 10],
  [249, 115, 22],
  [251, 146, 60],
  [251, 191, 36],
  [253, 224, 71],
  [254, 240, 138],
];
const rowH = 13;
const gap = 3;
const base = 106;
rows.forEach((spans, r) => {
  const y1 = base - r * (rowH + gap);
  const y0 = y1 - rowH;
  for (const [x0, x1] of spans) {
    for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) set(x, y, [...colors[r], 255]);
  }
});

// PNG encoding: signature, IHDR, one IDAT (filter byte 0 per row), IEND.
const crcTable = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(N, 0);
ihdr.writeUInt32BE(N, 4);
ihdr[8] = 8; // bit depth
ihdr[9] = 6; // RGBA
const raw = Buffer.alloc(N * (N * 4 + 1));
for (let y = 0; y < N; y++) Buffer.from(px.buffer, y * N * 4, N * 4).copy(raw, y * (N * 4 + 1) + 1);
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk("IHDR", ihdr),
  chunk("IDAT", zlib.deflateSync(raw, { level: 9 })),
  chunk("IEND", Buffer.alloc(0)),
]);
fs.mkdirSync(path.join(root, "images"), { recursive: true });
fs.writeFileSync(path.join(root, "images", "icon.png"), png);
console.log(`wrote images/icon.png (${png.length} bytes)`);
