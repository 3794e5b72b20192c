#include "runtime/bag/replay.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "msgs/wire.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/launch/launch_file.hpp"
#include "runtime/node/host.hpp"
#include "runtime/node/node_registry.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/progress.hpp"

namespace edgevla::bag {
namespace {

// The node's clock during replay: the recorded stamp of the input being processed.
class ReplayClock final : public Clock {
 public:
  std::int64_t now_ns() const override { return t_.load(); }
  void set(std::int64_t t) { t_.store(t); }

 private:
  std::atomic<std::int64_t> t_{0};
};

struct Recorded {
  std::uint64_t log_time = 0;
  std::string topic;              // empty: a timer tick
  MessagePtr message;
  MessagePtr callback_output;     // an output of the recorded callback this event replays
};

std::string trace_key(const std::vector<TraceHop>& trace, std::size_t hops) {
  std::string k;
  for (std::size_t i = 0; i < hops && i < trace.size(); ++i) k += trace[i].node + "@" + std::to_string(trace[i].stamp_ns) + ";";
  return k;
}

// The node's configuration as the recorder stored it.
Expected<NodeOptions> options_from_bag(mcap::McapReader& reader, const std::string& node, const std::string& bag) {
  std::optional<mcap::Metadata> found;
  for (auto& m : reader.metadata()) {
    if (m.name == "edgevla.node" && m.metadata.contains("name") && m.metadata.at("name") == node) found = m;
  }
  if (!found) {
    std::string known;
    for (auto& m : reader.metadata()) {
      if (m.name == "edgevla.node" && m.metadata.contains("name")) known += (known.empty() ? "" : ", ") + m.metadata.at("name");
    }
    return not_found("bag '" + bag + "' has no node named '" + node + "' (recorded nodes: " +
                     (known.empty() ? "none; record with the graph running, or pass --launch" : known) + ")");
  }
  NodeOptions o;
  o.name = node;
  o.type = found->metadata["type"];
  o.origin = "bag " + bag;
  try {
    const YAML::Node params = YAML::Load(found->metadata["params"]);
    if (params && params[node]) {
      for (const auto& kv : params[node]) {
        o.params[kv.first.as<std::string>()] = ParamOverride{kv.second, "bag " + bag};
      }
    }
    for (const char* key : {"subscriptions", "publishers"}) {
      const YAML::Node list = YAML::Load(found->metadata[key]);
      for (const auto& e : list) o.remaps[e["name"].as<std::string>()] = e["topic"].as<std::string>();
    }
  } catch (const YAML::Exception& e) {
    return data_loss("bag '" + bag + "': the recorded configuration of node '" + node + "' is unreadable: " + e.msg);
  }
  return o;
}

Status apply_overrides(NodeOptions& o, const ReplayOptions& r) {
  if (!r.params_file.empty()) {
    EDGEVLA_ASSIGN_OR_RETURN(const ParamsFile file, load_params_file(r.params_file, "--params"));
    const YAML::Node section = file.root[o.name];
    if (!section) {
      return invalid_argument("params file '" + r.params_file + "' has no section for node '" + o.name +
                              "' (params files map node names to their params)");
    }
    for (const auto& kv : section) {
      o.params[kv.first.Scalar()] =
          ParamOverride{kv.second, r.params_file + ":" + std::to_string(kv.first.Mark().line + 1)};
    }
  }
  for (const auto& s : r.sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) return invalid_argument("--set '" + s + "' must look like key=value");
    try {
      o.params[s.substr(0, eq)] = ParamOverride{YAML::Load(s.substr(eq + 1)), "--set " + s};
    } catch (const YAML::Exception& e) {
      return invalid_argument("--set '" + s + "': " + e.msg);
    }
  }
  return Status::ok();
}

const Tolerance& tolerance_for(const ReplayOptions& o, const std::string& tensor) {
  auto it = o.per_tensor.find(tensor);
  return it == o.per_tensor.end() ? o.tolerance : it->second;
}

TensorResult compare(const std::string& topic, std::size_t index, const std::string& name, const Tensor& produced,
                     const Tensor& recorded, const Tolerance& tol) {
  TensorResult r{topic, index, name, recorded.shape().to_string()};
  if (!(produced.shape() == recorded.shape()) || produced.dtype() != recorded.dtype()) {
    r.pass = false;
    r.problem = "produced " + std::string(dtype_name(produced.dtype())) + produced.shape().to_string() + ", recorded " +
                std::string(dtype_name(recorded.dtype())) + recorded.shape().to_string();
    return r;
  }
  auto a = produced.contiguous();
  auto b = recorded.contiguous();
  if (!a || !b || !produced.device().is_cpu()) {
    r.pass = false;
    r.problem = "cannot read the tensors on the CPU";
    return r;
  }
  const std::size_t es = dtype_size(recorded.dtype());
  double diff2 = 0, ref2 = 0, prod2 = 0, dot = 0, max_abs = 0;
  for (std::int64_t i = 0; i < recorded.numel(); ++i) {
    const double x = element_as_double(produced.dtype(), a->raw_data() + static_cast<std::size_t>(i) * es);
    const double y = element_as_double(recorded.dtype(), b->raw_data() + static_cast<std::size_t>(i) * es);
    const double d = x - y;
    if (std::isnan(x) != std::isnan(y)) max_abs = NAN;  // a NaN on one side only always fails
    if (!std::isnan(d)) max_abs = std::isnan(max_abs) ? max_abs : std::max(max_abs, std::fabs(d));
    diff2 += std::isnan(d) ? 0 : d * d;
    ref2 += y * y;
    prod2 += x * x;
    dot += x * y;
  }
  r.max_abs = max_abs;
  r.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0.0);
  r.cosine = (ref2 > 0 && prod2 > 0) ? dot / std::sqrt(ref2 * prod2) : (ref2 == prod2 ? 1.0 : 0.0);
  r.pass = !std::isnan(r.max_abs) && (tol.max_abs < 0 || r.max_abs <= tol.max_abs) && r.rel_l2 <= tol.rel_l2 &&
           (tol.min_cosine < 0 || r.cosine >= tol.min_cosine);
  return r;
}

