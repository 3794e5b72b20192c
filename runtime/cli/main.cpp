// edgevla: one binary, subcommands (launch, topic, node, param, keys, ...).
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdlib>

#include "nodes/model_stage.hpp"
#include "runtime/bag/replay.hpp"
#include "runtime/cli/cli.hpp"
#include "runtime/cli/cli_infer.hpp"
#include "runtime/cli/cli_model.hpp"
#include "runtime/launch/launcher.hpp"
#include "runtime/node/node_registry.hpp"
#include "runtime/util/crash.hpp"
#include "runtime/util/heap.hpp"
#include "runtime/util/log.hpp"

namespace {

int launch_command(const std::string& file, const std::vector<std::string>& sets, double duration, bool check) {
  // --check also asks the model stages' backends whether their devices can take them.
  if (check) edgevla::nodes::set_device_preflight(true);
  auto launch = edgevla::load_launch(file, sets);
  if (!launch) {
    edgevla::logger().error("{}", launch.status().message());
    return 2;
  }
  if (check) {
    for (const auto& g : launch->groups) {
      std::printf("group %s:", g.name.c_str());
      for (const auto& n : g.nodes) std::printf(" %s(%s)", n.name.c_str(), n.type.c_str());
      std::printf("\n");
    }
    std::printf("%s: ok\n", file.c_str());
    return 0;
  }
  edgevla::LaunchRunOptions o;
  o.launch_file = file;
  o.sets = sets;
  o.duration_s = duration;
  return edgevla::run_launch(*launch, o);
}

}  // namespace

