#include "nodes/action_head/action_head_node.hpp"

#include <algorithm>

#include "runtime/node/node_registry.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::nodes {

Status ActionHeadNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(params_.declare(spec));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(num_steps_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(norm_stats_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(output_dim_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(embodiment_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(action_dt_s_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(seed_));
  if (*seed_ >= 0) spec.seed_rng(static_cast<std::uint64_t>(*seed_));
  EDGEVLA_RETURN_IF_ERROR(params_.check(spec, model::kActionHead));
  EDGEVLA_ASSIGN_OR_RETURN(actions_, spec.publisher<msgs::ActionChunk>("actions"));
  // A prefix cache on a device is read in place by an engine there, else copied (for_engine).
  return spec.subscribe<msgs::BackboneOutput>("prefix", QoS::keep_last(1).taking_device_tensors(),
                                              [this](const msgs::BackboneOutput& m) { on_backbone(m); });
}

Status ActionHeadNode::activate() {
  // Up to 1000 steps may be set at run time; the velocity buffer is only a diagnostic.
  EDGEVLA_RETURN_IF_ERROR(stage_.open(log(), params_, model::kActionHead, 1000));
  auto decoder = stage_.model->make_action_decoder({*norm_stats_, *output_dim_, *embodiment_});
  if (!decoder) {
    stage_.close();
    return decoder.status().with_context("node '" + name() + "'");
  }
  decoder_ = std::move(*decoder);
  // The engine's noise input, drawn by the node so that replay redraws it.
  noise_ = Tensor();
  ahead_ = Tensor();
  ahead_valid_ = false;
  for (const backends::TensorSpec& spec : stage_.engine->inputs()) {
    if (spec.name != "noise") continue;
    EDGEVLA_ASSIGN_OR_RETURN(noise_, Tensor::empty(DType::kF32, spec.max_shape));
    EDGEVLA_ASSIGN_OR_RETURN(ahead_, Tensor::empty(DType::kF32, spec.max_shape));
  }
  report_engine(stage_.engine->describe());
  report_memory(stage_.engine->resident_bytes());
  return Status::ok();
}

Status ActionHeadNode::deactivate() {
  decoder_.reset();
  stage_.close();
  return Status::ok();
}

void ActionHeadNode::on_backbone(const msgs::BackboneOutput& in) {
  if (Status s = infer(in); !s.is_ok()) report_bad_input("prefix", s);
  draw_next_noise();
}

// Noise from the node's generator: its state is stamped on the chunk, so replay redraws it.
void ActionHeadNode::draw_noise() {
  const std::span<float> out{noise_.data<float>(), static_cast<std::size_t>(noise_.numel())};
  Rng& g = rng();
  if (ahead_valid_ && g.state() == ahead_from_) {
    std::copy_n(ahead_.data<float>(), out.size(), out.data());
    g.set_state(ahead_to_);
  } else {
    g.fill_normal(out);
  }
  ahead_valid_ = false;
}

// Draws what draw_noise() will draw next, from a copy of the generator (its state is unchanged).
void ActionHeadNode::draw_next_noise() {
  if (ahead_.numel() == 0 || (ahead_valid_ && rng().state() == ahead_from_)) return;
  Rng g = rng();
  ahead_from_ = g.state();
  g.fill_normal({ahead_.data<float>(), static_cast<std::size_t>(ahead_.numel())});
  ahead_to_ = g.state();
  ahead_valid_ = true;
}

Status ActionHeadNode::infer(const msgs::BackboneOutput& in) {
  backends::Engine& engine = *stage_.engine;
  if (in.family() != engine.family()) {
    return invalid_argument("backbone output comes from a '" + in.family() + "' model but this action head runs '" +
                            std::string(engine.family()) + "' (backbone and action head must load the same checkpoint)");
  }
  engine.clear_bindings();
  for (const backends::TensorSpec& spec : engine.inputs()) {
    if (spec.name == "noise") {
      draw_noise();
      EDGEVLA_RETURN_IF_ERROR(engine.bind(spec.name, noise_));
      continue;
    }
    const Tensor* t = in.message().tensor(spec.name);
    if (t == nullptr) {
      if (spec.required) {
        return invalid_argument("backbone output has no '" + spec.name + "' (" + spec.description +
                                "); backbone and action head must load the same checkpoint");
      }
      continue;
    }
    EDGEVLA_ASSIGN_OR_RETURN(Tensor input, for_engine(spec, *t, stage_.host_copies));
    EDGEVLA_RETURN_IF_ERROR(engine.bind(spec.name, input).with_context("backbone output"));
  }
  backends::RunOptions ro;
  ro.num_steps = *num_steps_ > 0 ? *num_steps_ : stage_.model->default_num_steps();
  const std::int64_t run_start_ns = wall_now_ns();
  EDGEVLA_RETURN_IF_ERROR(engine.run(ro));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor normalized, engine.output("actions"));

  // Un-normalize (the family's decoder: the robot's own rows and dims); a non-finite chunk is
  // not published.
  const std::int64_t H = normalized.shape()[0];
  EDGEVLA_ASSIGN_OR_RETURN(Tensor out, actions_.loan(DType::kF32, Shape{decoder_->out_rows(H), decoder_->out_dim()}));
  std::vector<std::pair<std::string, const Tensor*>> context;
  for (const auto& t : in.message().tensors()) context.emplace_back(t.name, &t.tensor);
  EDGEVLA_RETURN_IF_ERROR(decoder_->decode(normalized, context, out).with_context("nothing published"));
  EDGEVLA_ASSIGN_OR_RETURN(Message m, msgs::ActionChunk::make(std::move(out), *action_dt_s_));
  if (auto seq = in.message().int_field("observation_seq")) m.set_field("observation_seq", *seq);
  m.set_field("num_steps", static_cast<std::int64_t>(ro.num_steps));
  // A prefix published while the backbone's device work still ran (a ready fence): the engine's
  // wait for that work is the backbone's time, not this stage's (prefix_wait_ms). From another
  // process, the prefix's delivery and this node's work before the engine ran are hidden under
  // that work too (prefix_overlap_ms: from the backbone's publish to the engine's start); the
  // engine's own work before its wait stays in action_head_ms.
  const backends::RunTimings& timings = engine.last_timings();
  double overlap_ms = 0;
  if (timings.inputs_ready_ns > 0 && !in.header().trace.empty()) {
    overlap_ms = std::max(0.0, static_cast<double>(run_start_ns - in.header().trace.back().stamp_ns) / 1e6);
  }
  m.set_field("action_head_ms", timings.total_ms - timings.input_wait_ms);
  stage_.stamp_replay_params(m);
  if (auto ms = in.message().number_field("preprocess_ms")) m.set_field("preprocess_ms", *ms);
  if (auto ms = in.message().number_field("backbone_ms")) {
    m.set_field("backbone_ms", *ms + timings.input_wait_ms + overlap_ms);
  }
  if (timings.input_wait_ms > 0) m.set_field("prefix_wait_ms", timings.input_wait_ms);
  if (overlap_ms > 0) m.set_field("prefix_overlap_ms", overlap_ms);
  m.derive_from(in.header());
  EDGEVLA_RETURN_IF_ERROR(actions_.publish(std::move(m)));
  if (stage_.memory_report_due()) report_memory(engine.resident_bytes());
  return Status::ok();
}

EDGEVLA_REGISTER_NODE(ActionHeadNode, "action_head",
                      "a model family's action head (pi0/pi0.5: action expert + Euler flow matching): "
                      "BackboneOutput -> ActionChunk");

}  // namespace edgevla::nodes
