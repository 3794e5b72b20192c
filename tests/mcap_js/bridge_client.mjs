#!/usr/bin/env node
// A Foxglove WebSocket client (the npm package ws) against `edgevla bridge foxglove` serving a
// live graph; run_bridge.sh starts both.
//
//   node bridge_client.mjs <ws://host:port> <image topic> <plot topic> <plot key> <width> <height>
//
// Asserts: a plain HTTP request is refused with a message naming the subprotocol; the
// handshake selects foxglove.websocket.v1; serverInfo comes first and offers no capability
// (read-only); the image and plot channels are advertised as json with jsonschema schemas (the
// image one matching @foxglove/schemas' required fields); after subscribe, binary frames
// arrive with opcode 1, the subscription id and a publish time near now, holding a JPEG of the
// camera's size and plots with finite numbers under <plot key>; requests it cannot serve get a
// status error; after unsubscribe no more frames of that subscription arrive while the other
// keeps flowing. Exits 1 naming the first mismatch.
import foxgloveSchemas from "@foxglove/schemas/jsonschema.js";
import WebSocket from "ws";

const [url, imageTopic, plotTopic, plotKey, width, height] = process.argv.slice(2);
if (!height) {
  console.error("usage: node bridge_client.mjs <ws://host:port> <image topic> <plot topic> <plot key> <width> <height>");
  process.exit(2);
}
function fail(what) {
  console.error(`bridge_client.mjs: MISMATCH: ${what}`);
  process.exit(1);
}
const deadline = setTimeout(() => fail(`timed out; state: ${JSON.stringify(state())}`), 60000);

// 1. Not a Foxglove client: refused with a message saying what to use.
const plain = await fetch(url.replace(/^ws/, "http") + "/");
if (plain.status !== 400) fail(`plain HTTP got status ${plain.status}, expected 400`);
if (!(await plain.text()).includes("foxglove.websocket.v1")) fail("plain HTTP refusal does not name foxglove.websocket.v1");

const ws = new WebSocket(url, ["foxglove.websocket.v1"]);
const channels = new Map();  // topic -> channel
const frames = { 1: [], 2: [] };
const statuses = [];
let serverInfo = null, firstOp = null;
const state = () => ({ serverInfo: !!serverInfo, channels: [...channels.keys()], images: frames[1].length, plots: frames[2].length, statuses });

function waitFor(pred, what) {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (pred()) { clearInterval(t); resolve(); }
    }, 20);
    t.what = what;
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

ws.on("message", (data, isBinary) => {
  if (!isBinary) {
    const j = JSON.parse(data.toString());
    firstOp ??= j.op;
    if (j.op === "serverInfo") serverInfo = j;
    else if (j.op === "advertise") for (const c of j.channels) channels.set(c.topic, c);
    else if (j.op === "status") statuses.push(j);
    return;
  }
  const buf = Buffer.from(data);
  if (buf[0] !== 0x01) fail(`binary frame with opcode ${buf[0]}, expected 1 (message data)`);
  const sub = buf.readUInt32LE(1);
  const stamp = buf.readBigUInt64LE(5);
  if (!(sub in frames)) fail(`frame for subscription ${sub}, which was never made`);
  frames[sub].push({ stamp, at: performance.now(), json: JSON.parse(buf.subarray(13).toString()) });
});
ws.on("error", (e) => fail(`websocket error: ${e.message}`));
await new Promise((resolve) => ws.on("open", resolve));
if (ws.protocol !== "foxglove.websocket.v1") fail(`subprotocol '${ws.protocol}', expected foxglove.websocket.v1`);

