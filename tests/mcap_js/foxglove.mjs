#!/usr/bin/env node
// Checks Foxglove's view of an edgevla bag with readers no one here wrote: @mcap/core reads the
// bag, @foxglove/schemas' jsonschema is the reference the image schemas must match, and PNG
// frames are decoded here with node's own zlib (filters and CRCs checked), JPEG frames parsed
// to their frame header. make_foxglove_fixture wrote the bags and the manifest.
//
//   node foxglove.mjs <bag.mcap> <manifest.json> <mode>
//     mode jpeg|png|raw   `edgevla bag export --foxglove --images <mode>` of source.mcap
//     mode nocamera       the export of a bag with no camera: plots, no image channel
//     mode recorded       a Recorder bag with foxglove: true (png frames)
// Asserts: every derived channel is json with a jsonschema schema; image channels are named
// foxglove.CompressedImage / foxglove.RawImage with the reference's required fields, property
// types and base64 data; frames decode to the fixture's pixels (png, raw) or have its size
// (jpeg); plot messages hold finite numbers where the manifest says (actions, state, stage
// times, latency per hop); edgevla's own channels are all still there.
// Exits 1 naming the first mismatch, 2 on bad usage.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { inflateSync } from "node:zlib";

import { crc32 } from "@foxglove/crc";
import lz4 from "@foxglove/wasm-lz4";
import zstd from "@foxglove/wasm-zstd";
import foxgloveSchemas from "@foxglove/schemas/jsonschema.js";
import { McapIndexedReader } from "@mcap/core";