int main(int argc, char** argv) {
  // A file size limit (ulimit -f) then fails the write with EFBIG, which the bag writer
  // handles like a full disk (closes the bag and says so), instead of killing the process.
  ::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"edgevla: run VLA policies as a graph of nodes"};
  app.require_subcommand(1);
  std::string domain;
  app.add_option("--domain", domain, "graph domain (default $EDGEVLA_DOMAIN or 'default')");

  std::string file, group;
  std::vector<std::string> sets;
  double duration = 0;
  bool check = false;
  int ready_fd = -1;

  auto* launch = app.add_subcommand("launch", "run a launch file");
  launch->add_option("file", file, "launch file (YAML)")->required();
  launch->add_option("--set", sets, "override a param: node.key=value (repeatable)");
  launch->add_option("--duration", duration, "stop after this many seconds");
  launch->add_flag("--check", check, "validate the launch file and params, start nothing");

  auto* grp = app.add_subcommand("__group", "run one process group (used by launch)");
  grp->group("");
  grp->add_option("file", file)->required();
  grp->add_option("--group", group)->required();
  grp->add_option("--set", sets);
  grp->add_option("--ready-fd", ready_fd);
  grp->add_option("--duration", duration);

  auto* topic = app.add_subcommand("topic", "inspect topics of a running graph");
  topic->require_subcommand(1);
  bool verbose = false;
  auto* tlist = topic->add_subcommand("list", "topics with their types and peers");
  tlist->add_flag("-v,--verbose", verbose, "list publishers and subscribers");
  std::string topic_name;
  auto* tinfo = topic->add_subcommand("info", "who publishes and subscribes a topic");
  tinfo->add_option("topic", topic_name)->required();
  edgevla::cli::EchoOptions echo;
  auto* techo = topic->add_subcommand("echo", "print messages: header and tensor summaries");
  techo->add_option("topic", echo.topic)->required();
  techo->add_option("-n,--count", echo.count, "stop after N messages");
  techo->add_option("--timeout", echo.timeout_s, "fail if no message arrives within S seconds");
  techo->add_flag("--full", echo.full, "print the values of small tensors");
  edgevla::cli::RateOptions rate;
  auto* thz = topic->add_subcommand("hz", "message rate");
  thz->add_option("topic", rate.topic)->required();
  thz->add_option("--duration", rate.duration_s, "stop after S seconds");
  thz->add_option("--window", rate.window, "messages in the averaging window");
  auto* tbw = topic->add_subcommand("bw", "bandwidth (tensor bytes per second)");
  tbw->add_option("topic", rate.topic)->required();
  tbw->add_option("--duration", rate.duration_s, "stop after S seconds");
  tbw->add_option("--window", rate.window, "messages in the averaging window");

  auto* node = app.add_subcommand("node", "inspect nodes");
  node->require_subcommand(1);
  auto* nlist = node->add_subcommand("list", "running nodes");
  nlist->add_flag("-v,--verbose", verbose, "state, topics, callback statistics and drops");
  std::string node_name;
  auto* ninfo = node->add_subcommand("info", "one node's state, topics and statistics");
  ninfo->add_option("node", node_name)->required();
  auto* ntypes = node->add_subcommand("types", "node types this binary can run");
  auto* nstats = node->add_subcommand("stats", "per-callback count, latency and drops of every running node");
  bool stats_bus = false;
  nstats->add_flag("--bus", stats_bus,
                   "instead, each process's bus statistics (transport counters, shared-memory pool and mapper, "
                   "device copies) as YAML");

  auto* param = app.add_subcommand("param", "inspect params");
  param->require_subcommand(1);
  auto* pdump = param->add_subcommand("dump", "a node's params as a params file");
  pdump->add_option("node", node_name)->required();
  std::string param_key, param_value;
  auto* pset = param->add_subcommand("set", "change a param of a running node (not read-only ones)");
  pset->add_option("node", node_name)->required();
  pset->add_option("key", param_key)->required();
  pset->add_option("value", param_value, "YAML value, e.g. 0.5, true, \"[1, 2]\"")->required();

  auto* bag = app.add_subcommand("bag", "record, inspect, play and recover MCAP bags");
  bag->require_subcommand(1);
  edgevla::cli::BagRecordOptions rec;
  auto* brec = bag->add_subcommand("record", "record topics into a bag (until Ctrl-C)");
  brec->add_option("-o,--output", rec.output, "the .mcap file")->required();
  brec->add_option("--topics", rec.topics, "topics to record (comma-separated)")->delimiter(',');
  brec->add_flag("--all", rec.all, "record every topic, including ones that appear later");
  brec->add_option("--compression", rec.compression, "none, lz4 or zstd");
  brec->add_option("--max-queue-mb", rec.max_queue_mb, "per-topic queue bound before dropping");
  brec->add_flag("--lossless", rec.lossless,
                 "never lose a message within --max-queue-mb per topic (default: an observer, which never "
                 "slows the graph and loses first when a publisher's pool is short)");
  brec->add_option("--duration", rec.duration_s, "stop after S seconds");
  brec->add_flag("--foxglove", rec.foxglove,
                 "also write Foxglove-decodable channels (camera frames as images, numbers as plots) beside "
                 "edgevla's own");
  brec->add_option("--foxglove-images", rec.foxglove_images, "frames for Foxglove: jpeg, png or raw")
      ->check(CLI::IsMember({"jpeg", "png", "raw"}));
  brec->add_option("--split-mb", rec.split_mb,
                   "start a new file (<stem>_001.mcap, ...) once one holds this many MB; each part is a whole bag")
      ->check(CLI::NonNegativeNumber);
  brec->add_option("--split-s", rec.split_s, "start a new file once one has recorded this many seconds")
      ->check(CLI::NonNegativeNumber);
  std::string bag_path, bag_out;
  auto* binfo = bag->add_subcommand("info", "topics, types, counts, rates, duration, sizes, compression");
  binfo->add_option("bag", bag_path)->required();
  edgevla::cli::BagPlayOptions play;
  auto* bplay = bag->add_subcommand("play", "republish a bag with its original timing and headers");
  bplay->add_option("bag", play.path)->required();
  bplay->add_option("--rate", play.rate, "playback speed factor (2.0: twice as fast)");
  bplay->add_flag("--loop", play.loop, "start over at the end");
  bplay->add_option("--topics", play.topics, "play only these topics (comma-separated)")->delimiter(',');
  bplay->add_option("--start-offset", play.start_offset_s, "skip the first S seconds");
  bplay->add_option("--duration", play.duration_s, "play S seconds");
  bplay->add_option("--warmup-ms", play.warmup_ms, "wait this long for subscribers before the first message");
  bplay->add_flag("--skip-damaged", play.skip_damaged,
                  "play what is intact of a damaged bag and exit 0 (default: exit 1 after saying what was skipped)");
  auto* brecover = bag->add_subcommand("recover", "rewrite a damaged or cut-short bag with everything intact");
  brecover->add_option("in", bag_path)->required();
  brecover->add_option("out", bag_out)->required();
  edgevla::cli::BagExportOptions bexport;
  auto* bexp = bag->add_subcommand(
      "export", "convert a bag for a viewer: --foxglove adds camera frames as images and numbers as plots");
  bexp->add_flag("--foxglove", bexport.foxglove, "add Foxglove-decodable channels (the only export there is)");
  bexp->add_option("in", bexport.in)->required();
  bexp->add_option("out", bexport.out)->required();
  bexp->add_option("--images", bexport.images, "frames as jpeg, png (foxglove.CompressedImage) or raw (foxglove.RawImage)")
      ->check(CLI::IsMember({"jpeg", "png", "raw"}));
  bexp->add_option("--jpeg-quality", bexport.jpeg_quality, "1..100")->check(CLI::Range(1, 100));
  edgevla::cli::BagReportOptions report;
  auto* breport = bag->add_subcommand(
      "report", "a pipeline run's numbers: per-stage and camera->actuation latency, overhead, drops, memory");
  breport->add_option("bag", report.path)->required();
  breport->add_option("--json", report.json_path, "also write the numbers as JSON");
  breport->add_option("--checkpoint", report.checkpoint, "compare the graph's peak RSS with this checkpoint's weights");
  breport->add_option("--html", report.html_path,
                      "also write the plots (latency histograms, one chunk's timeline, actions and state) as one "
                      "self-contained HTML page");

  auto* bridge = app.add_subcommand("bridge", "serve the live graph to a viewer");
  bridge->require_subcommand(1);
  edgevla::cli::BridgeFoxgloveOptions fox;
  auto* bfox = bridge->add_subcommand(
      "foxglove", "a Foxglove WebSocket server (read-only unless --allow-publish): camera frames as images, "
                  "every topic's numbers as plots");
  bfox->add_option("--host", fox.host, "address to listen on (0.0.0.0: every interface)");
  bfox->add_option("--port", fox.port, "port (0: any free one, printed)")->check(CLI::Range(0, 65535));
  bfox->add_option("--topics", fox.topics, "serve only these topics (comma-separated; default every topic)")
      ->delimiter(',');
  bfox->add_option("--images", fox.images, "frames as jpeg, png or raw")->check(CLI::IsMember({"jpeg", "png", "raw"}));
  bfox->add_option("--jpeg-quality", fox.jpeg_quality, "1..100")->check(CLI::Range(1, 100));
  bfox->add_option("--duration", fox.duration_s, "stop after S seconds");
  bfox->add_option("--allow-publish", fox.publish_topics,
                   "let clients publish Prompt or RobotState messages on these topics (comma-separated)")
      ->delimiter(',');

  auto* keys = app.add_subcommand("keys", "key pairs for encrypted tcp between processes");
  keys->require_subcommand(1);
  std::string keys_out;
  bool keys_force = false;
  auto* kgen = keys->add_subcommand("generate", "write a CURVE key pair: PREFIX.secret (0600) and PREFIX.public");
  kgen->add_option("--out", keys_out, "path prefix, e.g. keys/robot")->required();
  kgen->add_flag("--force", keys_force, "replace an existing pair");

  edgevla::bag::ReplayOptions replay;
  std::vector<std::string> tolerances;
  std::string report_path;
  auto* rep = app.add_subcommand("replay", "run one node on its recorded inputs and compare its outputs");
  rep->add_option("--bag", replay.bag, "the recording")->required();
  rep->add_option("--node", replay.node, "the node to replay")->required();
  rep->add_option("--launch", replay.launch_file, "take the node's configuration from this launch file");
  rep->add_option("--params", replay.params_file, "params file (keyed by node name) over the recorded params");
  rep->add_option("--set", replay.sets, "override a param: key=value (repeatable)");
  rep->add_option("--tolerance", tolerances,
                  "[tensor:]rel_l2=X,max_abs=Y,cosine=Z (repeatable; default rel_l2=1e-5)");
  rep->add_option("--report", report_path, "write the full comparison as JSON");
  rep->add_flag("--skip-damaged", replay.skip_damaged,
                "replay what is intact of a damaged bag without failing for the damage");

  edgevla::cli::ModelCommands model_commands;
  model_commands.add(app);
  edgevla::cli::InferCommand infer_command;
  infer_command.add(app);

  CLI11_PARSE(app, argc, argv);
  if (!domain.empty()) ::setenv("EDGEVLA_DOMAIN", domain.c_str(), 1);

  // A crash of any edgevla process leaves its backtrace in the log; a launch group also
  // lifts its core-file limit.
  edgevla::install_crash_handler(grp->parsed() ? "group " + group : std::string("edgevla"));
  if (grp->parsed() || launch->parsed()) edgevla::enable_core_dumps();
  if (launch->parsed() || grp->parsed()) {
    // Before any thread exists, so every thread inherits the mask and signals reach the
    // launcher's sigtimedwait (other subcommands keep ordinary Ctrl-C handling).
    edgevla::block_launch_signals();
    // Launch groups (the recorder's among them) run for hours: an allocator that gives big
    // buffers back and keeps few arenas.
    edgevla::configure_process_heap();
  }
  if (launch->parsed()) return launch_command(file, sets, duration, check);
  if (const int rc = model_commands.run(); rc >= 0) return rc;
  if (const int rc = infer_command.run(); rc >= 0) return rc;
  if (grp->parsed()) {
    // The supervisor validated the whole launch already; this process needs its plugins and
    // its own group's nodes, which run_group configures.
    auto d = edgevla::parse_launch(file, sets);
    if (d) {
      for (const auto& plugin : d->plugins) {
        if (edgevla::Status s = edgevla::NodeRegistry::instance().load_plugin(plugin); !s.is_ok()) {
          d = s;
          break;
        }
      }
    }
    if (!d) {
      edgevla::logger().error("{}", d.status().message());
      return 2;
    }
    return edgevla::run_group(*d, group, duration, ready_fd);
  }
  if (rep->parsed()) {
    for (const auto& t : tolerances) {
      if (auto s = edgevla::bag::parse_tolerance(t, replay.tolerance, replay.per_tensor); !s.is_ok()) {
        std::fprintf(stderr, "%s\n", s.message().c_str());
        return 2;
      }
    }
    return edgevla::cli::replay(replay, report_path);
  }
  if (brec->parsed()) return edgevla::cli::bag_record(rec);
  if (binfo->parsed()) return edgevla::cli::bag_info(bag_path);
  if (bplay->parsed()) return edgevla::cli::bag_play(play);
  if (brecover->parsed()) return edgevla::cli::bag_recover(bag_path, bag_out);
  if (bexp->parsed()) return edgevla::cli::bag_export(bexport);
  if (bfox->parsed()) return edgevla::cli::bridge_foxglove(fox);
  if (breport->parsed()) return edgevla::cli::bag_report(report);
  if (tlist->parsed()) return edgevla::cli::topic_list(verbose);
  if (tinfo->parsed()) return edgevla::cli::topic_info(topic_name);
  if (techo->parsed()) return edgevla::cli::topic_echo(echo);
  if (thz->parsed()) return edgevla::cli::topic_hz(rate);
  if (tbw->parsed()) return edgevla::cli::topic_bw(rate);
  if (nlist->parsed()) return edgevla::cli::node_list(verbose);
  if (ninfo->parsed()) return edgevla::cli::node_info(node_name);
  if (ntypes->parsed()) return edgevla::cli::node_types();
  if (nstats->parsed()) return stats_bus ? edgevla::cli::bus_stats() : edgevla::cli::node_stats();
  if (pdump->parsed()) return edgevla::cli::param_dump(node_name);
  if (pset->parsed()) return edgevla::cli::param_set(node_name, param_key, param_value);
  if (kgen->parsed()) return edgevla::cli::keys_generate(keys_out, keys_force);
  return 1;
}
