// `edgevla bag report`: the numbers of a recorded pipeline run, read from the messages alone.
//
// Stage compute times come from the fields the stages write (preprocess_ms, backbone_ms,
// action_head_ms, carried forward on ActionChunk); the camera's own time is its hop stamp minus
// the capture stamp. End-to-end latency comes from the header: the capture stamp the chunk
// derives from against the time the actuation node received it (chunk_received_ns on the
// first JointCommand executing it) and published that command. Framework overhead is what is
// left of camera->actuation once the stages' compute is taken out: bus hand-overs, executor
// wake-ups, queueing. Drops and memory come from the last NodeStatus of each node.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/cli/cli.hpp"
#include "runtime/cli/report_html.hpp"

namespace edgevla::cli {
namespace {

using nlohmann::json;

struct Series {
  std::vector<double> values;
  void add(double v) { values.push_back(v); }
  double quantile(double q) const {
    if (values.empty()) return NAN;
    std::vector<double> s = values;
    std::sort(s.begin(), s.end());
    const double pos = q * static_cast<double>(s.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
  }
  double mean() const {
    if (values.empty()) return NAN;
    double sum = 0;
    for (double v : values) sum += v;
    return sum / static_cast<double>(values.size());
  }
  json to_json() const {
    if (values.empty()) return json{{"n", 0}};
    return json{{"n", values.size()}, {"p50", quantile(0.5)}, {"p99", quantile(0.99)},
                {"mean", mean()}, {"max", *std::max_element(values.begin(), values.end())}};
  }
};

struct Chunk {
  std::int64_t source_ns = 0;
  std::int64_t callback_ns = 0;  // the action head's callback start
  std::vector<TraceHop> trace;
  std::map<std::string, double> stage_ms;  // preprocess_ms, backbone_ms, action_head_ms
  std::map<std::string, double> all_ms;    // every "<stage>_ms" field the chunk carries (--html)
  double prefix_wait_ms = 0;  // of action_head_ms's callback: waiting for the backbone's device work
  // Of backbone_ms: the backbone's device work while its prefix travelled to another process and the
  // head's callback began (hidden delivery: not framework overhead).
  double prefix_overlap_ms = 0;
};

// A vector over time (commands, state) for the HTML plots: the first kMaxDims values.
struct Sample {
  std::int64_t log_ns = 0;
  std::vector<double> values;
};
constexpr std::size_t kMaxDims = 8;

// The first values of a 1-D f32/f64 tensor, and its length; empty for anything else.
std::vector<double> head_values(const Tensor* t, std::int64_t& length) {
  std::vector<double> out;
  length = 0;
  if (t == nullptr || t->rank() != 1 || !t->is_contiguous() || !t->device().is_cpu()) return out;
  length = t->numel();
  const auto n = static_cast<std::size_t>(std::min<std::int64_t>(length, kMaxDims));
  for (std::size_t i = 0; i < n; ++i) {
    if (t->dtype() == DType::kF32) out.push_back(t->data<float>()[i]);
    if (t->dtype() == DType::kF64) out.push_back(t->data<double>()[i]);
  }
  return out;
}

std::optional<double> number(const Message& m, std::string_view name) {
  auto v = m.number_field(name);
  return v ? std::optional<double>(*v) : std::nullopt;
}

std::optional<std::int64_t> integer(const Message& m, std::string_view name) {
  auto v = m.int_field(name);
  return v ? std::optional<std::int64_t>(*v) : std::nullopt;
}

std::string text(const Message& m, std::string_view name) {
  auto v = m.string_field(name);
  return v ? *v : std::string();
}

std::string megabytes(std::int64_t bytes) {
  if (bytes < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return b;
}

std::string ms(double v) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, v < 10 ? "%.3f" : "%.1f", v);
  return b;
}


// A chunk that reached the actuation node: when it arrived, and when its first command left.
struct Executed {
  std::int64_t received_ns = 0, command_ns = 0;
  std::string node;  // the actuation node
};

// The bars of one chunk's path (the last four hops of its trace: camera, preprocess, backbone,
// action head), in ms after its capture. Each model stage: the delivery from the previous publish
// to its callback start (when the bag has the stage's input with its callback stamp), time in the
// callback outside the stage's compute, then the compute, which ends at the publish. Then the
// actuation node's delivery and its wait for the control tick, when the chunk was executed.
std::vector<HtmlSpan> chunk_timeline(const Chunk& c, const std::map<std::int64_t, std::int64_t>& observation_cb,
                                     const std::map<std::int64_t, std::int64_t>& prefix_cb, const Executed* x) {
  using Kind = HtmlSpan::Kind;
  std::vector<HtmlSpan> out;
  const auto n = c.trace.size();
  auto rel = [&](std::int64_t ns) { return (ns - c.source_ns) * 1e-6; };
  out.push_back({c.trace[n - 4].node, Kind::kCompute, 0, rel(c.trace[n - 4].stamp_ns)});
  const std::map<std::int64_t, std::int64_t>* callbacks[] = {&observation_cb, &prefix_cb, nullptr};
  const char* fields[] = {"preprocess_ms", "backbone_ms", "action_head_ms"};
  for (std::size_t i = 0; i < 3; ++i) {
    const TraceHop& hop = c.trace[n - 3 + i];
    const std::int64_t prev = c.trace[n - 4 + i].stamp_ns;
    std::int64_t cb = 0;
    if (callbacks[i] == nullptr) {
      cb = c.callback_ns;
    } else if (auto it = callbacks[i]->find(c.source_ns); it != callbacks[i]->end()) {
      cb = it->second;
    }
    const auto ms = c.stage_ms.find(fields[i]);
    const double end = rel(hop.stamp_ns);
    const double compute_start = ms == c.stage_ms.end() ? end : std::max(cb != 0 ? rel(cb) : rel(prev), end - ms->second);
    if (cb != 0) {
      out.push_back({hop.node, Kind::kDelivery, rel(prev), rel(cb)});
      if (compute_start > rel(cb)) out.push_back({hop.node, Kind::kInNode, rel(cb), compute_start});
    } else if (compute_start > rel(prev)) {
      out.push_back({hop.node, Kind::kDelivery, rel(prev), compute_start});
    }
    if (ms != c.stage_ms.end()) out.push_back({hop.node, Kind::kCompute, compute_start, end});
  }
  if (x != nullptr) {
    out.push_back({x->node, Kind::kDelivery, rel(c.trace.back().stamp_ns), rel(x->received_ns)});
    if (x->command_ns > x->received_ns) out.push_back({x->node, Kind::kWait, rel(x->received_ns), rel(x->command_ns)});
  }
  return out;
}

}  // namespace

int bag_report(const BagReportOptions& o) {
  auto reader = mcap::McapReader::open(o.path);
  if (!reader) {
    std::fprintf(stderr, "%s\n", reader.status().message().c_str());
    return 1;
  }
  std::map<std::pair<std::string, std::uint64_t>, Chunk> chunks;  // (topic, seq)
  std::map<std::string, std::uint64_t> counts;                      // per message type
  std::map<std::string, Message> last_status;                       // per node
  std::vector<Message> commands;
  std::int64_t first_ns = 0, last_ns = 0;
  // Callback starts of the stages, by the capture stamp they derive from.
  std::map<std::int64_t, std::int64_t> observation_cb, prefix_cb;
  // For the plots: commanded positions, the robot's state (RobotState, or the observations'
  // state when no RobotState was recorded), and how wide each is.
  std::vector<Sample> command_samples, robot_state, observed_state;
  std::int64_t command_dims = 0, robot_dims = 0, observed_dims = 0;
  std::string observed_name;

  static const std::set<std::string, std::less<>> kUsed = {"ActionChunk", "JointCommand", "NodeStatus",
                                                           "Observation", "BackboneOutput", "RobotState"};
  Status scan = (*reader)->for_each_message([&](const mcap::MessageView& v) -> Status {
    const std::string type = v.schema != nullptr ? v.schema->name : std::string();
    ++counts[type];
    const auto t = static_cast<std::int64_t>(v.record.log_time);
    if (first_ns == 0 || t < first_ns) first_ns = t;
    last_ns = std::max(last_ns, t);
    if (!kUsed.contains(type)) return Status::ok();  // images and the like: counted, not decoded
    auto decoded = bag::decode_record(v);
    if (!decoded) return Status::ok();  // counted by `bag info`; a report uses what decodes
    Message& m = *decoded;
    if (m.type() == "ActionChunk") {
      Chunk c;
      c.source_ns = m.header().source_stamp_ns;
      c.trace = m.header().trace;
      c.callback_ns = m.header().callback_stamp_ns;
      for (const char* f : {"preprocess_ms", "backbone_ms", "action_head_ms"}) {
        if (auto x = number(m, f)) c.stage_ms[f] = *x;
      }
      if (auto x = number(m, "prefix_wait_ms")) c.prefix_wait_ms = *x;
      if (auto x = number(m, "prefix_overlap_ms")) c.prefix_overlap_ms = *x;
      for (const auto& [key, value] : m.fields()) {
        if (key == "prefix_wait_ms" || key == "prefix_overlap_ms") continue;  // parts of backbone_ms, not stages
        if (key.ends_with("_ms") && key.size() > 3) {
          if (auto x = number(m, key)) c.all_ms[key.substr(0, key.size() - 3)] = *x;
        }
      }
      chunks[{m.header().topic, m.header().seq}] = std::move(c);
    } else if (m.type() == "Observation") {
      if (m.header().callback_stamp_ns != 0) observation_cb[m.header().source_stamp_ns] = m.header().callback_stamp_ns;
      if (!o.html_path.empty()) {
        const char* name = m.tensor("state_raw") != nullptr ? "state_raw" : "state";
        auto values = head_values(m.tensor(name), observed_dims);
        if (!values.empty()) observed_state.push_back({t, std::move(values)});
        observed_name = name;
      }
    } else if (m.type() == "RobotState") {
      auto values = head_values(m.tensor("position"), robot_dims);
      if (!values.empty()) robot_state.push_back({t, std::move(values)});
    } else if (m.type() == "BackboneOutput") {
      if (m.header().callback_stamp_ns != 0) prefix_cb[m.header().source_stamp_ns] = m.header().callback_stamp_ns;
    } else if (m.type() == "JointCommand") {
      auto values = head_values(m.tensor("position"), command_dims);
      if (!values.empty()) command_samples.push_back({t, std::move(values)});
      m.clear_tensors();
      commands.push_back(std::move(m));
    } else if (m.type() == "NodeStatus") {
      if (auto node = m.string_field("node")) last_status[*node] = std::move(m);
    }
    return Status::ok();
  });
  if (!scan.is_ok()) {
    std::fprintf(stderr, "%s\n", scan.message().c_str());
    return 1;
  }

  // Per chunk: the camera's own time, each stage's compute, the path up to the action head.
  Series camera, preprocess, backbone, head, to_actions;
  for (const auto& [key, c] : chunks) {
    if (!c.trace.empty() && c.source_ns > 0) camera.add((c.trace.front().stamp_ns - c.source_ns) * 1e-6);
    if (auto it = c.stage_ms.find("preprocess_ms"); it != c.stage_ms.end()) preprocess.add(it->second);
    if (auto it = c.stage_ms.find("backbone_ms"); it != c.stage_ms.end()) backbone.add(it->second);
    if (auto it = c.stage_ms.find("action_head_ms"); it != c.stage_ms.end()) head.add(it->second);
    if (!c.trace.empty() && c.source_ns > 0) to_actions.add((c.trace.back().stamp_ns - c.source_ns) * 1e-6);
  }

  // Where the overhead goes, per chunk whose observation and prefix were recorded too:
  // delivery = publish -> the next stage's callback start; in-node = callback time outside
  // the stage's compute (binding, loans, message assembly, publish).
  Series d_cam_pre, d_pre_bb, d_bb_head, d_head_act, n_pre, n_bb, n_head;
  std::map<std::int64_t, double> deliveries_to_head;  // capture stamp -> the first three deliveries
  for (const auto& [key, c] : chunks) {
    if (c.trace.size() < 4 || c.stage_ms.size() != 3 || c.callback_ns == 0) continue;
    const auto ob = observation_cb.find(c.source_ns);
    const auto pb = prefix_cb.find(c.source_ns);
    if (ob == observation_cb.end() || pb == prefix_cb.end()) continue;
    const auto n = c.trace.size();
    const std::int64_t cam = c.trace[n - 4].stamp_ns, pre = c.trace[n - 3].stamp_ns, bb = c.trace[n - 2].stamp_ns,
                       hd = c.trace[n - 1].stamp_ns;
    d_cam_pre.add((ob->second - cam) * 1e-6);
    n_pre.add((pre - ob->second) * 1e-6 - c.stage_ms.at("preprocess_ms"));
    d_pre_bb.add((pb->second - pre) * 1e-6);
    // A prefix published before the backbone's device work finished: the head's wait for it is
    // in backbone_ms but happened inside the head's callback (prefix_wait_ms).
    // From another process the prefix may go out earlier still: its delivery, and the head's work
    // before its wait, overlap the backbone's device work (prefix_overlap_ms, in backbone_ms too).
    n_bb.add((bb - pb->second) * 1e-6 - (c.stage_ms.at("backbone_ms") - c.prefix_wait_ms - c.prefix_overlap_ms));
    const double to_head = (c.callback_ns - bb) * 1e-6;
    const double hidden = std::min(c.prefix_overlap_ms, std::max(0.0, to_head));
    d_bb_head.add(to_head - hidden);
    n_head.add((hd - c.callback_ns) * 1e-6 - (c.stage_ms.at("action_head_ms") + c.prefix_wait_ms) -
               (c.prefix_overlap_ms - hidden));
    deliveries_to_head[c.source_ns] = (ob->second - cam + pb->second - pre) * 1e-6 + to_head - hidden;
  }

  // Per executed chunk: its first command. A command names its chunk by the chunk's seq and
  // carries its capture stamp (the topic is not on the command).
  std::map<std::pair<std::int64_t, std::int64_t>, const Chunk*> chunk_by_seq;
  for (const auto& [key, c] : chunks) chunk_by_seq.emplace(std::pair{static_cast<std::int64_t>(key.second), c.source_ns}, &c);
  Series to_actuation, to_command, overhead, tick_wait, handoffs;
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  std::optional<Message> last_command;
  std::map<const Chunk*, Executed> executed;  // for the --html timeline
  for (const Message& m : commands) {
    last_command = m;
    const auto seq = integer(m, "chunk_seq");
    const auto received = integer(m, "chunk_received_ns");
    if (!seq || *seq < 0 || !received) continue;
    const std::pair key{*seq, m.header().source_stamp_ns};
    if (!seen.insert(key).second) continue;
    const auto found = chunk_by_seq.find(key);
    const Chunk* chunk = found == chunk_by_seq.end() ? nullptr : found->second;
    const std::int64_t source = m.header().source_stamp_ns;
    if (source <= 0) continue;
    to_actuation.add((*received - source) * 1e-6);
    if (!m.header().trace.empty()) {
      to_command.add((m.header().trace.back().stamp_ns - source) * 1e-6);
      tick_wait.add((m.header().trace.back().stamp_ns - *received) * 1e-6);
    }
    if (chunk != nullptr && !m.header().trace.empty()) {
      executed[chunk] = {*received, m.header().trace.back().stamp_ns, m.header().trace.back().node};
    }
    if (chunk != nullptr && !chunk->trace.empty()) {
      const double last = (*received - chunk->trace.back().stamp_ns) * 1e-6;
      d_head_act.add(last);
      // The bus's share alone: the four stage-to-stage hand-overs of this chunk's path.
      if (auto d = deliveries_to_head.find(source); d != deliveries_to_head.end()) handoffs.add(d->second + last);
    }
    if (chunk != nullptr && !chunk->trace.empty() && chunk->stage_ms.size() == 3) {
      double compute = (chunk->trace.front().stamp_ns - source) * 1e-6;
      for (const auto& [name, v] : chunk->stage_ms) compute += v;
      overhead.add((*received - source) * 1e-6 - compute);
    }
  }

  json out;
  out["bag"] = o.path;
  out["duration_s"] = (last_ns - first_ns) * 1e-9;
  out["messages"] = counts;
  out["stages_ms"] = {{"camera", camera.to_json()},       {"preprocess", preprocess.to_json()},
                      {"backbone", backbone.to_json()},   {"action_head", head.to_json()},
                      {"actuation_tick_wait", tick_wait.to_json()}};
  out["latency_ms"] = {{"camera_to_actions", to_actions.to_json()},
                       {"camera_to_actuation", to_actuation.to_json()},
                       {"camera_to_command", to_command.to_json()},
                       {"framework_overhead", overhead.to_json()},
                       {"stage_handoffs", handoffs.to_json()}};
  out["overhead_ms"] = {{"delivery_camera_to_preprocess", d_cam_pre.to_json()},
                        {"in_preprocess", n_pre.to_json()},
                        {"delivery_preprocess_to_backbone", d_pre_bb.to_json()},
                        {"in_backbone", n_bb.to_json()},
                        {"delivery_backbone_to_action_head", d_bb_head.to_json()},
                        {"in_action_head", n_head.to_json()},
                        {"delivery_action_head_to_actuation", d_head_act.to_json()}};
  json nodes = json::object();
  for (const auto& [name, m] : last_status) {
    json n;
    n["type"] = text(m, "type");
    n["state"] = text(m, "state");
    n["pid"] = integer(m, "pid").value_or(0);
    n["bad_inputs"] = integer(m, "bad_inputs").value_or(0);
    std::int64_t dropped = 0, calls = 0;
    for (const auto& [key, value] : m.fields()) {
      if (key.starts_with("cb.") && key.ends_with(".dropped")) dropped += std::get<std::int64_t>(value);
      if (key.starts_with("cb.") && key.ends_with(".count")) calls += std::get<std::int64_t>(value);
    }
    n["dropped"] = dropped;
    n["callbacks"] = calls;
    n["memory_bytes"] = integer(m, "memory_bytes").value_or(-1);
    n["load_bytes"] = integer(m, "load_bytes").value_or(0);
    n["process_rss_bytes"] = integer(m, "process_rss_bytes").value_or(-1);
    n["process_peak_rss_bytes"] = integer(m, "process_peak_rss_bytes").value_or(-1);
    nodes[name] = n;
  }
  out["nodes"] = nodes;
  // The policy's footprint: every process of the graph but the recorder's, once each.
  std::int64_t graph_peak = 0;
  std::set<std::int64_t> pids;
  for (const auto& [name, n] : nodes.items()) {
    if (n["type"] == "bag_recorder") continue;
    if (pids.insert(n["pid"].get<std::int64_t>()).second) {
      graph_peak += std::max<std::int64_t>(n["process_peak_rss_bytes"].get<std::int64_t>(), 0);
    }
  }
  out["graph_peak_rss_bytes"] = graph_peak;
  if (last_command) {
    json a;
    for (const char* k : {"chunks_received", "chunks_rejected", "chunks_superseded", "holds", "late_ticks",
                          "position_clamps", "velocity_clamps", "watchdog_faults", "sink_errors", "tick"}) {
      a[k] = integer(*last_command, k).value_or(0);
    }
    out["actuation"] = a;
  }
  if (!o.checkpoint.empty()) {
    // The weight files: model.safetensors, or the shards of a sharded checkpoint (GR00T).
    std::error_code ec;
    std::uintmax_t size = 0;
    for (const auto& e : std::filesystem::directory_iterator(o.checkpoint, ec)) {
      if (e.path().extension() == ".safetensors") size += e.file_size(ec);
      if (ec) break;
    }
    if (ec || size == 0) {
      std::fprintf(stderr, "%s: %s\n", o.checkpoint.c_str(),
                   ec ? ec.message().c_str() : "holds no .safetensors weights (--checkpoint takes a checkpoint folder)");
      return 1;
    }
    out["checkpoint_bytes"] = size;
    out["peak_rss_over_checkpoint"] = static_cast<double>(graph_peak) / static_cast<double>(size);
  }

  // Damage (a cut-short or corrupt bag): one warning; the numbers are what is intact.
  std::vector<std::string> damage;
  for (const auto& i : (*reader)->issues()) {
    if (std::find(damage.begin(), damage.end(), i.message) == damage.end()) damage.push_back(i.message);
  }
  if (!damage.empty()) {
    std::string all;
    for (const std::string& d : damage) all += (all.empty() ? "" : "; ") + d;
    std::fprintf(stderr, "warning: %s is damaged (%s); the report covers the intact part\n", o.path.c_str(),
                 all.c_str());
  }

  if (!o.html_path.empty()) {
    if (chunks.empty() && commands.empty()) {
      std::string types;
      for (const auto& [type, n] : counts) types += (types.empty() ? "" : ", ") + (type.empty() ? "(no schema)" : type);
      std::fprintf(stderr,
                   "error: %s has no latency data to plot: no ActionChunk or JointCommand messages (it holds %s); "
                   "record the action head's and the actuation node's topics (e.g. /policy/actions and "
                   "/robot/command) with the run\n",
                   o.path.c_str(), types.empty() ? "no messages" : types.c_str());
      return 1;
    }
    HtmlReport h;
    h.bag = o.path;
    char summary[160];
    std::snprintf(summary, sizeof summary, "%.1f s, %llu observation(s), %llu chunk(s), %llu command(s)",
                  (last_ns - first_ns) * 1e-9, static_cast<unsigned long long>(counts["Observation"]),
                  static_cast<unsigned long long>(counts["ActionChunk"]),
                  static_cast<unsigned long long>(counts["JointCommand"]));
    h.summary = summary;
    for (const std::string& d : damage) h.notes.push_back("the bag is damaged: " + d + "; the plots show the intact part");
    const std::string no_chunks = "no ActionChunk messages in the bag: record the action head's output (e.g. /policy/actions)";
    const std::string no_commands =
        "no JointCommand naming a recorded chunk: record the actuation node's commands (e.g. /robot/command)";
    // Stage names as the bag has them: the camera's node, then every "<stage>_ms" field of the
    // chunks (the graph's order first, then any other).
    std::string camera_node = "camera";
    std::vector<std::string> stages;
    for (const auto& [key, c] : chunks) {
      if (c.trace.size() >= 4) camera_node = c.trace[c.trace.size() - 4].node;
      for (const auto& [stage, v] : c.all_ms) {
        if (std::find(stages.begin(), stages.end(), stage) == stages.end()) stages.push_back(stage);
      }
    }
    static const std::vector<std::string> kOrder = {"preprocess", "backbone", "action_head"};
    auto rank = [](const std::string& n) { return std::find(kOrder.begin(), kOrder.end(), n) - kOrder.begin(); };
    std::stable_sort(stages.begin(), stages.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
    h.histograms.push_back({camera_node + " (capture -> publish)", camera.values, no_chunks});
    for (const std::string& stage : stages) {
      HtmlHistogram hist{stage + " (compute)", {}, no_chunks};
      for (const auto& [key, c] : chunks) {
        if (auto it = c.all_ms.find(stage); it != c.all_ms.end()) hist.values_ms.push_back(it->second);
      }
      h.histograms.push_back(std::move(hist));
    }
    if (stages.empty()) {
      h.notes.push_back("the chunks carry no stage times (preprocess_ms, backbone_ms, action_head_ms): per-stage "
                        "histograms need the action_head node's chunks");
    }
    h.histograms.push_back({"camera -> actions published", to_actions.values, no_chunks});
    h.histograms.push_back({"camera -> actuation (end to end)", to_actuation.values, no_commands});
    h.histograms.push_back({"camera -> first command", to_command.values, no_commands});
    h.histograms.push_back({"framework overhead", overhead.values,
                            "needs chunks with all three stage times and their commands in the bag"});

    // The timeline: the chunk whose camera -> actuation latency is the median of those whose
    // whole path is in the bag (without commands: the median camera -> actions).
    std::vector<std::pair<double, const Chunk*>> candidates;
    for (const auto& [key, c] : chunks) {
      if (c.trace.size() < 4 || c.source_ns <= 0) continue;
      const auto e = executed.find(&c);
      if (!executed.empty() && e == executed.end()) continue;
      const std::int64_t end = e != executed.end() ? e->second.received_ns : c.trace.back().stamp_ns;
      candidates.emplace_back((end - c.source_ns) * 1e-6, &c);
    }
    if (candidates.empty()) {
      h.timeline_missing = chunks.empty() ? no_chunks
                                          : "no chunk with the hops camera, preprocess, backbone and action head in "
                                            "its trace and its commands in the bag";
    } else {
      std::sort(candidates.begin(), candidates.end());
      const double e2e = candidates[candidates.size() / 2].first;
      const Chunk* c = candidates[candidates.size() / 2].second;
      const auto e = executed.find(c);
      h.timeline = chunk_timeline(*c, observation_cb, prefix_cb, e == executed.end() ? nullptr : &e->second);
      if (e == executed.end()) h.notes.push_back(no_commands + " (the timeline ends at the action head)");
      char title[160];
      std::snprintf(title, sizeof title, "the median chunk (%s %.1f ms, of %zu)",
                    executed.empty() ? "camera -> actions" : "camera -> actuation", e2e, candidates.size());
      h.timeline_title = title;
    }
    // Actions and state over time.
    auto plot = [&](std::string title, std::string y_label, const std::vector<Sample>& samples, std::int64_t dims,
                    std::string missing) {
      HtmlLinePlot p{std::move(title), std::move(y_label), {}, "", std::move(missing)};
      const std::size_t shown = samples.empty() ? 0 : samples.front().values.size();
      for (std::size_t d = 0; d < shown; ++d) {
        HtmlSeries ser{"[" + std::to_string(d) + "]", {}, {}};
        for (const Sample& x : samples) {
          if (d >= x.values.size()) continue;
          ser.t_s.push_back((x.log_ns - first_ns) * 1e-9);
          ser.values.push_back(x.values[d]);
        }
        p.series.push_back(std::move(ser));
      }
      if (dims > static_cast<std::int64_t>(shown) && shown > 0) {
        p.note = "the first " + std::to_string(shown) + " of " + std::to_string(dims) + " dimensions";
      }
      h.lines.push_back(std::move(p));
    };
    plot("actions: JointCommand position", "commanded position", command_samples, command_dims, no_commands);
    if (!robot_state.empty() || observed_state.empty()) {
      plot("state: RobotState position", "position", robot_state, robot_dims,
           "no RobotState or Observation state in the bag: record the robot's state topic (e.g. /robot/state)");
    } else {
      plot("state: Observation " + observed_name, observed_name == "state" ? "state (normalized)" : "state",
           observed_state, observed_dims, "");
    }
    std::ofstream f(o.html_path);
    f << render_report_html(h);
    if (!f) {
      std::fprintf(stderr, "error: cannot write %s\n", o.html_path.c_str());
      return 1;
    }
  }

  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    f << out.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", o.json_path.c_str());
      return 1;
    }
  }

