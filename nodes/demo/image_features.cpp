#include "nodes/demo/image_features.hpp"

#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {

Status ImageFeaturesNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(gain_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(noise_std_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(seed_));
  spec.seed_rng(static_cast<std::uint64_t>(*seed_));
  EDGEVLA_ASSIGN_OR_RETURN(features_, spec.publisher<msgs::ActionChunk>("features"));
  return spec.subscribe<msgs::Image>("image", QoS::keep_last(4), [this](const msgs::Image& m) { on_image(m); });
}

void ImageFeaturesNode::on_image(const msgs::Image& image) {
  const Tensor& px = image.pixels();
  if (px.dtype() != DType::kU8) {
    report_bad_input("image", invalid_argument("expects u8 pixels, got " + px.describe()));
    return;
  }
  const std::int64_t h = px.shape()[0], w = px.shape()[1], c = px.shape()[2];
  auto out = Tensor::empty(DType::kF32, Shape{h, c});
  if (!out) {
    report_bad_input("features", out.status());
    return;
  }
  auto pixels = px.contiguous();
  if (!pixels) {
    report_bad_input("image", pixels.status());
    return;
  }
  const std::uint8_t* p = pixels->data<std::uint8_t>();
  float* f = out->data<float>();
  for (std::int64_t y = 0; y < h; ++y) {
    for (std::int64_t ch = 0; ch < c; ++ch) {
      double sum = 0;
      for (std::int64_t x = 0; x < w; ++x) sum += p[(y * w + x) * c + ch];
      f[y * c + ch] = static_cast<float>(sum / (static_cast<double>(w) * 255.0) * *gain_ +
                                         *noise_std_ * rng().normal());
    }
  }
  auto msg = msgs::ActionChunk::make(std::move(*out), 1.0 / 30);
  if (!msg) {
    report_bad_input("features", msg.status());
    return;
  }
  msg->derive_from(image.header());
  if (auto frame = image.message().int_field("frame")) msg->set_field("frame", *frame);
  if (Status s = features_.publish(std::move(*msg)); !s.is_ok()) report_bad_input("publish", s);
}

EDGEVLA_REGISTER_NODE(ImageFeaturesNode, "image_features",
                      "per-row channel means of an Image times a gain, plus seeded noise (replay demo)");

}  // namespace edgevla::nodes
