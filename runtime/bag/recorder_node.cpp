// bag_recorder: the recorder as a node, so a launch file's `record:` section and
// `edgevla bag record` run it like any other node (params, stats, NodeStatus, clean shutdown).
#include "runtime/bag/recorder.hpp"
#include "runtime/node/node_registry.hpp"

namespace edgevla::bag {
namespace {

class BagRecorderNode final : public Node {
 public:
  explicit BagRecorderNode(const NodeOptions& o) : Node(o) {}

  Status configure(NodeSpec& spec) override {
    EDGEVLA_RETURN_IF_ERROR(spec.declare(output_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(topics_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(all_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(compression_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(chunk_mb_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(max_queue_mb_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(flush_period_s_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(lossless_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(foxglove_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(foxglove_images_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(jpeg_quality_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(split_mb_));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(split_s_));
    if (output_->empty()) {
      return invalid_argument("node '" + name() + "': param 'output' must name the .mcap file to write");
    }
    if (topics_->empty() && !*all_) {
      return invalid_argument("node '" + name() + "': set 'topics' to the topics to record, or 'all: true'");
    }
    return Status::ok();
  }

  Status activate() override {
    if (bus() == nullptr) return failed_precondition("node '" + name() + "' has no bus");
    RecorderOptions o;
    o.output = *output_;
    o.topics = *topics_;
    o.all = *all_;
    o.compression = *mcap::parse_compression(*compression_);
    o.chunk_bytes = static_cast<std::size_t>(*chunk_mb_ * (1 << 20));
    o.max_queue_bytes = static_cast<std::size_t>(*max_queue_mb_) << 20;
    o.lossless = *lossless_;
    o.flush_period = std::chrono::milliseconds(static_cast<std::int64_t>(*flush_period_s_ * 1000));
    o.foxglove = *foxglove_;
    o.foxglove_options.images = *parse_foxglove_images(*foxglove_images_);
    o.foxglove_options.jpeg_quality = *jpeg_quality_;
    o.split_bytes = static_cast<std::uint64_t>(*split_mb_ * (1 << 20));
    o.split_duration = std::chrono::seconds(*split_s_);
    auto r = Recorder::start(*bus(), std::move(o));
    if (!r) return r.status().with_context("node '" + name() + "'");
    recorder_ = std::move(*r);
    const bool split = splitting();
    log().info("node '{}': recording {} to {}{}{}", name(), *all_ ? "all topics" : std::to_string(topics_->size()) + " topic(s)",
               first_file(), split ? " and further parts (" + part_path(*output_, 1) + ", ...) every " +
                           (*split_mb_ > 0 ? std::to_string(static_cast<long>(*split_mb_)) + " MB" : std::string()) +
                           (*split_mb_ > 0 && *split_s_ > 0 ? " or " : "") +
                           (*split_s_ > 0 ? std::to_string(*split_s_) + " s" : std::string())
                     : std::string(),
               *foxglove_ ? ", with Foxglove channels (" + *foxglove_images_ + " frames)" : std::string());
    return Status::ok();
  }

  Status deactivate() override {
    if (!recorder_) return Status::ok();
    Status s = recorder_->stop();
    const RecorderStats st = recorder_->stats();
    const bool clean =
        st.dropped == 0 && st.dropped_transport == 0 && st.lost == 0 && st.rejected == 0 && st.write_errors == 0;
    const std::string where = st.parts > 1 ? std::to_string(st.parts) + " parts (" + part_path(*output_, 0) + " ... " +
                                                 part_path(*output_, st.parts - 1) + ")"
                                           : first_file();
    (clean ? log().info("node '{}': wrote {} message(s), {} bytes to {}; nothing dropped; {} tensor(s) copied "
                        "off a device", name(), st.written, st.bytes_written, where, st.device_copies)
           : log().warn("node '{}': wrote {} message(s), {} bytes to {}; not recorded: {} dropped (disk behind), "
                        "{} dropped in transport (shared memory not held: holder slots, taken back for the "
                        "pipeline — set lossless: true to keep them), {} lost (never arrived: publisher pool, "
                        "socket), {} rejected, {} write error(s); per topic in `edgevla bag info`",
                        name(), st.written, st.bytes_written, where, st.dropped, st.dropped_transport, st.lost,
                        st.rejected, st.write_errors));
    if (*foxglove_) {
      log().info("node '{}': {} Foxglove message(s) written, {} frame(s)/tensor(s) Foxglove cannot show skipped "
                 "(reasons in `edgevla bag info`)", name(), st.foxglove_written, st.foxglove_skipped);
    }
    recorder_.reset();
    return s;
  }

 private:
  bool splitting() const { return *split_mb_ > 0 || *split_s_ > 0; }
  // The file the recording starts in: `output`, or its first part when splitting.
  std::string first_file() const { return splitting() ? part_path(*output_, 0) : *output_; }

  Param<std::string> output_{"output", "", {"the .mcap file to write", {}, {}, {}, true}};
  Param<std::vector<std::string>> topics_{"topics", {}, {"topics to record", {}, {}, {}, true}};
  Param<bool> all_{"all", false, {"record every topic in the domain, including ones that appear later", {}, {}, {}, true}};
  Param<std::string> compression_{"compression", "zstd", {"chunk compression", {}, {}, {"none", "lz4", "zstd"}, true}};
  Param<double> chunk_mb_{"chunk_mb", 4.0, {"uncompressed chunk size", 0.0625, 1024.0, {}, true}};
  Param<int> max_queue_mb_{"max_queue_mb", 512, {"per-topic queue bound; beyond it the oldest are dropped", 1, 65536, {}, true}};
  Param<double> flush_period_s_{"flush_period_s", 0.5, {"longest time a chunk stays in memory", 0.01, 60.0, {}, true}};
  Param<bool> lossless_{"lossless", false,
                        {"false: an observer (never slows the graph, loses first when a publisher's pool is short); "
                         "true: never loses a message within max_queue_mb per topic",
                         {}, {}, {}, true}};
  Param<bool> foxglove_{"foxglove", false,
                        {"also write Foxglove-decodable channels: camera frames as images, every topic's numbers "
                         "as plots (T/compressed or T/raw, T/plot); the edgevla channels stay as they are",
                         {}, {}, {}, true}};
  Param<std::string> foxglove_images_{
      "foxglove_images", "jpeg",
      {"camera frames for Foxglove: jpeg or png (foxglove.CompressedImage) or raw (foxglove.RawImage)", {}, {},
       {"jpeg", "png", "raw"}, true}};
  Param<int> jpeg_quality_{"jpeg_quality", 90, {"jpeg quality of Foxglove frames", 1, 100, {}, true}};
  Param<double> split_mb_{"split_mb", 0.0,
                          {"start a new file (<stem>_001.mcap, ...) once one holds this many MB; 0: one file", 0.0,
                           1048576.0, {}, true}};
  Param<int> split_s_{"split_s", 0,
                      {"start a new file once one has recorded this many seconds; 0: one file", 0, 604800, {}, true}};
  std::unique_ptr<Recorder> recorder_;
};

EDGEVLA_REGISTER_NODE(BagRecorderNode, "bag_recorder", "records topics into an MCAP bag");

}  // namespace
}  // namespace edgevla::bag