  // The table.
  std::printf("%s: %.1f s, %llu observation(s), %llu chunk(s), %llu command(s)\n", o.path.c_str(),
              out["duration_s"].get<double>(), static_cast<unsigned long long>(counts["Observation"]),
              static_cast<unsigned long long>(counts["ActionChunk"]),
              static_cast<unsigned long long>(counts["JointCommand"]));
  std::printf("\n%-34s %8s %10s %10s\n", "latency (ms)", "n", "p50", "p99");
  auto row = [](const char* name, const Series& s) {
    std::printf("%-34s %8zu %10s %10s\n", name, s.values.size(), ms(s.quantile(0.5)).c_str(),
                ms(s.quantile(0.99)).c_str());
  };
  row("camera (capture -> publish)", camera);
  row("preprocess (compute)", preprocess);
  row("backbone (compute)", backbone);
  row("action_head (compute)", head);
  row("camera -> actions published", to_actions);
  row("camera -> actuation (chunk in)", to_actuation);
  row("camera -> first command", to_command);
  row("  actuation: wait for the tick", tick_wait);
  row("framework overhead", overhead);
  std::printf("  (overhead = camera -> actuation minus camera, preprocess, backbone and action_head compute)\n");
  if (!d_cam_pre.values.empty()) {
    row("  delivery camera -> preprocess", d_cam_pre);
    row("  in preprocess, outside compute", n_pre);
    row("  delivery preprocess -> backbone", d_pre_bb);
    row("  in backbone, outside compute", n_bb);
    row("  delivery backbone -> action_head", d_bb_head);
    row("  in action_head, outside compute", n_head);
    row("  delivery action_head -> actuation", d_head_act);
    row("stage hand-offs (the 4 deliveries)", handoffs);
  }