// Params the node stamped on its outputs ("replay.param.<name>", see kReplayParamPrefix) are
// set to their recorded values unless the user gave them (--set, params file). The first
// output of the node in the bag carries them; only the node's remapped topics are read.
Status apply_recorded_params(mcap::McapReader& reader, const ReplayOptions& r, NodeOptions& options,
                             std::vector<std::string>& notes) {
  std::set<std::string> topics;
  for (const auto& [name, topic] : options.remaps) topics.insert(topic);
  std::optional<Message> first;
  const Status stop = already_exists("found");  // ends the scan early
  Status scan = reader.for_each_message([&](const mcap::MessageView& v) -> Status {
    if (!topics.contains(v.channel->topic)) return Status::ok();
    auto m = decode_record(v);
    if (!m) return Status::ok();  // reported when the inputs and outputs are read
    const auto& trace = m->header().trace;
    if (trace.empty() || trace.back().node != options.name) return Status::ok();
    first = std::move(*m);
    return stop;
  });
  if (!scan.is_ok() && scan.code() != stop.code()) return scan;
  if (!first) return Status::ok();
  for (const auto& [field, value] : first->fields()) {
    if (!field.starts_with(kReplayParamPrefix)) continue;
    const std::string param = field.substr(kReplayParamPrefix.size());
    const std::string recorded = field_to_string(value);
    auto it = options.params.find(param);
    const bool from_user = it != options.params.end() &&
                           (it->second.origin.starts_with("--set ") ||
                            (!r.params_file.empty() && it->second.origin.starts_with(r.params_file + ":")));
    if (from_user) {
      const std::string now = YAML::Dump(it->second.value);
      if (now != recorded) {
        notes.push_back(param + " = " + now + " (" + it->second.origin + ") differs from the " + recorded +
                        " the node ran with when recorded: outputs that depend on it agree within the "
                        "backend's tolerance, not bit for bit");
      }
      continue;
    }
    try {
      options.params[param] = ParamOverride{YAML::Load(recorded), "recorded outputs of node '" + options.name + "'"};
    } catch (const YAML::Exception& e) {
      return data_loss("bag '" + r.bag + "': recorded field '" + field + "' = " + recorded + " is unreadable: " + e.msg);
    }
    notes.push_back(param + " = " + recorded + " as recorded (the node's outputs carry the value it ran with; "
                    "replay uses it so that the result does not depend on this machine)");
  }
  return Status::ok();
}

}  // namespace

