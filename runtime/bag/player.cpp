#include "runtime/bag/player.hpp"

#include <thread>

#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/foxglove.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/progress.hpp"

namespace edgevla::bag {

Expected<PlayStats> play(Bus& bus, const std::string& path, const PlayOptions& o, const std::atomic<bool>* stop) {
  if (!(o.rate > 0)) return invalid_argument("play rate must be positive, got " + std::to_string(o.rate));
  auto reader = mcap::McapReader::open(path);
  if (!reader) return reader.status();
  const auto& summary = (*reader)->summary();
  const std::uint64_t bag_start = summary.statistics.message_start_time;
  const auto from = bag_start + static_cast<std::uint64_t>(o.start_offset_s * 1e9);
  const auto until = o.duration_s > 0 ? from + static_cast<std::uint64_t>(o.duration_s * 1e9) : UINT64_MAX;
  const auto wanted = [&](const std::string& topic) {
    return o.topics.empty() || std::find(o.topics.begin(), o.topics.end(), topic) != o.topics.end();
  };
  std::map<std::string, std::shared_ptr<TopicWriter>> writers;
  PlayStats stats;
  const auto stopped = [&] { return stop != nullptr && stop->load(); };
  // Progress in recorded time; a looping play, or a bag without a summary, has no known end.
  const std::uint64_t bag_end = std::min(until, summary.statistics.message_end_time);
  ProgressOptions po;
  po.what = "bag play " + path;
  po.unit = ProgressUnit::kNanoseconds;
  po.noun = "of the recording";
  po.total = !o.loop && bag_start > 0 && bag_end > from ? static_cast<std::int64_t>(bag_end - from) : -1;
  Progress progress(std::move(po));
  std::int64_t played = 0, offset = 0;  // recorded time of the finished loops; into this one
  do {
    const std::int64_t wall_start = steady_now_ns();
    bool ended = false;  // stopped or past the duration: the scan is cut short on purpose
    const auto end_here = [&] {
      ended = true;
      return failed_precondition("end of playback");
    };
    Status s = (*reader)->for_each_message([&](const mcap::MessageView& v) -> Status {
      if (stopped()) return end_here();
      const std::uint64_t t = v.record.log_time;
      if (t < from || !wanted(v.channel->topic)) return Status::ok();
      // Foxglove views of recorded topics (runtime/bag/foxglove.hpp): their source is played.
      if (v.channel->metadata.contains(kDerivedFromKey)) return Status::ok();
      if (t > until) return end_here();
      auto m = decode_record(v);
      if (!m) {
        ++stats.undecodable;
        return Status::ok();
      }
      std::string topic = v.channel->topic;
      if (auto it = o.remaps.find(topic); it != o.remaps.end()) topic = it->second;
      auto& w = writers[topic];
      if (!w) {
        auto adv = bus.advertise(topic, m->type(), "bag_play");
        if (!adv) return adv.status();
        w = *adv;
      }
      // Original timing: the message's offset into the bag, scaled by the rate.
      const auto target = wall_start + static_cast<std::int64_t>(static_cast<double>(t - from) / o.rate);
      while (!stopped()) {
        const std::int64_t left = target - steady_now_ns();
        if (left <= 0) break;
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(left, 50'000'000)));
      }
      if (Status ps = bus.republish(*w, std::move(*m)); !ps.is_ok()) return ps;
      ++stats.published;
      offset = static_cast<std::int64_t>(t - from);
      progress.set(played + offset);
      return Status::ok();
    });
    for (const auto& i : (*reader)->issues()) stats.issues.push_back(i.message);
    if (!s.is_ok() && !ended) return s;
    ++stats.loops;
    played += offset;
  } while (o.loop && !stopped());
  progress.finish();
  for (auto& [topic, w] : writers) bus.unadvertise(w);
  return stats;
}

}  // namespace edgevla::bag