  std::printf("\n%-14s %-13s %7s %9s %9s %11s %11s %11s\n", "node", "type", "pid", "dropped", "bad_in",
              "memory", "proc RSS", "proc peak");
  for (const auto& [name, n] : nodes.items()) {
    std::printf("%-14s %-13s %7lld %9lld %9lld %11s %11s %11s\n", name.c_str(),
                n["type"].get<std::string>().c_str(), static_cast<long long>(n["pid"].get<std::int64_t>()),
                static_cast<long long>(n["dropped"].get<std::int64_t>()),
                static_cast<long long>(n["bad_inputs"].get<std::int64_t>()),
                megabytes(n["memory_bytes"].get<std::int64_t>()).c_str(),
                megabytes(n["process_rss_bytes"].get<std::int64_t>()).c_str(),
                megabytes(n["process_peak_rss_bytes"].get<std::int64_t>()).c_str());
  }
  if (out.contains("actuation")) {
    const json& a = out["actuation"];
    std::printf("\nactuation: %lld chunk(s) received, %lld rejected (stale), %lld superseded, %lld hold tick(s), "
                "%lld late tick(s), %lld watchdog fault(s)\n",
                static_cast<long long>(a["chunks_received"].get<std::int64_t>()),
                static_cast<long long>(a["chunks_rejected"].get<std::int64_t>()),
                static_cast<long long>(a["chunks_superseded"].get<std::int64_t>()),
                static_cast<long long>(a["holds"].get<std::int64_t>()),
                static_cast<long long>(a["late_ticks"].get<std::int64_t>()),
                static_cast<long long>(a["watchdog_faults"].get<std::int64_t>()));
  }
  if (out.contains("peak_rss_over_checkpoint")) {
    std::printf("memory: policy processes peaked at %s for a %s checkpoint (%.2fx)\n",
                megabytes(out["graph_peak_rss_bytes"].get<std::int64_t>()).c_str(),
                megabytes(out["checkpoint_bytes"].get<std::int64_t>()).c_str(),
                out["peak_rss_over_checkpoint"].get<double>());
  }
  return 0;
}

}  // namespace edgevla::cli