Status parse_tolerance(const std::string& spec, Tolerance& all, std::map<std::string, Tolerance>& per_tensor) {
  std::string body = spec;
  Tolerance* target = &all;
  if (const auto colon = spec.find(':'); colon != std::string::npos) {
    const std::string tensor = spec.substr(0, colon);
    per_tensor.try_emplace(tensor, all);
    target = &per_tensor[tensor];
    body = spec.substr(colon + 1);
  }
  std::stringstream ss(body);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto eq = item.find('=');
    char* end = nullptr;
    const double v = eq == std::string::npos ? 0 : std::strtod(item.c_str() + eq + 1, &end);
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos || end == item.c_str() + eq + 1 || *end != '\0') {
      return invalid_argument("tolerance '" + spec + "': '" + item + "' must be metric=number");
    }
    if (key == "max_abs") {
      target->max_abs = v;
    } else if (key == "rel_l2") {
      target->rel_l2 = v;
    } else if (key == "cosine" || key == "min_cosine") {
      target->min_cosine = v;
    } else {
      return invalid_argument("tolerance '" + spec + "': unknown metric '" + key + "' (max_abs, rel_l2, cosine)");
    }
  }
  return Status::ok();
}

bool ReplayReport::passed() const {
  if (!problems.empty()) return false;
  return std::all_of(tensors.begin(), tensors.end(), [](const TensorResult& t) { return t.pass; });
}

std::string ReplayReport::table() const {
  std::ostringstream out;
  out << "replay of node '" << node << "' (" << type << ") from " << bag << ": " << inputs << " input(s)";
  if (ticks > 0) out << ", " << ticks << " timer tick(s) at their recorded times";
  if (trailing_inputs > 0) out << " (" << trailing_inputs << " recorded after its last output: not fed)";
  out << "\n";
  for (const auto& [topic, counts] : outputs) {
    out << "  outputs on " << topic << ": recorded " << counts.first << ", produced " << counts.second << "\n";
  }
  // One line per (topic, tensor): the worst values over every output.
  struct Worst {
    std::size_t n = 0, failed = 0;
    double max_abs = 0, rel_l2 = 0, cosine = 1;
    std::string shape;
  };
  std::map<std::pair<std::string, std::string>, Worst> worst;
  for (const auto& t : tensors) {
    Worst& w = worst[{t.topic, t.tensor}];
    ++w.n;
    w.failed += t.pass ? 0 : 1;
    w.max_abs = std::max(w.max_abs, t.max_abs);
    w.rel_l2 = std::max(w.rel_l2, t.rel_l2);
    w.cosine = std::min(w.cosine, t.cosine);
    w.shape = t.shape;
  }
  char line[256];
  std::snprintf(line, sizeof line, "  %-20s %-12s %-14s %6s %12s %12s %12s %7s\n", "topic", "tensor", "shape", "n",
                "max_abs", "rel_l2", "cosine", "failed");
  out << line;
  for (const auto& [key, w] : worst) {
    std::snprintf(line, sizeof line, "  %-20s %-12s %-14s %6zu %12.4g %12.4g %12.8f %7zu\n", key.first.c_str(),
                  key.second.c_str(), w.shape.c_str(), w.n, w.max_abs, w.rel_l2, w.cosine, w.failed);
    out << line;
  }
  int shown = 0;
  for (const auto& t : tensors) {
    if (t.pass || shown++ >= 10) continue;
    out << "  FAIL " << t.topic << " #" << t.index << " " << t.tensor << ": "
        << (t.problem.empty() ? "max_abs " + std::to_string(t.max_abs) + " rel_l2 " + std::to_string(t.rel_l2) +
                                    " cosine " + std::to_string(t.cosine)
                              : t.problem)
        << "\n";
  }
  for (const auto& p : problems) out << "  PROBLEM " << p << "\n";
  for (const auto& n : notes) out << "  note: " << n << "\n";
  if (!latency_ms.empty()) {
    auto l = latency_ms;
    std::sort(l.begin(), l.end());
    std::snprintf(line, sizeof line, "  latency per input: p50 %.3f ms  p99 %.3f ms  max %.3f ms\n", l[l.size() / 2],
                  l[static_cast<std::size_t>(0.99 * static_cast<double>(l.size() - 1))], l.back());
    out << line;
  }
  out << (passed() ? "RESULT: PASS" : "RESULT: FAIL") << "\n";
  return out.str();
}