await waitFor(() => serverInfo && channels.has(imageTopic) && channels.has(plotTopic), "advertise");
if (firstOp !== "serverInfo") fail(`first message was '${firstOp}', expected serverInfo`);
if (!Array.isArray(serverInfo.capabilities) || serverInfo.capabilities.length !== 0) {
  fail(`serverInfo capabilities ${JSON.stringify(serverInfo.capabilities)}: a read-only server offers none`);
}
const img = channels.get(imageTopic), plot = channels.get(plotTopic);
for (const c of [img, plot]) {
  if (c.encoding !== "json" || c.schemaEncoding !== "jsonschema") fail(`${c.topic}: encoding ${c.encoding}/${c.schemaEncoding}`);
  JSON.parse(c.schema);
}
if (img.schemaName !== "foxglove.CompressedImage") fail(`${imageTopic} schema ${img.schemaName}`);
const required = JSON.stringify([...JSON.parse(img.schema).required].sort());
if (required !== JSON.stringify([...foxgloveSchemas.CompressedImage.required].sort())) fail(`${imageTopic} required ${required}`);

ws.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: 1, channelId: img.id }, { id: 2, channelId: plot.id }] }));
await waitFor(() => frames[1].length >= 5 && frames[2].length >= 5, "frames");

const nowNs = BigInt(Date.now()) * 1000000n;
for (const [sub, list] of Object.entries(frames)) {
  for (const f of list) {
    const age = nowNs - f.stamp;
    if (age < -5000000000n || age > 120000000000n) fail(`subscription ${sub}: timestamp ${f.stamp} is not near now (${nowNs})`);
  }
}
for (const { json } of frames[1]) {
  for (const k of foxgloveSchemas.CompressedImage.required) if (!(k in json)) fail(`image frame lacks '${k}'`);
  if (json.format !== "jpeg") fail(`image format ${json.format}`);
  const b = Buffer.from(json.data, "base64");
  if (b[0] !== 0xff || b[1] !== 0xd8 || b[b.length - 2] !== 0xff || b[b.length - 1] !== 0xd9) fail("image data is not a whole JPEG");
  let off = 2, size = null;
  while (off + 9 < b.length && !size) {
    const marker = b[off + 1];
    if (marker >= 0xc0 && marker <= 0xc2) size = [b.readUInt16BE(off + 7), b.readUInt16BE(off + 5)];
    off += 2 + b.readUInt16BE(off + 2);
  }
  if (!size || size[0] !== Number(width) || size[1] !== Number(height)) fail(`JPEG is ${size}, expected ${width}x${height}`);
}
for (const { json } of frames[2]) {
  if (!(plotKey in json)) fail(`plot message lacks '${plotKey}': ${JSON.stringify(json).slice(0, 200)}`);
  const walk = (v, p) => {
    if (v === null || (typeof v === "number" && !Number.isFinite(v))) fail(`plot ${p} is not a finite number`);
    if (typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, `${p}.${k}`);
  };
  walk(json, "");
}

// Requests it cannot serve: a status error each, and the connection stays up.
ws.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: 3, channelId: 999999 }] }));
ws.send(JSON.stringify({ op: "advertise", channels: [{ id: 1, topic: "/x", encoding: "json", schemaName: "x" }] }));
await waitFor(() => statuses.length >= 2, "status");
if (!statuses.some((s) => s.level === 2 && s.message.includes("no channel 999999"))) fail(`no error for an unknown channel: ${JSON.stringify(statuses)}`);
if (!statuses.some((s) => s.level === 2 && s.message.includes("read-only"))) fail(`no read-only error for advertise: ${JSON.stringify(statuses)}`);

// Unsubscribe: that subscription stops, the other goes on.
ws.send(JSON.stringify({ op: "unsubscribe", subscriptionIds: [1] }));
await sleep(500);  // frames already on the wire
const images = frames[1].length, plots = frames[2].length;
await sleep(1500);
if (frames[1].length !== images) fail(`${frames[1].length - images} image frame(s) after unsubscribe`);
if (frames[2].length <= plots) fail("the plot subscription stopped when the image one was unsubscribed");

clearTimeout(deadline);
ws.close();
console.log(`bridge_client.mjs: OK (${frames[1].length} images, ${frames[2].length} plots, ${channels.size} channels advertised)`);