class Mismatch extends Error {}
function fail(what) {
  throw new Mismatch(what);
}
function expectEq(actual, expected, what) {
  if (actual !== expected) fail(`${what}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
}

const decompressHandlers = {
  lz4: (buf, size) => lz4(buf, Number(size)),
  zstd: (buf, size) => zstd.decompress(buf, Number(size)),
};

class BufferReadable {
  constructor(buf) { this.buf = buf; }
  async size() { return BigInt(this.buf.byteLength); }
  async read(offset, size) { return this.buf.subarray(Number(offset), Number(offset + size)); }
}

// The fixture's pixel patterns (make_foxglove_fixture.cpp).
const rgb = (y, x, c, k) => (x * 3 + y * 5 + c * 70 + k * 11) & 255;
const mono16 = (y, x, k) => (x * 500 + y * 900 + k) & 0xffff;
const action = (i, j, k) => i * 0.5 + j * 0.25 + k;

function strictBase64(s, what) {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) fail(`${what}: data is not base64`);
  const bytes = Buffer.from(s, "base64");
  if (bytes.toString("base64") !== s) fail(`${what}: data does not round-trip as base64`);
  return bytes;
}

// PNG: signature, chunk CRCs, IHDR, zlib-inflated IDAT, per-row filters undone.
function decodePng(buf, what) {
  const sig = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  sig.forEach((b, i) => { if (buf[i] !== b) fail(`${what}: not a PNG (signature)`); });
  let off = 8, ihdr = null, idat = [], ended = false;
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString("latin1", off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    const crc = buf.readUInt32BE(off + 8 + len);
    if (crc32(buf.subarray(off + 4, off + 8 + len)) !== crc) fail(`${what}: PNG chunk ${type} CRC mismatch`);
    if (type === "IHDR") ihdr = { width: data.readUInt32BE(0), height: data.readUInt32BE(4), depth: data[8], color: data[9], interlace: data[12] };
    if (type === "IDAT") idat.push(data);
    if (type === "IEND") { ended = true; break; }
    off += 12 + len;
  }
  if (!ihdr || !ended) fail(`${what}: PNG without IHDR or IEND`);
  if (ihdr.interlace !== 0) fail(`${what}: interlaced PNG`);
  const channels = { 0: 1, 2: 3, 6: 4, 4: 2 }[ihdr.color];
  if (!channels) fail(`${what}: PNG color type ${ihdr.color}`);
  const bpp = channels * ihdr.depth / 8;
  const stride = ihdr.width * bpp;
  const raw = inflateSync(Buffer.concat(idat));
  if (raw.length !== (stride + 1) * ihdr.height) fail(`${what}: PNG data is ${raw.length} bytes, expected ${(stride + 1) * ihdr.height}`);
  const out = Buffer.alloc(stride * ihdr.height);
  for (let y = 0; y < ihdr.height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= bpp && y > 0 ? out[(y - 1) * stride + x - bpp] : 0;
      let v = line[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) fail(`${what}: PNG row filter ${filter}`);
      out[y * stride + x] = v & 255;
    }
  }
  return { ...ihdr, channels, pixels: out };
}

// JPEG: SOI, a baseline/extended/progressive frame header with the size, EOI at the end.
function jpegFrame(buf, what) {
  if (buf[0] !== 0xff || buf[1] !== 0xd8) fail(`${what}: not a JPEG (no SOI)`);
  if (buf[buf.length - 2] !== 0xff || buf[buf.length - 1] !== 0xd9) fail(`${what}: JPEG does not end in EOI`);
  let off = 2;
  while (off + 4 <= buf.length) {
    if (buf[off] !== 0xff) fail(`${what}: JPEG marker expected at byte ${off}`);
    const marker = buf[off + 1];
    const len = buf.readUInt16BE(off + 2);
    if (marker >= 0xc0 && marker <= 0xc2) {
      return { height: buf.readUInt16BE(off + 5), width: buf.readUInt16BE(off + 7), components: buf[off + 9] };
    }
    off += 2 + len;
  }
  fail(`${what}: JPEG without a frame header`);
}

function checkPixels(pixels, img, k, what) {
  const kk = k + img.frame_offset;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      if (img.pattern === "rgb") {
        for (let c = 0; c < 3; c++) {
          const got = pixels[(y * img.width + x) * 3 + c];
          if (got !== rgb(y, x, c, kk)) fail(`${what}: pixel (${y}, ${x}, ${c}) is ${got}, expected ${rgb(y, x, c, kk)}`);
        }
      } else {
        const got = pixels.readUInt16LE((y * img.width + x) * 2);
        if (got !== mono16(y, x, kk)) fail(`${what}: pixel (${y}, ${x}) is ${got}, expected ${mono16(y, x, kk)}`);
      }
    }
  }
}

// Our schema against @foxglove/schemas' one: same title, required fields, property types,
// base64 content encoding of `data`, and the time fields.
function checkImageSchema(schema, name) {
  const ours = JSON.parse(new TextDecoder().decode(schema.data));
  const ref = foxgloveSchemas[name.replace("foxglove.", "")];
  if (!ref) fail(`@foxglove/schemas has no ${name}`);
  expectEq(ours.title, ref.title, `${name} schema title`);
  expectEq(JSON.stringify([...ours.required].sort()), JSON.stringify([...ref.required].sort()), `${name} required fields`);
  for (const [k, p] of Object.entries(ref.properties)) {
    const o = ours.properties?.[k];
    if (!o) fail(`${name} schema lacks property '${k}'`);
    expectEq(o.type, p.type, `${name}.${k} type`);
    if (p.contentEncoding) expectEq(o.contentEncoding, p.contentEncoding, `${name}.${k} contentEncoding`);
    if (p.properties) {
      for (const [kk, pp] of Object.entries(p.properties)) expectEq(o.properties?.[kk]?.type, pp.type, `${name}.${k}.${kk} type`);
    }
  }
}

function allFinite(v, path, what) {
  if (v === null) fail(`${what}: ${path} is null (a non-finite number)`);
  if (typeof v === "number" && !Number.isFinite(v)) fail(`${what}: ${path} is not finite`);
  if (Array.isArray(v)) v.forEach((x, i) => allFinite(x, `${path}[${i}]`, what));
  else if (typeof v === "object") for (const [k, x] of Object.entries(v)) allFinite(x, `${path}.${k}`, what);
}

function expectTime(t, ns, what) {
  if (!Number.isInteger(t?.sec) || !Number.isInteger(t?.nsec) || t.nsec < 0 || t.nsec > 999999999) fail(`${what}: timestamp ${JSON.stringify(t)} is not {sec, nsec}`);
  if (ns !== undefined) {
    expectEq(BigInt(t.sec) * 1000000000n + BigInt(t.nsec), ns, `${what}: timestamp`);
  }
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 3 || !["jpeg", "png", "raw", "nocamera", "recorded"].includes(args[2])) {
    console.error("usage: node foxglove.mjs <bag.mcap> <manifest.json> jpeg|png|raw|nocamera|recorded");
    process.exit(2);
  }
  const [bagPath, manifestPath, mode] = args;
  const m = JSON.parse(readFileSync(manifestPath, "utf8"));
  await lz4.isLoaded;
  await zstd.isLoaded;
  const reader = await McapIndexedReader.Initialize({ readable: new BufferReadable(readFileSync(bagPath)), decompressHandlers });
  const byTopic = new Map();
  for (const ch of reader.channelsById.values()) byTopic.set(ch.topic, { ch, schema: reader.schemasById.get(ch.schemaId), msgs: [] });
  for await (const msg of reader.readMessages()) byTopic.get(reader.channelsById.get(msg.channelId).topic).msgs.push(msg);

  const frames = m.frames;
  const exported = ["jpeg", "png", "raw"].includes(mode);
  const derived = [...byTopic.values()].filter((t) => t.ch.metadata.has("edgevla.derived_from"));
  if (derived.length === 0) fail("no Foxglove channels (metadata edgevla.derived_from)");
  for (const t of derived) {
    expectEq(t.ch.messageEncoding, "json", `${t.ch.topic} message encoding`);
    expectEq(t.schema?.encoding, "jsonschema", `${t.ch.topic} schema encoding`);
    if (!byTopic.has(t.ch.metadata.get("edgevla.derived_from"))) fail(`${t.ch.topic}: its source topic is not in the bag`);
  }
  // edgevla's own channels stay beside them, every message kept.
  for (const t of byTopic.values()) {
    if (t.ch.metadata.has("edgevla.derived_from")) continue;
    expectEq(t.ch.messageEncoding, "msgpack", `${t.ch.topic} (edgevla channel) message encoding`);
    expectEq(t.msgs.length, frames, `${t.ch.topic} (edgevla channel) messages`);
  }

  // Images.
  const imageTopics = derived.filter((t) => t.schema.name.startsWith("foxglove."));
  let wantImages = [];
  if (exported) wantImages = m.images;
  if (mode === "recorded") wantImages = m.images.filter((i) => i.source === "/camera/base/image");
  expectEq(imageTopics.length, wantImages.length, `image channels (${imageTopics.map((t) => t.ch.topic).join(", ")})`);
  let decoded = 0;
  for (const img of wantImages) {
    const format = mode === "recorded" ? "png" : mode === "jpeg" && img.encoding === "mono16" ? "png" : mode;
    const topic = `${img.base}/${format === "raw" ? "raw" : "compressed"}`;
    const t = byTopic.get(topic);
    if (!t) fail(`no image channel ${topic}`);
    const name = format === "raw" ? "foxglove.RawImage" : "foxglove.CompressedImage";
    expectEq(t.schema.name, name, `${topic} schema name`);
    checkImageSchema(t.schema, name);
    expectEq(t.msgs.length, frames, `${topic} messages`);
    t.msgs.forEach((msg, k) => {
      const what = `${topic} frame ${k}`;
      const j = JSON.parse(new TextDecoder().decode(msg.data));
      for (const f of foxgloveSchemas[name.replace("foxglove.", "")].required) if (!(f in j)) fail(`${what}: required field '${f}' missing`);
      if (exported) expectTime(j.timestamp, BigInt(m.t0_ns) + BigInt(k * m.period_ns), what);
      else expectTime(j.timestamp, undefined, what);
      expectEq(j.frame_id, img.frame_id, `${what} frame_id`);
      const bytes = strictBase64(j.data, what);
      if (format === "raw") {
        const bytesPer = img.encoding === "mono16" ? 2 : 3;
        expectEq(j.width, img.width, `${what} width`);
        expectEq(j.height, img.height, `${what} height`);
        expectEq(j.encoding, img.encoding, `${what} encoding`);
        expectEq(j.step, img.width * bytesPer, `${what} step`);
        expectEq(bytes.length, j.step * j.height, `${what} data bytes`);
        checkPixels(bytes, img, k, what);
      } else if (format === "png") {
        expectEq(j.format, "png", `${what} format`);
        const p = decodePng(bytes, what);
        expectEq(p.width, img.width, `${what} PNG width`);
        expectEq(p.height, img.height, `${what} PNG height`);
        expectEq(p.depth, img.encoding === "mono16" ? 16 : 8, `${what} PNG bit depth`);
        expectEq(p.channels, img.encoding === "mono16" ? 1 : 3, `${what} PNG channels`);
        let px = p.pixels;
        if (p.depth === 16) {  // PNG stores 16-bit samples big-endian
          px = Buffer.from(px);
          px.swap16();
        }
        checkPixels(px, img, k, what);
      } else {
        expectEq(j.format, "jpeg", `${what} format`);
        const f = jpegFrame(bytes, what);
        expectEq(f.width, img.width, `${what} JPEG width`);
        expectEq(f.height, img.height, `${what} JPEG height`);
        expectEq(f.components, 3, `${what} JPEG components`);
      }
      decoded++;
    });
  }

  // Plots.
  const plotTopics = derived.filter((t) => t.ch.topic.endsWith("/plot"));
  const wantPlots = exported ? Object.keys(m.plots)
    : mode === "nocamera" ? ["/policy/actions/plot"] : ["/policy/actions/plot", "/camera/base/image/plot"];
  expectEq(JSON.stringify(plotTopics.map((t) => t.ch.topic).sort()), JSON.stringify([...wantPlots].sort()), "plot channels");
  let numbers = 0;
  for (const topic of wantPlots) {
    const want = m.plots[topic];
    const t = byTopic.get(topic);
    expectEq(t.msgs.length, frames, `${topic} messages`);
    const schema = JSON.parse(new TextDecoder().decode(t.schema.data));
    expectEq(schema.type, "object", `${topic} schema type`);
    expectEq(schema.properties?.timestamp?.title, "time", `${topic} schema: timestamp titled time`);
    t.msgs.forEach((msg, k) => {
      const what = `${topic} message ${k}`;
      const j = JSON.parse(new TextDecoder().decode(msg.data));
      for (const key of Object.keys(j)) if (!schema.properties[key]) fail(`${what}: '${key}' is not in the channel's schema`);
      expectTime(j.timestamp, undefined, what);
      allFinite(j, "", what);
      for (const f of want.fields ?? []) {
        if (typeof j[f] !== "number") fail(`${what}: field '${f}' is ${JSON.stringify(j[f])}, not a number`);
        numbers++;
      }
      for (const [a, n] of Object.entries(want.arrays ?? {})) {
        if (!Array.isArray(j[a]) || j[a].length !== n) fail(`${what}: '${a}' is not an array of ${n}`);
        numbers += n;
      }
      for (const a of want.absent ?? []) if (a in j) fail(`${what}: '${a}' should not be plotted`);
      if (want.actions_rows) {
        expectEq(j.actions.length, want.actions_rows, `${what} actions rows`);
        j.actions.forEach((row, i) => {
          expectEq(row.values.length, want.actions_cols, `${what} actions[${i}].values length`);
          row.values.forEach((v, d) => { expectEq(v, action(i, d, k), `${what} actions[${i}].values[${d}]`); numbers++; });
        });
        expectEq(j.backbone_ms, 40 + k, `${what} backbone_ms`);
        if (exported || mode === "nocamera") {
          // Hop n of the fixture's trace is 2n ms after capture; publish 1 ms after the last.
          want.hops.forEach((h, n) => expectEq(j.latency_ms?.[h], 2 * (n + 1), `${what} latency_ms.${h}`));
          expectEq(j.latency_ms.capture_to_publish, 2 * want.hops.length + 1, `${what} latency_ms.capture_to_publish`);
        }
      }
    });
  }
  console.log(`foxglove.mjs ${basename(bagPath)} (${mode}): OK (${derived.length} Foxglove channels, ` +
    `${decoded} frames checked, ${numbers} plotted numbers checked)`);
}

main().catch((e) => {
  console.error(`foxglove.mjs: ${e instanceof Mismatch ? "MISMATCH" : "ERROR"}: ${e.stack ?? e}`);
  process.exit(1);
});
