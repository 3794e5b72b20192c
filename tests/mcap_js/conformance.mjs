#!/usr/bin/env node
// Checks an MCAP file written by edgevla against the manifest make_fixture wrote for it, using
// an independent reader: the npm package @mcap/core (versions pinned in package-lock.json).
//
//   node conformance.mjs <bag.mcap> <manifest.json>               whole-file checks
//   node conformance.mjs --truncated <bag.mcap> <manifest.json>   truncated-copy checks
//
// Whole file: reads it twice.
//  (a) McapIndexedReader (summary, footer, summary CRC): header; schemas; channels; statistics;
//      every chunk index (points at a Chunk record of that length, sizes, times, message index
//      offsets and length); every summary offset group (spans exactly the records of its
//      opcode); the DataEnd's data-section CRC (recomputed here); messages in log-time order
//      with chunk CRCs validated, per topic and reversed; metadata; attachments (CRCs checked).
//  (b) McapStreamReader, every record in file order fed in uneven pieces: Header first; data
//      section of Schema/Channel/Chunk(+Message)/MessageIndex/Metadata/Attachment; DataEnd; summary
//      records; SummaryOffsets; Footer with trailing magic and nothing after it. Messages,
//      metadata, attachments, message indexes and summary records are compared as in (a).
// Truncated: for each cut point in the manifest, a copy of the first N bytes read with
// McapStreamReader must yield exactly the messages of the chunks wholly inside it, intact, and
// no error; McapIndexedReader must refuse the copy with an error.
// Exits 1 with a message naming the first mismatch (or reader error), 2 on bad usage.
import { readFileSync } from "node:fs";
import { basename } from "node:path";

import { crc32 } from "@foxglove/crc";
import lz4 from "@foxglove/wasm-lz4";
import zstd from "@foxglove/wasm-zstd";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";

const Op = {
  Header: 0x01, Footer: 0x02, Schema: 0x03, Channel: 0x04, Message: 0x05, Chunk: 0x06,
  MessageIndex: 0x07, ChunkIndex: 0x08, Attachment: 0x09, AttachmentIndex: 0x0a,
  Statistics: 0x0b, Metadata: 0x0c, MetadataIndex: 0x0d, SummaryOffset: 0x0e, DataEnd: 0x0f,
};
const opName = Object.fromEntries(Object.entries(Op).map(([k, v]) => [v, k]));

class Mismatch extends Error {}

let context = "";
function fail(what) {
  throw new Mismatch(`${context ? context + ": " : ""}${what}`);
}
function expectEq(actual, expected, what) {
  if (actual !== expected) fail(`${what}: got ${fmt(actual)}, expected ${fmt(expected)}`);
}
function fmt(v) {
  return typeof v === "bigint" ? `${v}n` : JSON.stringify(v);
}

// FNV-1a 64 of bytes, as make_fixture computes it (hex, 16 digits).
function fnv1a64(bytes) {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < bytes.length; i++) {
    h ^= BigInt(bytes[i]);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}
