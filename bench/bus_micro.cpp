// CPU cost of the bus's own work, without thread wake-ups: publish + pop on one thread for
// payload sizes 1 KB..64 MB, against memcpy of the same payload (what a copying bus pays), and
// envelope encode/decode. Google Benchmark; compare BM_Bus_PublishPop with BM_Memcpy per size.
#include <benchmark/benchmark.h>

#include <cstring>

#include "msgs/types.hpp"
#include "msgs/wire.hpp"
#include "runtime/bus/bus.hpp"

namespace edgevla {
namespace {

void BM_Memcpy(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> a(size, std::byte{1}), b(size);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), size);
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}
BENCHMARK(BM_Memcpy)->RangeMultiplier(64)->Range(1 << 10, 64 << 20);

void BM_Bus_PublishPop(benchmark::State& state) {
  const auto size = state.range(0);
  BusOptions o;
  o.cross_process = false;  // the in-process path alone
  auto bus = std::move(*Bus::create(o));
  auto w = *bus->advertise("/b", "Blob", "bench");
  auto waker = std::make_shared<Waker>();
  auto q = std::make_shared<SubscriptionQueue>("/b", "", QoS::keep_last(4), "sink", waker);
  (void)bus->attach(q);
  Tensor payload = *Tensor::empty(DType::kU8, Shape{size});
  for (auto _ : state) {
    Message m("Blob", 1);
    m.set_tensor("data", payload);
    (void)bus->publish(*w, std::move(m));
    MessagePtr got = q->pop();
    benchmark::DoNotOptimize(got->tensors()[0].tensor.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * size);
}
BENCHMARK(BM_Bus_PublishPop)->RangeMultiplier(64)->Range(1 << 10, 64 << 20);

Message image() {
  Tensor px = *Tensor::empty(DType::kU8, Shape{480, 640, 3});
  Message m = *msgs::Image::make(px, "rgb8", "base");
  m.header().topic = "/camera/image";
  m.header().trace = {{"camera", 1}, {"preprocess", 2}};
  return m;
}

void BM_Wire_EncodeEnvelope(benchmark::State& state) {
  const Message m = image();
  std::vector<wire::TensorPlacement> p = {ShmLocation{"/edgevla.1000.42.1.7", 4096, 921600, 3}};
  std::string out;
  for (auto _ : state) {
    (void)wire::encode_envelope(m, p, out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Wire_EncodeEnvelope);

void BM_Wire_DecodeEnvelope(benchmark::State& state) {
  const Message m = image();
  std::vector<wire::TensorPlacement> p = {ShmLocation{"/edgevla.1000.42.1.7", 4096, 921600, 3}};
  std::string env;
  (void)wire::encode_envelope(m, p, env);
  auto backing = *Buffer::allocate_heap(921600);
  const wire::ShmResolver resolve = [&](const ShmLocation&) -> Expected<BufferPtr> { return backing; };
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(env.data()), env.size());
  for (auto _ : state) {
    auto d = wire::decode(bytes, {}, resolve);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_Wire_DecodeEnvelope);

}  // namespace
}  // namespace edgevla

BENCHMARK_MAIN();