std::string ReplayReport::json() const {
  YAML::Emitter out;  // YAML's flow style is JSON for these values
  out << YAML::DoubleQuoted << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "bag" << YAML::Value << bag << YAML::Key << "node" << YAML::Value << node << YAML::Key
      << "type" << YAML::Value << type << YAML::Key << "passed" << YAML::Value << YAML::TrueFalseBool << passed()
      << YAML::Key << "inputs" << YAML::Value << inputs << YAML::Key << "ticks" << YAML::Value << ticks;
  out << YAML::Key << "latency_ms" << YAML::Value << YAML::BeginSeq;
  for (double l : latency_ms) out << l;
  out << YAML::EndSeq << YAML::Key << "outputs" << YAML::Value << YAML::BeginMap;
  for (const auto& [topic, c] : outputs) {
    out << YAML::Key << topic << YAML::Value << YAML::BeginMap << YAML::Key << "recorded" << YAML::Value << c.first
        << YAML::Key << "produced" << YAML::Value << c.second << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::Key << "tensors" << YAML::Value << YAML::BeginSeq;
  for (const auto& t : tensors) {
    out << YAML::BeginMap << YAML::Key << "topic" << YAML::Value << t.topic << YAML::Key << "index" << YAML::Value
        << t.index << YAML::Key << "tensor" << YAML::Value << t.tensor << YAML::Key << "shape" << YAML::Value
        << t.shape << YAML::Key << "max_abs" << YAML::Value << t.max_abs << YAML::Key << "rel_l2" << YAML::Value
        << t.rel_l2 << YAML::Key << "cosine" << YAML::Value << t.cosine << YAML::Key << "pass" << YAML::Value
        << t.pass << YAML::Key << "problem" << YAML::Value << t.problem << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::Key << "problems" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : problems) out << p;
  out << YAML::EndSeq << YAML::Key << "notes" << YAML::Value << YAML::BeginSeq;
  for (const auto& n : notes) out << n;
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Expected<ReplayReport> replay_node(const ReplayOptions& o) {
  auto reader = mcap::McapReader::open(o.bag);
  if (!reader) return reader.status();

  // The node's configuration.
  NodeOptions options;
  if (!o.launch_file.empty()) {
    EDGEVLA_ASSIGN_OR_RETURN(LaunchDescription launch, parse_launch(o.launch_file, {}));
    for (const auto& p : launch.plugins) EDGEVLA_RETURN_IF_ERROR(NodeRegistry::instance().load_plugin(p));
    bool found = false;
    for (const auto& g : launch.groups) {
      for (const auto& n : g.nodes) {
        if (n.name == o.node) {
          options = n;
          found = true;
        }
      }
    }
    if (!found) return not_found("launch file '" + o.launch_file + "' has no node named '" + o.node + "'");
  } else {
    EDGEVLA_ASSIGN_OR_RETURN(options, options_from_bag(**reader, o.node, o.bag));
  }
  EDGEVLA_RETURN_IF_ERROR(apply_overrides(options, o));
  std::vector<std::string> notes;
  EDGEVLA_RETURN_IF_ERROR(apply_recorded_params(**reader, o, options, notes));

  // The node alone, on an in-process bus, with the replay clock.
  BusOptions bo;
  bo.cross_process = false;
  EDGEVLA_ASSIGN_OR_RETURN(auto bus, Bus::create(bo));
  ReplayClock clock;
  NodeHostOptions ho;
  ho.process_name = "replay";
  ho.status_period = std::chrono::milliseconds(0);
  ho.clock = &clock;
  ho.manual_timers = true;  // a timer-driven node ticks at its recorded publish times (below)
  NodeHost host(*bus, ho);
  auto added = host.add(options);
  if (!added) return added.status().with_context("replaying node '" + o.node + "'");
  EDGEVLA_ASSIGN_OR_RETURN(NodeTopics topics, host.topics_of(o.node));
  EDGEVLA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> periods, host.timer_periods(o.node));
  const std::size_t timers = periods.size();

  // Recorded inputs (the node's subscribed topics) and outputs (what this node published).
  std::map<std::string, std::string> input_types;
  std::map<std::string, int> subs_per_topic;
  for (const auto& s : topics.subscriptions) {
    input_types[s.topic] = s.type;
    ++subs_per_topic[s.topic];
  }
  std::set<std::string> output_topics;
  for (const auto& p : topics.publishers) output_topics.insert(p.topic);
  std::vector<Recorded> inputs;
  std::map<std::string, std::vector<MessagePtr>> expected;            // topic -> outputs in order
  std::map<std::string, RngState> rng_by_input;                       // input trace -> generator state
  Status read = (*reader)->for_each_message([&](const mcap::MessageView& v) -> Status {
    const std::string& topic = v.channel->topic;
    const bool is_input = input_types.contains(topic);
    if (!is_input && !output_topics.contains(topic)) return Status::ok();
    auto m = decode_record(v);
    if (!m) return m.status();
    auto msg = std::make_shared<const Message>(std::move(*m));
    if (is_input) {
      const std::string& want = input_types[topic];
      if (!want.empty() && msg->type() != want) {
        return invalid_argument("topic '" + topic + "' carries " + msg->type() + " in the bag, but node '" + o.node +
                                "' subscribes to it expecting " + want);
      }
      inputs.push_back({v.record.log_time, topic, msg});
    }
    const auto& trace = msg->header().trace;
    if (output_topics.contains(topic) && !trace.empty() && trace.back().node == o.node) {
      if (msg->header().rng) rng_by_input.emplace(trace_key(trace, trace.size() - 1), *msg->header().rng);
      expected[topic].push_back(msg);
    }
    return Status::ok();
  });
  EDGEVLA_RETURN_IF_ERROR(read);
  std::vector<std::string> damage;
  for (const auto& i : (*reader)->issues()) damage.push_back("bag '" + o.bag + "' is damaged: " + i.message);
  if (inputs.empty()) {
    std::string list;
    for (const auto& [t, ty] : input_types) list += (list.empty() ? "" : ", ") + t;
    if (!damage.empty()) {
      return data_loss(damage.front() + "; no message on the inputs of node '" + o.node + "' (" + list +
                       ") is intact; `edgevla bag recover` keeps what is");
    }
    return not_found("bag '" + o.bag + "' has no messages on the inputs of node '" + o.node + "' (" +
                     (list.empty() ? "it subscribes to nothing" : list) + "); record those topics");
  }
  // The order to feed. Outputs recorded with input marks (every message a node publishes
  // carries them) say exactly which inputs the node had taken when it published, and which one
  // triggered the callback (none: a timer). Each recorded callback is replayed after precisely
  // the inputs it had seen; a timer callback is fired at its recorded stamp. Without marks
  // (bags of other publishers), inputs go in recording order and a timer-driven node ticks at
  // its outputs' publish times (closer than half a period: one tick).
  std::vector<Recorded> events;  // inputs (topic set) and ticks (topic empty); log_time = clock
  std::size_t trailing_inputs = 0;
  std::map<std::int64_t, MessagePtr> callbacks;  // callback stamp -> one output of it
  std::vector<std::string> missing_inputs;        // marked inputs the bag lacks
  auto report_missing = [&](std::int64_t stamp, const Message& out, const std::string& topic, std::int64_t pub) {
    missing_inputs.push_back("the callback at " + std::to_string(stamp) + " ns (output seq " +
                             std::to_string(out.header().seq) + " on " + out.header().topic + ") had taken the " +
                             topic + " message published at " + std::to_string(pub) +
                             " ns, which the bag does not hold: the recorder missed it, so this output cannot be "
                             "replayed on the inputs it was made from");
  };
  bool marked = true;
  for (const auto& [topic, list] : expected) {
    for (const auto& m : list) {
      if (m->header().callback_stamp_ns == 0 || m->header().inputs.empty()) marked = false;
      callbacks.emplace(m->header().callback_stamp_ns, m);
    }
  }
  // Outputs that list the input callbacks the node ran before them, in order (header `taken`):
  // replay runs exactly those callbacks in that order, each on its recorded clock. This is exact
  // whatever the timing was: which frame came before which chunk is recorded, not guessed.
  bool any_taken = false;
  std::uint64_t lost = 0;
  for (const auto& [topic, list] : expected) {
    for (const auto& m : list) {
      any_taken = any_taken || !m->header().taken.empty();
      lost += m->header().taken_lost;
    }
  }
  const bool taken_mode = marked && !callbacks.empty() && any_taken && lost == 0;
  if (marked && any_taken && lost > 0) {
    notes.push_back("the node took more than " + std::to_string(wire::kMaxTaken) +
                    " inputs between two outputs (" + std::to_string(lost) +
                    " not listed): inputs are fed by their marks, not in the recorded callback order");
  }
  if (taken_mode) {
    std::map<std::int64_t, std::vector<MessagePtr>> by_callback;  // callback stamp -> its outputs
    for (const auto& [topic, list] : expected) {
      for (const auto& m : list) by_callback[m->header().callback_stamp_ns].push_back(m);
    }
    std::map<std::pair<std::string, std::int64_t>, const Recorded*> by_key;
    for (const auto& in : inputs) by_key.emplace(std::make_pair(in.topic, in.message->header().publish_stamp_ns), &in);
    std::set<const Recorded*> fed;
    for (auto& [stamp, outs] : by_callback) {
      std::sort(outs.begin(), outs.end(), [](const MessagePtr& a, const MessagePtr& b) {
        return a->header().publish_stamp_ns < b->header().publish_stamp_ns;
      });
      std::vector<TakenInput> taken;
      for (const auto& m : outs) taken.insert(taken.end(), m->header().taken.begin(), m->header().taken.end());
      const bool triggered = !taken.empty() && taken.back().callback_stamp_ns == stamp;
      for (std::size_t i = 0; i < taken.size(); ++i) {
        const TakenInput& t = taken[i];
        if (i > 0 && taken[i - 1].topic == t.topic && taken[i - 1].publish_stamp_ns == t.publish_stamp_ns) continue;
        auto it = by_key.find({t.topic, t.publish_stamp_ns});
        if (it == by_key.end()) {
          if (input_types.contains(t.topic)) report_missing(stamp, *outs.front(), t.topic, t.publish_stamp_ns);
          continue;
        }
        fed.insert(it->second);
        const bool last = i + 1 == taken.size();
        Recorded e{static_cast<std::uint64_t>(last && triggered ? stamp : t.callback_stamp_ns), t.topic,
                   it->second->message};
        if (last && triggered) e.callback_output = outs.front();
        events.push_back(std::move(e));
      }
      if (!triggered) events.push_back({static_cast<std::uint64_t>(stamp), std::string(), outs.front(), outs.front()});
    }
    trailing_inputs = inputs.size() - fed.size();
  } else if (marked && !callbacks.empty()) {
    std::map<std::string, std::vector<const Recorded*>> by_topic;  // by publish stamp
    for (const auto& in : inputs) by_topic[in.topic].push_back(&in);
    for (auto& [topic, list] : by_topic) {
      std::stable_sort(list.begin(), list.end(), [](const Recorded* a, const Recorded* b) {
        return a->message->header().publish_stamp_ns < b->message->header().publish_stamp_ns;
      });
    }
    std::map<std::string, std::size_t> next;
    auto take_until = [&](const std::string& topic, std::int64_t pub, bool inclusive, std::vector<const Recorded*>& out) {
      auto it = by_topic.find(topic);
      if (it == by_topic.end()) return;
      std::size_t& i = next[topic];
      while (i < it->second.size()) {
        const std::int64_t p = it->second[i]->message->header().publish_stamp_ns;
        if (p > pub || (!inclusive && p == pub)) break;
        out.push_back(it->second[i++]);
      }
    };
    auto by_publish = [](const Recorded* a, const Recorded* b) {
      return a->message->header().publish_stamp_ns < b->message->header().publish_stamp_ns;
    };
    // The exact inputs each recorded callback had taken: a mark whose message is not in the
    // bag (the recorder missed it) would replay the callback on other inputs than it saw live,
    // so it is reported instead of being compared as a drift.
    std::map<std::string, std::set<std::int64_t>> recorded_stamps;
    for (const auto& in : inputs) recorded_stamps[in.topic].insert(in.message->header().publish_stamp_ns);
    for (const auto& [stamp, m] : callbacks) {
      std::vector<const Recorded*> before;
      const InputMark* trigger = nullptr;
      for (const auto& mark : m->header().inputs) {
        if (mark.trigger) trigger = &mark;
        if (input_types.contains(mark.topic) && !recorded_stamps[mark.topic].contains(mark.publish_stamp_ns)) {
          report_missing(stamp, *m, mark.topic, mark.publish_stamp_ns);
        }
        take_until(mark.topic, mark.publish_stamp_ns, !mark.trigger, before);
      }
      std::stable_sort(before.begin(), before.end(), by_publish);
      for (const Recorded* r : before) {
        events.push_back({static_cast<std::uint64_t>(r->message->header().publish_stamp_ns), r->topic, r->message});
      }
      std::vector<const Recorded*> fired;
      if (trigger != nullptr) take_until(trigger->topic, trigger->publish_stamp_ns, true, fired);
      if (trigger != nullptr && fired.empty()) continue;  // its input is not in the bag: reported as a count mismatch
      Recorded e{static_cast<std::uint64_t>(stamp), trigger != nullptr ? fired.back()->topic : std::string(),
                 trigger != nullptr ? fired.back()->message : m};
      e.callback_output = m;
      events.push_back(std::move(e));
    }
    // Inputs after the last recorded callback are not fed: whatever they made was not recorded
    // (the recording ended first), so there is nothing to compare it with.
    for (const auto& [topic, list] : by_topic) trailing_inputs += list.size() - next[topic];
  } else {
    events = inputs;
    if (timers > 0) {
      for (auto& in : events) in.log_time = static_cast<std::uint64_t>(in.message->header().publish_stamp_ns);
      std::vector<std::pair<std::int64_t, MessagePtr>> outs;
      for (const auto& [topic, list] : expected) {
        for (const auto& m : list) outs.emplace_back(m->header().trace.back().stamp_ns, m);
      }
      std::sort(outs.begin(), outs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      const std::int64_t half_period = *std::min_element(periods.begin(), periods.end()) / 2;
      std::int64_t last_tick = -1;
      for (const auto& [stamp, m] : outs) {
        if (last_tick >= 0 && stamp - last_tick < half_period) continue;
        last_tick = stamp;
        events.push_back({static_cast<std::uint64_t>(stamp), std::string(), m, m});
      }
    }
    std::stable_sort(events.begin(), events.end(), [](const Recorded& a, const Recorded& b) { return a.log_time < b.log_time; });
  }

  // Collect what the node publishes.
  auto waker = std::make_shared<Waker>();
  std::map<std::string, std::shared_ptr<SubscriptionQueue>> collectors;
  for (const auto& t : output_topics) {
    collectors[t] = std::make_shared<SubscriptionQueue>(t, "", QoS::keep_last(1 << 20).on_host(), "replay", waker);
    EDGEVLA_RETURN_IF_ERROR(bus->attach(collectors[t]));
  }
  EDGEVLA_RETURN_IF_ERROR(host.activate_all());
  std::map<std::string, std::shared_ptr<TopicWriter>> writers;
  for (const auto& [topic, type] : input_types) {
    std::string t = type;
    for (const auto& in : inputs) {
      if (in.topic == topic) t = in.message->type();
    }
    if (t.empty()) continue;
    EDGEVLA_ASSIGN_OR_RETURN(writers[topic], bus->advertise(topic, t, "bag_replay"));
  }

  ReplayReport report;
  report.bag = o.bag;
  report.node = o.node;
  report.type = options.type;
  report.inputs = static_cast<std::size_t>(
      std::count_if(events.begin(), events.end(), [](const Recorded& r) { return !r.topic.empty(); }));
  report.ticks = events.size() - report.inputs;
  report.trailing_inputs = trailing_inputs;
  report.problems = missing_inputs;
  report.notes = notes;
  // Damage is reported: outputs whose inputs were in a skipped chunk cannot be compared.
  for (auto& d : damage) {
    if (o.skip_damaged) {
      report.notes.push_back(d + " (skipped: --skip-damaged)");
    } else {
      report.problems.push_back(d + "; replay what is intact with --skip-damaged, or `edgevla bag recover` it");
    }
  }
  Progress progress({.what = "replay " + o.node + " from " + o.bag,
                     .total = static_cast<std::int64_t>(events.size()),
                     .unit = ProgressUnit::kCount,
                     .noun = "inputs and ticks"});
  for (const auto& in : events) {
    progress.add(1);
    // The generator as the recorded callback began.
    if (in.callback_output && in.callback_output->header().rng) {
      EDGEVLA_RETURN_IF_ERROR(host.set_rng_state(o.node, *in.callback_output->header().rng));
    } else if (auto it = rng_by_input.find(trace_key(in.message->header().trace, in.message->header().trace.size()));
               !in.topic.empty() && it != rng_by_input.end()) {
      EDGEVLA_RETURN_IF_ERROR(host.set_rng_state(o.node, it->second));
    }
    clock.set(static_cast<std::int64_t>(in.log_time));
    const std::int64_t t0 = steady_now_ns();
    if (in.topic.empty()) {  // a tick
      EDGEVLA_RETURN_IF_ERROR(host.fire_timers(o.node));
      report.latency_ms.push_back(static_cast<double>(steady_now_ns() - t0) / 1e6);
      continue;
    }
    const std::uint64_t before = host.subscription_callbacks(o.node);
    Message copy = *in.message;  // tensors are shared, not copied
    EDGEVLA_RETURN_IF_ERROR(bus->republish(*writers.at(in.topic), std::move(copy)));
    const auto want = before + static_cast<std::uint64_t>(subs_per_topic[in.topic]);
    const std::int64_t deadline = t0 + o.input_timeout.count() * 1'000'000;
    while (host.subscription_callbacks(o.node) < want && steady_now_ns() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (host.subscription_callbacks(o.node) < want) {
      report.problems.push_back("input " + std::to_string(report.latency_ms.size()) + " on " + in.topic +
                                " was not processed within " + std::to_string(o.input_timeout.count()) + " ms");
    }
    report.latency_ms.push_back(static_cast<double>(steady_now_ns() - t0) / 1e6);
  }
  progress.finish();
  (void)host.deactivate_all();

  for (const auto& topic : output_topics) {
    std::vector<MessagePtr> produced;
    while (auto m = collectors[topic]->pop()) produced.push_back(m);
    const auto& rec = expected[topic];
    report.outputs[topic] = {rec.size(), produced.size()};
    if (rec.size() != produced.size()) {
      report.problems.push_back(topic + ": recorded " + std::to_string(rec.size()) + " output(s), replay produced " +
                                std::to_string(produced.size()));
    }
    for (std::size_t i = 0; i < std::min(rec.size(), produced.size()); ++i) {
      for (const auto& nt : rec[i]->tensors()) {
        const Tensor* p = produced[i]->tensor(nt.name);
        if (p == nullptr) {
          report.tensors.push_back({topic, i, nt.name, nt.tensor.shape().to_string(), 0, 0, 1, false,
                                    "missing from the replayed output"});
          continue;
        }
        report.tensors.push_back(compare(topic, i, nt.name, *p, nt.tensor, tolerance_for(o, nt.name)));
      }
    }
  }
  return report;
}

}  // namespace edgevla::bag
