#include "nodes/action_head/action_head_node.hpp"

#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {

Status ActionHeadNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(params_.declare(spec));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(num_steps_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(norm_stats_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(output_dim_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(action_dt_s_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(seed_));
  if (*seed_ >= 0) spec.seed_rng(static_cast<std::uint64_t>(*seed_));
  EDGEVLA_RETURN_IF_ERROR(params_.check(spec, backends::Stage::kActionHead));
  EDGEVLA_ASSIGN_OR_RETURN(actions_, spec.publisher<msgs::ActionChunk>("actions"));
  return spec.subscribe<msgs::PrefixCache>("prefix", QoS::keep_last(1),
                                           [this](const msgs::PrefixCache& m) { on_prefix(m); });
}

Status ActionHeadNode::activate() {
  // Up to 1000 steps may be set at run time; the velocity buffer is only a diagnostic.
  EDGEVLA_RETURN_IF_ERROR(stage_.open(params_, backends::Stage::kActionHead, 1000));
  const model::ModelConfig& c = stage_.checkpoint->config();
  std::string path = *norm_stats_;
  if (path.empty()) {
    EDGEVLA_ASSIGN_OR_RETURN(path, model::find_norm_stats(*params_.checkpoint, c.asset_id));
  }
  EDGEVLA_ASSIGN_OR_RETURN(stats_, model::load_norm_stats(path));
  kind_ = model::norm_kind_for(c.type);
  if (kind_ == model::NormKind::kQuantile && !stats_.actions.has_quantiles()) {
    return invalid_argument("norm stats '" + path + "' have no q01/q99 for actions, which " +
                            std::string(model::model_type_name(c.type)) + " un-normalizes with (recompute the stats)");
  }
  out_dim_ = *output_dim_ > 0 ? *output_dim_ : static_cast<int>(stats_.actions.size());
  if (out_dim_ > c.action_dim) {
    return invalid_argument("output_dim " + std::to_string(out_dim_) + " exceeds the model's action_dim " +
                            std::to_string(c.action_dim));
  }
  EDGEVLA_ASSIGN_OR_RETURN(noise_, Tensor::empty(DType::kF32, Shape{c.action_horizon, c.action_dim}));
  report_memory(stage_.engine->resident_bytes());
  return Status::ok();
}

Status ActionHeadNode::deactivate() {
  stage_.close();
  return Status::ok();
}

void ActionHeadNode::on_prefix(const msgs::PrefixCache& prefix) {
  if (Status s = infer(prefix); !s.is_ok()) report_bad_input("prefix", s);
}

Status ActionHeadNode::infer(const msgs::PrefixCache& prefix) {
  backends::Engine& engine = *stage_.engine;
  const model::ModelConfig& c = stage_.checkpoint->config();
  const std::int64_t H = c.action_horizon, A = c.action_dim;
  if (prefix.num_layers() != c.expert.depth) {
    return invalid_argument("prefix cache has " + std::to_string(prefix.num_layers()) + " layers, this model " +
                            std::to_string(c.expert.depth) + " (backbone and action head must load the same checkpoint)");
  }
  engine.clear_bindings();
  for (std::int64_t l = 0; l < c.expert.depth; ++l) {
    EDGEVLA_RETURN_IF_ERROR(engine.bind("k." + std::to_string(l), prefix.keys(static_cast<int>(l))));
    EDGEVLA_RETURN_IF_ERROR(engine.bind("v." + std::to_string(l), prefix.values(static_cast<int>(l))));
  }
  EDGEVLA_RETURN_IF_ERROR(engine.bind("mask", prefix.mask()));
  if (const Tensor* state = prefix.message().tensor("state")) {
    if (state->numel() != A) {
      return invalid_argument("prefix cache state has " + std::to_string(state->numel()) + " entries, the model needs " +
                              std::to_string(A) + " (normalized and padded by preprocess)");
    }
    EDGEVLA_RETURN_IF_ERROR(engine.bind("state", *state));
  }
  // Noise from the node's generator: its state is stamped on the chunk, so replay redraws it.
  rng().fill_normal({noise_.data<float>(), static_cast<std::size_t>(noise_.numel())});
  EDGEVLA_RETURN_IF_ERROR(engine.bind("noise", noise_));
  backends::RunOptions ro;
  ro.num_steps = *num_steps_ > 0 ? *num_steps_ : c.num_steps;
  EDGEVLA_RETURN_IF_ERROR(engine.run(ro));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor normalized, engine.output("actions"));

  // Un-normalize each row, keep the robot's dims; a non-finite chunk is not published.
  EDGEVLA_ASSIGN_OR_RETURN(Tensor out, actions_.loan(DType::kF32, Shape{H, out_dim_}));
  EDGEVLA_RETURN_IF_ERROR(model::unnormalize_chunk(
      {normalized.data<float>(), static_cast<std::size_t>(H * A)}, A, stats_.actions, kind_, out_dim_,
      {out.data<float>(), static_cast<std::size_t>(H * out_dim_)}).with_context("nothing published"));
  EDGEVLA_ASSIGN_OR_RETURN(Message m, msgs::ActionChunk::make(std::move(out), *action_dt_s_));
  if (auto seq = prefix.message().int_field("observation_seq")) m.set_field("observation_seq", *seq);
  m.set_field("num_steps", static_cast<std::int64_t>(ro.num_steps));
  m.set_field("action_head_ms", engine.last_timings().total_ms);
  stage_.stamp_replay_params(m);
  for (const char* stage : {"preprocess_ms", "backbone_ms"}) {
    if (auto ms = prefix.message().number_field(stage)) m.set_field(stage, *ms);
  }
  m.derive_from(prefix.header());
  EDGEVLA_RETURN_IF_ERROR(actions_.publish(std::move(m)));
  if (stage_.memory_report_due()) report_memory(engine.resident_bytes());
  return Status::ok();
}

EDGEVLA_REGISTER_NODE(ActionHeadNode, "action_head",
                      "pi0/pi0.5 action expert + Euler flow matching: PrefixCache -> ActionChunk");

}  // namespace edgevla::nodes
