// `edgevla bag record|info|play|recover|export`.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <thread>

#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/foxglove.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "runtime/bag/player.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/cli/cli.hpp"
#include "runtime/node/host.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/heap.hpp"

namespace edgevla::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }
void catch_stop_signals() {
  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
}

int fail(const Status& s) {
  std::fprintf(stderr, "%s\n", s.message().c_str());
  return 1;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

std::string iso_time(std::uint64_t ns) {
  const std::time_t s = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  ::gmtime_r(&s, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  std::snprintf(out, sizeof out, "%s.%03uZ", buf, static_cast<unsigned>((ns / 1'000'000) % 1000));
  return out;
}

}  // namespace

int bag_record(const BagRecordOptions& o) {
  catch_stop_signals();
  configure_process_heap();  // records for hours
  BusOptions bo;
  bo.process_name = "bag record";
  auto bus = Bus::create(bo);
  if (!bus) return fail(bus.status());
  NodeHostOptions ho;
  ho.process_name = "bag record";
  NodeHost host(**bus, ho);
  NodeOptions n;
  n.name = "bag_record_" + std::to_string(::getpid());
  n.type = "bag_recorder";
  n.origin = "command line";
  const auto set = [&](const std::string& key, const std::string& yaml) {
    n.params[key] = ParamOverride{YAML::Load(yaml), "command line"};
  };
  set("output", "\"" + o.output + "\"");
  if (!o.topics.empty()) {
    std::string list = "[";
    for (const auto& t : o.topics) list += (list.size() > 1 ? ", \"" : "\"") + t + "\"";
    set("topics", list + "]");
  }
  set("all", o.all ? "true" : "false");
  set("compression", o.compression);
  set("max_queue_mb", std::to_string(o.max_queue_mb));
  set("lossless", o.lossless ? "true" : "false");
  set("foxglove", o.foxglove ? "true" : "false");
  set("foxglove_images", o.foxglove_images);
  set("split_mb", std::to_string(o.split_mb));
  set("split_s", std::to_string(o.split_s));
  auto added = host.add(n);
  if (!added) return fail(added.status());
  if (Status s = host.activate_all(); !s.is_ok()) return fail(s);
  const bool split = o.split_mb > 0 || o.split_s > 0;
  std::fprintf(stderr, "recording to %s%s (Ctrl-C stops)\n",
               split ? bag::part_path(o.output, 0).c_str() : o.output.c_str(), split ? " and further parts" : "");
  const std::int64_t until = o.duration_s > 0 ? steady_now_ns() + static_cast<std::int64_t>(o.duration_s * 1e9) : 0;
  while (!g_stop.load() && (until == 0 || steady_now_ns() < until)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const Status s = host.deactivate_all();
  host.shutdown();
  return s.is_ok() ? 0 : fail(s);
}

int bag_info(const std::string& path) {
  auto r = mcap::McapReader::open(path);
  if (!r) return fail(r.status());
  auto& reader = **r;
  const auto& s = reader.summary();
  const auto& st = s.statistics;
  const double duration = st.message_count ? static_cast<double>(st.message_end_time - st.message_start_time) / 1e9 : 0;
  std::printf("path:      %s\n", path.c_str());
  std::printf("size:      %s\n", human_bytes(static_cast<double>(s.file_size)).c_str());
  std::printf("library:   %s\n", s.header.library.c_str());
  std::printf("complete:  %s\n", s.has_summary ? "yes (summary present)"
                                 : s.complete  ? "data complete, summary missing (run `edgevla bag recover`)"
                                               : "NO: recording was cut short (run `edgevla bag recover`)");
  if (st.message_count) {
    std::printf("start:     %s\nend:       %s\nduration:  %.3f s\n", iso_time(st.message_start_time).c_str(),
                iso_time(st.message_end_time).c_str(), duration);
  }
  std::printf("messages:  %llu\nchunks:    %u", static_cast<unsigned long long>(st.message_count), st.chunk_count);
  for (const auto& [comp, bytes] : s.compression_bytes) {
    std::printf("  (%s: %s)", comp.c_str(), human_bytes(static_cast<double>(bytes)).c_str());
  }
  std::uint64_t uncompressed = 0;
  for (const auto& ci : s.chunk_indexes) uncompressed += ci.uncompressed_size;
  if (uncompressed) std::printf("  uncompressed %s", human_bytes(static_cast<double>(uncompressed)).c_str());
  std::printf("\ntopics:\n");
  // Columns as wide as the longest topic and type (Foxglove channels have long ones).
  int topic_w = 28, type_w = 14;
  for (const auto& [id, ch] : s.channels) {
    topic_w = std::max(topic_w, static_cast<int>(ch.topic.size()));
    const auto it = s.schemas.find(ch.schema_id);
    if (!ch.metadata.contains("edgevla.type") && it != s.schemas.end()) {
      type_w = std::max(type_w, static_cast<int>(it->second.name.size()));
    }
  }
  for (const auto& [id, ch] : s.channels) {
    const auto count = st.channel_message_counts.contains(id) ? st.channel_message_counts.at(id) : 0;
    const auto* schema = s.schemas.contains(ch.schema_id) ? &s.schemas.at(ch.schema_id) : nullptr;
    const bool edgevla = ch.metadata.contains("edgevla.type");
    const std::string type = edgevla ? ch.metadata.at("edgevla.type") + " v" +
                                           (ch.metadata.contains("edgevla.type_version") ? ch.metadata.at("edgevla.type_version") : "?")
                             : schema != nullptr ? schema->name
                                                 : "?";
    std::printf("  %-*s %-*s %8llu msgs  %8.2f Hz  (%s)\n", topic_w, ch.topic.c_str(), type_w, type.c_str(),
                static_cast<unsigned long long>(count), duration > 0 ? static_cast<double>(count) / duration : 0.0,
                ch.message_encoding.c_str());
  }
  std::string nodes;
  for (const auto& m : reader.metadata()) {
    if (m.name != "edgevla.node") continue;
    nodes += (nodes.empty() ? "" : ", ") + m.metadata.at("name") + " (" + m.metadata.at("type") + ")";
  }
  if (!nodes.empty()) std::printf("nodes:     %s\n", nodes.c_str());
  for (const auto& m : reader.metadata()) {
    if (m.name != "edgevla.recorder_drops") continue;
    std::printf("recorder:\n");
    for (const auto& [topic, line] : m.metadata) std::printf("  %-28s %s\n", topic.c_str(), line.c_str());
  }
  for (const auto& m : reader.metadata()) {
    if (m.name != "edgevla.foxglove_skipped") continue;
    std::printf("foxglove skipped:\n");
    for (const auto& [why, n] : m.metadata) std::printf("  %s x%s\n", why.c_str(), n.c_str());
  }
  for (const auto& i : reader.issues()) std::printf("issue:     at byte %llu: %s\n", static_cast<unsigned long long>(i.offset), i.message.c_str());
  return 0;
}

int bag_play(const BagPlayOptions& o) {
  catch_stop_signals();
  BusOptions bo;
  bo.process_name = "bag play";
  auto bus = Bus::create(bo);
  if (!bus) return fail(bus.status());
  bag::PlayOptions po;
  po.rate = o.rate;
  po.loop = o.loop;
  po.topics = o.topics;
  po.start_offset_s = o.start_offset_s;
  po.duration_s = o.duration_s;
  // Give subscribers in other processes a moment to connect before the first message.
  std::this_thread::sleep_for(std::chrono::milliseconds(o.warmup_ms));
  auto stats = bag::play(**bus, o.path, po, &g_stop);
  if (!stats) return fail(stats.status());
  for (const auto& i : stats->issues) std::fprintf(stderr, "issue: %s\n", i.c_str());
  std::printf("published %llu message(s)%s\n", static_cast<unsigned long long>(stats->published),
              stats->undecodable ? (" (" + std::to_string(stats->undecodable) + " undecodable skipped)").c_str() : "");
  // What a user recorded and did not get back is never silent: a damaged bag fails the play
  // unless skipping was asked for.
  if (!stats->issues.empty() || stats->undecodable > 0) {
    std::fprintf(stderr, "%s: '%s' is damaged (%zu issue(s), %llu undecodable record(s)); %s\n",
                 o.skip_damaged ? "warning" : "error", o.path.c_str(), stats->issues.size(),
                 static_cast<unsigned long long>(stats->undecodable),
                 o.skip_damaged ? "played what is intact (--skip-damaged)"
                                : "the rest was played; `edgevla bag recover` rewrites what is intact, "
                                  "--skip-damaged plays it without failing");
    return o.skip_damaged ? 0 : 1;
  }
  return 0;
}

int bag_recover(const std::string& in, const std::string& out) {
  auto r = mcap::McapReader::open(in);
  if (!r) return fail(r.status());
  auto w = mcap::McapWriter::open(out);
  if (!w) return fail(w.status());
  std::map<std::uint16_t, std::uint16_t> channel_map;
  std::uint64_t n = 0;
  Status s = (*r)->for_each_message([&](const mcap::MessageView& v) -> Status {
    const std::uint16_t channel = mcap::copy_channel(**w, v, channel_map);
    ++n;
    return (*w)->write_message(channel, v.record.sequence, v.record.log_time, v.record.publish_time, v.record.data);
  });
  if (!s.is_ok()) return fail(s);
  const auto issues = (*r)->issues();
  for (const auto& m : (*r)->metadata()) {
    if (Status ms = (*w)->write_metadata(m.name, m.metadata); !ms.is_ok()) return fail(ms);
  }
  for (const auto& a : (*r)->attachments()) {
    if (Status as = (*w)->write_attachment(a.record.name, a.record.media_type, a.record.log_time, a.record.data);
        !as.is_ok()) {
      return fail(as);
    }
  }
  if (Status cs = (*w)->close(); !cs.is_ok()) return fail(cs);
  for (const auto& i : issues) std::printf("issue: at byte %llu: %s\n", static_cast<unsigned long long>(i.offset), i.message.c_str());
  std::printf("recovered %llu message(s) into %s\n", static_cast<unsigned long long>(n), out.c_str());
  return 0;
}

int bag_export(const BagExportOptions& o) {
  if (!o.foxglove) {
    return fail(invalid_argument("bag export: say which format: --foxglove (the one there is) adds channels Foxglove "
                                 "decodes: camera frames as images, numbers as plots"));
  }
  bag::FoxgloveOptions fo;
  auto images = bag::parse_foxglove_images(o.images);
  if (!images) return fail(images.status());
  fo.images = *images;
  fo.jpeg_quality = o.jpeg_quality;
  auto stats = bag::export_foxglove(o.in, o.out, fo);
  if (!stats) return fail(stats.status());
  for (const auto& i : stats->issues) std::fprintf(stderr, "issue: %s\n", i.c_str());
  for (const auto& [why, n] : stats->skips) {
    std::fprintf(stderr, "skipped x%llu: %s\n", static_cast<unsigned long long>(n), why.c_str());
  }
  std::printf("copied %llu record(s), added %llu Foxglove message(s) to %s\n",
              static_cast<unsigned long long>(stats->copied), static_cast<unsigned long long>(stats->derived),
              o.out.c_str());
  if (stats->image_topics.empty()) {
    std::printf("no camera frames in %s: no image channels (record the camera topics to see pictures)\n",
                o.in.c_str());
  } else {
    for (const auto& t : stats->image_topics) std::printf("images: %s\n", t.c_str());
  }
  if (stats->undecodable > 0) {
    std::fprintf(stderr, "warning: %llu edgevla record(s) did not decode: copied as they were, not converted\n",
                 static_cast<unsigned long long>(stats->undecodable));
  }
  return 0;
}

}  // namespace edgevla::cli

namespace edgevla::cli {

int replay(const bag::ReplayOptions& options, const std::string& report_path) {
  auto report = bag::replay_node(options);
  if (!report) {
    std::fprintf(stderr, "replay: %s\n", report.status().message().c_str());
    return 2;
  }
  std::fputs(report->table().c_str(), stdout);
  if (!report_path.empty()) {
    std::FILE* f = std::fopen(report_path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "replay: cannot write the report to '%s'\n", report_path.c_str());
      return 2;
    }
    std::fputs(report->json().c_str(), f);
    std::fclose(f);
  }
  return report->passed() ? 0 : 1;
}

}  // namespace edgevla::cli