// Faster for large payloads: the same hash with 32-bit halves.
function fnv1a64Fast(bytes) {
  // 64-bit multiply by 0x100000001b3 = (1 << 40) + 0x1b3, split into hi/lo 32-bit words.
  let hi = 0xcbf29ce4, lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    const loMul = lo * 0x1b3; // < 2^41, exact in a double
    const newLo = loMul >>> 0;
    const carry = Math.floor(loMul / 0x100000000);
    hi = (Math.imul(hi, 0x1b3) + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = newLo;
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}
// The fast version must agree with the plain one (and with the published FNV-1a test vectors).
function selfTestFnv() {
  const sample = Uint8Array.from({ length: 4099 }, (_, i) => (i * 2654435761) >>> 24);
  const vectors = [[new Uint8Array(0), "cbf29ce484222325"], [Uint8Array.of(0x61), "af63dc4c8601ec8c"], [sample, fnv1a64(sample)]];
  for (const [bytes, want] of vectors) {
    if (fnv1a64Fast(bytes) !== want || fnv1a64(bytes) !== want) throw new Error(`FNV-1a self-test failed for ${bytes.length} bytes`);
  }
}
function checkBytes(data, expected, what) {
  expectEq(data.byteLength, expected.length, `${what} length`);
  expectEq(fnv1a64Fast(data), expected.fnv1a64, `${what} FNV-1a 64`);
}

function expectMap(actual, expectedObj, what) {
  const exp = new Map(Object.entries(expectedObj));
  if (actual.size !== exp.size) fail(`${what}: ${actual.size} entries, expected ${exp.size} (${fmt([...actual])})`);
  for (const [k, v] of exp) {
    if (!actual.has(k)) fail(`${what}: key ${fmt(k)} missing`);
    expectEq(actual.get(k), v, `${what}[${fmt(k)}]`);
  }
}

// Decompression through WebAssembly builds of lz4/zstd (no native addons), with a check that
// the output has exactly the size the chunk declares.
const decompressCalls = { lz4: 0, zstd: 0 };
const decompressHandlers = {
  lz4: (buf, size) => sized("lz4", lz4(buf, Number(size)), size),
  zstd: (buf, size) => sized("zstd", zstd.decompress(buf, Number(size)), size),
};
function sized(kind, out, size) {
  decompressCalls[kind]++;
  if (BigInt(out.byteLength) !== size) {
    fail(`${kind} chunk decompressed to ${out.byteLength} bytes, its uncompressed_size says ${size}`);
  }
  return out;
}

class BufferReadable {
  constructor(buf) { this.buf = buf; }
  async size() { return BigInt(this.buf.byteLength); }
  async read(offset, size) {
    const end = offset + size;
    if (offset < 0n || size < 0n || end > BigInt(this.buf.byteLength)) {
      throw new Error(`read of ${size} bytes at ${offset} is outside the file (${this.buf.byteLength} bytes)`);
    }
    return this.buf.subarray(Number(offset), Number(end));
  }
}

// Record framing of [start, end): opcode and length of each record, which must tile the range.
function frames(buf, start, end, what) {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out = [];
  let pos = start;
  while (pos < end) {
    if (pos + 9 > end) fail(`${what}: a record prefix at ${pos} runs past the end (${end})`);
    const opcode = view.getUint8(pos);
    const length = view.getBigUint64(pos + 1, true);
    const next = pos + 9 + Number(length);
    if (next > end) fail(`${what}: ${opName[opcode] ?? opcode} record at ${pos} (length ${length}) runs past ${end}`);
    out.push({ offset: pos, opcode, length: next - pos });
    pos = next;
  }
  return out;
}

// Parses whole records from bytes with @mcap/core's stream reader (no magic expected).
function parseRecords(bytes, what) {
  const r = new McapStreamReader({ noMagicPrefix: true, validateCrcs: true, includeChunks: true, decompressHandlers });
  r.append(bytes);
  const out = [];
  try {
    for (let rec; (rec = r.nextRecord()); ) out.push(rec);
  } catch (e) {
    fail(`${what}: @mcap/core McapStreamReader: ${e.message}`);
  }
  if (r.bytesRemaining() !== 0) fail(`${what}: ${r.bytesRemaining()} bytes left unparsed`);
  return out;
}

function checkStatistics(s, m) {
  if (!s) fail("no Statistics record in the summary");
  const e = m.statistics;
  expectEq(s.messageCount, BigInt(e.message_count), "statistics.message_count");
  expectEq(s.schemaCount, e.schema_count, "statistics.schema_count");
  expectEq(s.channelCount, e.channel_count, "statistics.channel_count");
  expectEq(s.attachmentCount, e.attachment_count, "statistics.attachment_count");
  expectEq(s.metadataCount, e.metadata_count, "statistics.metadata_count");
  expectEq(s.chunkCount, e.chunk_count, "statistics.chunk_count");
  expectEq(s.messageStartTime, BigInt(e.message_start_time), "statistics.message_start_time");
  expectEq(s.messageEndTime, BigInt(e.message_end_time), "statistics.message_end_time");
  const counts = new Map([...s.channelMessageCounts].map(([k, v]) => [String(k), String(v)]));
  expectMap(counts, e.channel_message_counts, "statistics.channel_message_counts");
}

function checkSchema(s, e, what) {
  expectEq(s.id, e.id, `${what} id`);
  expectEq(s.name, e.name, `${what} name`);
  expectEq(s.encoding, e.encoding, `${what} encoding`);
  checkBytes(s.data, e.data, `${what} data`);
}
function checkChannel(c, e, what) {
  expectEq(c.id, e.id, `${what} id`);
  expectEq(c.topic, e.topic, `${what} topic`);
  expectEq(c.messageEncoding, e.message_encoding, `${what} message_encoding`);
  expectEq(c.schemaId, e.schema_id, `${what} schema_id`);
  expectMap(c.metadata, e.metadata, `${what} metadata`);
}
function checkMessage(msg, e, i, topicOf) {
  const what = `message #${i}`;
  expectEq(msg.channelId, e.channel_id, `${what} channel_id`);
  expectEq(topicOf(msg.channelId), e.topic, `${what} topic`);
  expectEq(msg.sequence, e.sequence, `${what} sequence`);
  expectEq(msg.logTime, BigInt(e.log_time), `${what} log_time`);
  expectEq(msg.publishTime, BigInt(e.publish_time), `${what} publish_time`);
  checkBytes(msg.data, e, `${what} data`);
}
// `expected`: manifest messages, each with its index in write order.
function checkMessages(got, expected, topicOf, what) {
  if (got.length !== expected.length) fail(`${what}: ${got.length} messages, expected ${expected.length}`);
  got.forEach((msg, i) => checkMessage(msg, expected[i], expected[i].index, topicOf));
}
function inWriteOrder(m) {
  return m.messages.map((e, index) => ({ ...e, index }));
}
// The order of McapIndexedReader.readMessages(): by log time; equal log times in file order.
function inLogTimeOrder(m) {
  return inWriteOrder(m).sort((a, b) => {
    const d = BigInt(a.log_time) - BigInt(b.log_time);
    return d < 0n ? -1 : d > 0n ? 1 : a.index - b.index;
  });
}
const sortedTimes = (times) => times.map(BigInt).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(",");
function checkMetadata(got, m, what) {
  expectEq(got.length, m.metadata.length, `${what} count`);
  got.forEach((r, i) => {
    expectEq(r.name, m.metadata[i].name, `${what} #${i} name`);
    expectMap(r.metadata, m.metadata[i].metadata, `${what} #${i} (${r.name}) key/values`);
  });
}
function checkAttachments(got, m, what) {
  expectEq(got.length, m.attachments.length, `${what} count`);
  got.forEach((a, i) => {
    const e = m.attachments[i];
    expectEq(a.name, e.name, `${what} #${i} name`);
    expectEq(a.mediaType, e.media_type, `${what} #${i} media_type`);
    expectEq(a.logTime, BigInt(e.log_time), `${what} #${i} log_time`);
    expectEq(a.createTime, BigInt(e.create_time), `${what} #${i} create_time`);
    checkBytes(a.data, e, `${what} #${i} (${a.name}) data`);
  });
}

// (a) -----------------------------------------------------------------------------------------
async function indexedChecks(buf, m) {
  context = "McapIndexedReader";
  const reader = await McapIndexedReader.Initialize({ readable: new BufferReadable(buf), decompressHandlers });
  expectEq(reader.header.profile, m.profile, "header.profile");
  expectEq(reader.header.library, m.library, "header.library");

  // Footer, summary CRC (Initialize verified it when non-zero: insist that it is there).
  const f = reader.footer;
  if (f.summaryCrc === 0) fail("footer.summary_crc is 0, so the summary CRC cannot be validated");
  const footerOffset = buf.byteLength - 37;
  expectEq(f.summaryStart, reader.dataEndOffset + 13n, "footer.summary_start (right after DataEnd)");
  if (!(f.summaryOffsetStart > f.summaryStart && f.summaryOffsetStart < BigInt(footerOffset))) {
    fail(`footer.summary_offset_start ${f.summaryOffsetStart} not inside the summary [${f.summaryStart}, ${footerOffset})`);
  }

  // Schemas and channels from the summary.
  expectEq(reader.schemasById.size, m.schemas.length, "number of summary schemas");
  for (const e of m.schemas) {
    const s = reader.schemasById.get(e.id);
    if (!s) fail(`schema ${e.id} (${e.name}) missing from the summary`);
    checkSchema(s, e, `schema ${e.id}`);
  }
  expectEq(reader.channelsById.size, m.channels.length, "number of summary channels");
  for (const e of m.channels) {
    const c = reader.channelsById.get(e.id);
    if (!c) fail(`channel ${e.id} (${e.topic}) missing from the summary`);
    checkChannel(c, e, `channel ${e.id}`);
    if (c.schemaId !== 0 && !reader.schemasById.has(c.schemaId)) fail(`channel ${e.id} names unknown schema ${c.schemaId}`);
  }
  checkStatistics(reader.statistics, m);

  // Messages in log-time order, chunk CRCs validated; forwards and backwards.
  const topicOf = (id) => reader.channelsById.get(id)?.topic;
  const expected = inLogTimeOrder(m);
  const all = [];
  for await (const msg of reader.readMessages({ validateCrcs: true })) all.push(msg);
  checkMessages(all, expected, topicOf, "readMessages() (log-time order)");
  const reversed = [];
  for await (const msg of reader.readMessages({ validateCrcs: true, reverse: true })) reversed.push(msg);
  checkMessages(reversed.reverse(), expected, topicOf, "readMessages({reverse: true}) reversed");
  for (const [topic, n] of Object.entries(m.message_count_by_topic)) {
    let count = 0;
    for await (const msg of reader.readMessages({ topics: [topic] })) {
      expectEq(topicOf(msg.channelId), topic, `readMessages({topics: [${topic}]}) topic`);
      count++;
    }
    expectEq(count, n, `messages on ${topic}`);
  }

  // Metadata and attachments through their indexes.
  expectEq(reader.metadataIndexes.length, m.metadata.length, "MetadataIndex records");
  reader.metadataIndexes.forEach((mi, i) => expectEq(mi.name, m.metadata[i].name, `MetadataIndex #${i} name`));
  const meta = [];
  for await (const r of reader.readMetadata()) meta.push(r);
  checkMetadata(meta, m, "readMetadata()");
  expectEq(reader.attachmentIndexes.length, m.attachments.length, "AttachmentIndex records");
  reader.attachmentIndexes.forEach((ai, i) => {
    const e = m.attachments[i];
    expectEq(ai.name, e.name, `AttachmentIndex #${i} name`);
    expectEq(ai.mediaType, e.media_type, `AttachmentIndex #${i} media_type`);
    expectEq(ai.dataSize, BigInt(e.length), `AttachmentIndex #${i} data_size`);
    expectEq(ai.logTime, BigInt(e.log_time), `AttachmentIndex #${i} log_time`);
  });
  const att = [];
  for await (const a of reader.readAttachments({ validateCrcs: true })) att.push(a);
  checkAttachments(att, m, "readAttachments()");

  // Summary section layout: groups as the summary offsets say, then only SummaryOffset records.
  const summaryStart = Number(f.summaryStart);
  const offsetStart = Number(f.summaryOffsetStart);
  const summaryFrames = frames(buf, summaryStart, offsetStart, "summary section");
  const offsetFrames = frames(buf, offsetStart, footerOffset, "summary offset section");
  for (const fr of offsetFrames) {
    if (fr.opcode !== Op.SummaryOffset) fail(`${opName[fr.opcode] ?? fr.opcode} record at ${fr.offset} in the summary offset section`);
  }
  expectEq(offsetFrames.length, reader.summaryOffsetsByOpcode.size, "SummaryOffset records (one per opcode)");
  const opcodesInSummary = new Set(summaryFrames.map((fr) => fr.opcode));
  for (const op of opcodesInSummary) {
    const so = reader.summaryOffsetsByOpcode.get(op);
    if (!so) fail(`summary holds ${opName[op]} records but no SummaryOffset points at them`);
    const start = Number(so.groupStart);
    const end = start + Number(so.groupLength);
    const inGroup = summaryFrames.filter((fr) => fr.opcode === op);
    expectEq(start, inGroup[0].offset, `SummaryOffset(${opName[op]}).group_start`);
    expectEq(end, inGroup.at(-1).offset + inGroup.at(-1).length, `SummaryOffset(${opName[op]}) group end`);
    const parsed = parseRecords(buf.subarray(start, end), `${opName[op]} group`);
    expectEq(parsed.length, inGroup.length, `records in the ${opName[op]} group`);
    for (const r of parsed) expectEq(r.type, opName[op], `record type in the ${opName[op]} group`);
  }
  for (const op of reader.summaryOffsetsByOpcode.keys()) {
    if (!opcodesInSummary.has(op)) fail(`SummaryOffset for ${opName[op]} but the summary has no such records`);
  }
  for (const op of [Op.Schema, Op.Channel, Op.Statistics, Op.ChunkIndex, Op.AttachmentIndex, Op.MetadataIndex]) {
    if (!opcodesInSummary.has(op)) fail(`summary has no ${opName[op]} records`);
  }

  // Chunk indexes against the chunks and message indexes they point at.
  const chunkIndexes = reader.chunkIndexes;
  expectEq(chunkIndexes.length, m.statistics.chunk_count, "number of ChunkIndex records");
  let indexed = 0n;
  let prevEnd = 0;
  chunkIndexes.forEach((ci, k) => {
    const what = `chunk index #${k} (chunk at ${ci.chunkStartOffset})`;
    expectEq(ci.compression, m.compression, `${what} compression`);
    const start = Number(ci.chunkStartOffset);
    if (start < prevEnd) fail(`${what} overlaps the previous chunk's message indexes (ending at ${prevEnd})`);
    const [chunkFrame] = frames(buf, start, start + 9 + Number(buf.readBigUInt64LE(start + 1)), what);
    expectEq(chunkFrame.opcode, Op.Chunk, `${what}: opcode at chunk_start_offset`);
    expectEq(BigInt(chunkFrame.length), ci.chunkLength, `${what} chunk_length`);
    const chunkRecs = parseRecords(buf.subarray(start, start + chunkFrame.length), what);
    const chunk = chunkRecs[0];
    expectEq(chunk.type, "Chunk", `${what} record type`);
    expectEq(chunk.compression, m.compression, `${what} Chunk.compression`);
    expectEq(BigInt(chunk.records.byteLength), ci.compressedSize, `${what} compressed_size`);
    expectEq(chunk.uncompressedSize, ci.uncompressedSize, `${what} uncompressed_size`);
    if (chunk.uncompressedCrc === 0) fail(`${what} has no uncompressed CRC`);
    expectEq(chunk.messageStartTime, ci.messageStartTime, `${what} message_start_time`);
    expectEq(chunk.messageEndTime, ci.messageEndTime, `${what} message_end_time`);
    const msgs = chunkRecs.filter((r) => r.type === "Message");
    if (msgs.length === 0) fail(`${what} holds no messages`);
    let lo = msgs[0].logTime, hi = msgs[0].logTime;
    for (const x of msgs) {
      if (x.logTime < lo) lo = x.logTime;
      if (x.logTime > hi) hi = x.logTime;
    }
    expectEq(chunk.messageStartTime, lo, `${what} message_start_time vs its messages`);
    expectEq(chunk.messageEndTime, hi, `${what} message_end_time vs its messages`);

    const miStart = start + chunkFrame.length;
    const miEnd = miStart + Number(ci.messageIndexLength);
    const miFrames = frames(buf, miStart, miEnd, `${what} message indexes`);
    const miRecs = parseRecords(buf.subarray(miStart, miEnd), `${what} message indexes`);
    expectEq(miRecs.length, ci.messageIndexOffsets.size, `${what}: MessageIndex records vs message_index_offsets`);
    const perChannel = new Map();
    for (const x of msgs) perChannel.set(x.channelId, [...(perChannel.get(x.channelId) ?? []), x.logTime]);
    miRecs.forEach((mi, n) => {
      expectEq(mi.type, "MessageIndex", `${what} message index record type`);
      expectEq(ci.messageIndexOffsets.get(mi.channelId), BigInt(miFrames[n].offset),
        `${what} message_index_offsets[${mi.channelId}]`);
      const times = perChannel.get(mi.channelId);
      if (!times) fail(`${what}: MessageIndex for channel ${mi.channelId}, which has no messages in the chunk`);
      expectEq(sortedTimes(mi.records.map(([t]) => t)), sortedTimes(times), `${what}: MessageIndex(${mi.channelId}) log times`);
      indexed += BigInt(mi.records.length);
    });
    expectEq(perChannel.size, miRecs.length, `${what}: channels with messages vs MessageIndex records`);
    prevEnd = miEnd;
  });
  expectEq(indexed, BigInt(m.total_messages), "messages listed in message indexes");
  if (prevEnd > Number(reader.dataEndOffset)) fail("chunk/message index data runs past the DataEnd record");

  // Data-section CRC, last (the reader's own CRC checks above say more about a bad byte):
  // every byte before the DataEnd record.
  if (reader.dataSectionCrc === undefined) fail("DataEnd.data_section_crc is 0 (not available)");
  expectEq(reader.dataSectionCrc, crc32(buf.subarray(0, Number(reader.dataEndOffset))), "DataEnd.data_section_crc");
  return { chunks: chunkIndexes.length, summaryGroups: reader.summaryOffsetsByOpcode.size };
}

// Feeds bytes to a stream reader in uneven pieces (1 byte, odd sizes, then 1 MiB), draining it
// after each; returns the records read.
function streamRecords(reader, bytes, onRecord) {
  const sizes = [1, 7, 8, 13, 64, 4093, 65537];
  let pos = 0;
  let k = 0;
  while (pos < bytes.byteLength) {
    const n = k < sizes.length ? sizes[k++] : 1 << 20;
    reader.append(bytes.subarray(pos, Math.min(pos + n, bytes.byteLength)));
    pos += n;
    for (let rec; (rec = reader.nextRecord()); ) onRecord(rec);
  }
}

// (b) -----------------------------------------------------------------------------------------
function streamChecks(buf, m) {
  context = "McapStreamReader";
  const reader = new McapStreamReader({ includeChunks: true, validateCrcs: true, decompressHandlers });
  const seen = {};
  const schemas = new Map(), channels = new Map();
  const messages = [], metadata = [], attachments = [];
  const summary = { Schema: [], Channel: [], Statistics: [], ChunkIndex: [], AttachmentIndex: [], MetadataIndex: [] };
  let phase = "start"; // start -> data -> summary -> offsets -> done
  let chunk = null; // messages of the chunk being read, and its message indexes
  let dataEnd, footer;
  const closeChunk = () => {
    if (!chunk) return;
    const channelsInChunk = new Set(chunk.messages.map((x) => x.channelId));
    expectEq(chunk.indexes.length, channelsInChunk.size, `MessageIndex records after chunk #${chunk.n}`);
    chunk = null;
  };
  streamRecords(reader, buf, (rec) => {
    seen[rec.type] = (seen[rec.type] ?? 0) + 1;
    if (phase === "start") {
      if (rec.type !== "Header") fail(`first record is ${rec.type}, not Header`);
      expectEq(rec.profile, m.profile, "header.profile");
      expectEq(rec.library, m.library, "header.library");
      phase = "data";
      return;
    }
    if (phase === "data") {
      switch (rec.type) {
        case "Chunk":
          closeChunk();
          expectEq(rec.compression, m.compression, `chunk #${seen.Chunk} compression`);
          chunk = { n: seen.Chunk, messages: [], indexes: [], inner: true };
          return;
        case "Schema":
        case "Channel":
        case "Message":
          if (!chunk || !chunk.inner) fail(`${rec.type} record outside a chunk (edgevla writes them in chunks)`);
          if (rec.type === "Schema") schemas.set(rec.id, rec);
          if (rec.type === "Channel") {
            if (rec.schemaId !== 0 && !schemas.has(rec.schemaId)) fail(`channel ${rec.id} before its schema ${rec.schemaId}`);
            channels.set(rec.id, rec);
          }
          if (rec.type === "Message") {
            messages.push(rec);
            chunk.messages.push(rec);
          }
          return;
        case "MessageIndex": {
          if (!chunk) fail("MessageIndex record not after a chunk");
          chunk.inner = false;
          const times = chunk.messages.filter((x) => x.channelId === rec.channelId).map((x) => x.logTime);
          expectEq(sortedTimes(rec.records.map(([t]) => t)), sortedTimes(times),
            `MessageIndex(${rec.channelId}) after chunk #${chunk.n}: log times`);
          chunk.indexes.push(rec);
          return;
        }
        case "Metadata":
          closeChunk();
          metadata.push(rec);
          return;
        case "Attachment":
          closeChunk();
          attachments.push(rec);
          return;
        case "DataEnd":
          closeChunk();
          dataEnd = rec;
          phase = "summary";
          return;
        default:
          fail(`${rec.type} record in the data section`);
      }
    }
    if (phase === "summary" && rec.type in summary) {
      summary[rec.type].push(rec);
      return;
    }
    if ((phase === "summary" || phase === "offsets") && rec.type === "SummaryOffset") {
      phase = "offsets";
      return;
    }
    if ((phase === "summary" || phase === "offsets") && rec.type === "Footer") {
      footer = rec;
      phase = "done";
      return;
    }
    fail(`unexpected ${rec.type} record (${phase} section)`);
  });
  if (!reader.done()) fail(`reader not done at end of file (stopped in the ${phase} section)`);
  expectEq(reader.bytesRemaining(), 0, "bytes after the footer's magic");
  expectEq(phase, "done", "last section read");
  expectEq(seen.Header, 1, "Header records");
  expectEq(seen.DataEnd, 1, "DataEnd records");
  expectEq(seen.Footer, 1, "Footer records");
  if (!(seen.SummaryOffset > 0)) fail("no SummaryOffset records");
  expectEq(seen.Chunk, m.statistics.chunk_count, "Chunk records");
  if (!(seen.MessageIndex >= seen.Chunk)) fail(`only ${seen.MessageIndex} MessageIndex records for ${seen.Chunk} chunks`);

  // DataEnd's CRC covers every byte before the DataEnd record, which ends at summary_start.
  const dataEndOffset = Number(footer.summaryStart) - 13;
  expectEq(buf[dataEndOffset], Op.DataEnd, "opcode at footer.summary_start - 13");
  if (dataEnd.dataSectionCrc === 0) fail("DataEnd.data_section_crc is 0");
  expectEq(dataEnd.dataSectionCrc, crc32(buf.subarray(0, dataEndOffset)), "DataEnd.data_section_crc");
  const summaryCrc = crc32(buf.subarray(Number(footer.summaryStart), buf.byteLength - 8 - 4));
  expectEq(footer.summaryCrc, summaryCrc, "Footer.summary_crc");

  // Data section contents.
  for (const e of m.schemas) {
    const s = schemas.get(e.id);
    if (!s) fail(`schema ${e.id} (${e.name}) never appears in the data section`);
    checkSchema(s, e, `data-section schema ${e.id}`);
  }
  for (const e of m.channels) {
    const c = channels.get(e.id);
    if (!c) {
      if (m.messages.some((x) => x.channel_id === e.id)) fail(`channel ${e.id} (${e.topic}) has messages but no Channel record in the data section`);
      continue; // a channel without messages needs only its summary record
    }
    checkChannel(c, e, `data-section channel ${e.id}`);
  }
  const topicOf = (id) => channels.get(id)?.topic;
  checkMessages(messages, inWriteOrder(m), topicOf, "messages in file order");
  checkMetadata(metadata, m, "Metadata records");
  checkAttachments(attachments, m, "Attachment records");

  // Summary records.
  expectEq(summary.Schema.length, m.schemas.length, "summary Schema records");
  summary.Schema.forEach((s) => checkSchema(s, m.schemas.find((e) => e.id === s.id) ?? fail(`unknown schema ${s.id}`), `summary schema ${s.id}`));
  expectEq(summary.Channel.length, m.channels.length, "summary Channel records");
  summary.Channel.forEach((c) => checkChannel(c, m.channels.find((e) => e.id === c.id) ?? fail(`unknown channel ${c.id}`), `summary channel ${c.id}`));
  expectEq(summary.Statistics.length, 1, "summary Statistics records");
  checkStatistics(summary.Statistics[0], m);
  expectEq(summary.ChunkIndex.length, m.statistics.chunk_count, "summary ChunkIndex records");
  expectEq(summary.AttachmentIndex.length, m.attachments.length, "summary AttachmentIndex records");
  expectEq(summary.MetadataIndex.length, m.metadata.length, "summary MetadataIndex records");
  return { records: Object.values(seen).reduce((a, b) => a + b, 0) };
}

// --truncated ---------------------------------------------------------------------------------
async function truncatedChecks(buf, m) {
  const notes = [];
  for (const cut of m.truncations) {
    context = `truncated to ${cut.bytes} bytes (${cut.what})`;
    if (!(cut.bytes < buf.byteLength)) fail(`cut point ${cut.bytes} is not inside the ${buf.byteLength}-byte file`);
    const part = buf.subarray(0, cut.bytes);
    // Tolerant stream read: records come out while whole; the cut-off tail is simply not yet
    // parseable, so nextRecord() returns undefined and done() stays false (no error).
    const reader = new McapStreamReader({ validateCrcs: true, decompressHandlers });
    const messages = [];
    const channels = new Map();
    try {
      streamRecords(reader, part, (rec) => {
        if (rec.type === "Channel") channels.set(rec.id, rec);
        if (rec.type === "Message") messages.push(rec);
      });
    } catch (e) {
      if (e instanceof Mismatch) throw e;
      fail(`McapStreamReader threw on the truncated copy: ${e.message}`);
    }
    if (reader.done()) fail("McapStreamReader says the truncated copy is a complete file");
    expectEq(messages.length, cut.messages, "whole messages read");
    messages.forEach((msg, i) => checkMessage(msg, m.messages[i], i, (id) => channels.get(id)?.topic));
    // The indexed reader needs the footer and summary, so it must refuse the copy cleanly.
    let refused;
    try {
      const r = await McapIndexedReader.Initialize({ readable: new BufferReadable(part), decompressHandlers });
      for await (const _ of r.readMessages()) void _;
    } catch (e) {
      refused = e;
    }
    if (!refused) fail("McapIndexedReader accepted the truncated copy");
    if (!(refused instanceof Error) || !refused.message) fail(`McapIndexedReader failed without an Error message: ${refused}`);
    notes.push(`  ${cut.what}: ${cut.bytes} bytes -> ${messages.length} messages intact, ` +
      `${reader.bytesRemaining()} bytes pending; indexed reader: "${refused.message}"`);
  }
  return notes;
}

async function main() {
  const args = process.argv.slice(2);
  const truncated = args[0] === "--truncated";
  if (truncated) args.shift();
  if (args.length !== 2) {
    console.error("usage: node conformance.mjs [--truncated] <bag.mcap> <manifest.json>");
    process.exit(2);
  }
  const [bagPath, manifestPath] = args;
  const buf = readFileSync(bagPath);
  const m = JSON.parse(readFileSync(manifestPath, "utf8"));
  selfTestFnv();
  await lz4.isLoaded;
  await zstd.isLoaded;
  const name = basename(bagPath);
  expectEq(String(buf.byteLength), m.file_size, `${name} size`);
  const t0 = performance.now();
  if (truncated) {
    const notes = await truncatedChecks(buf, m);
    console.log(`conformance.mjs --truncated ${name}: OK (${m.truncations.length} cut points, ` +
      `${(performance.now() - t0).toFixed(0)} ms)\n${notes.join("\n")}`);
    return;
  }
  const a = await indexedChecks(buf, m);
  const b = streamChecks(buf, m);
  if (m.compression !== "" && decompressCalls[m.compression] === 0) fail(`no ${m.compression} chunk was decompressed`);
  console.log(`conformance.mjs ${name}: OK (${m.total_messages} messages, ${a.chunks} chunks, ` +
    `${a.summaryGroups} summary groups, ${b.records} records streamed, compression ${fmt(m.compression)}, ` +
    `${(performance.now() - t0).toFixed(0)} ms)`);
}

main().catch((e) => {
  if (e instanceof Mismatch) {
    console.error(`conformance.mjs ${process.argv.slice(2).join(" ")}: MISMATCH: ${e.message}`);
  } else {
    console.error(`conformance.mjs ${process.argv.slice(2).join(" ")}: READER ERROR${context ? ` (${context})` : ""}: ${e?.stack ?? e}`);
  }
  process.exit(1);
});
