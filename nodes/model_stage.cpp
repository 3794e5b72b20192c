#include "nodes/model_stage.hpp"

namespace edgevla::nodes {

Status ModelStageParams::declare(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(checkpoint));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(backend));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(threads));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(model_type));
  if (checkpoint->empty()) {
    return invalid_argument("param 'checkpoint' is not set (a folder with config.json and model.safetensors; "
                            "make one with `edgevla model init --config small --out DIR`)");
  }
  return Status::ok();
}

Status ModelStage::open(const ModelStageParams& p, backends::Stage stage, int max_steps) {
  model::OpenOptions o;
  if (*p.model_type != "auto") {
    EDGEVLA_ASSIGN_OR_RETURN(o.expect_type, model::parse_model_type(*p.model_type));
  }
  EDGEVLA_ASSIGN_OR_RETURN(checkpoint, model::Checkpoint::open(*p.checkpoint, o));
  EDGEVLA_ASSIGN_OR_RETURN(auto backend, backends::make_backend(*p.backend));
  backends::EngineOptions eo;
  eo.threads = *p.threads;
  eo.max_steps = max_steps;
  EDGEVLA_ASSIGN_OR_RETURN(engine, backend->create(stage, *checkpoint, eo));
  return Status::ok();
}

void ModelStage::close() {
  engine.reset();
  checkpoint.reset();
}

}  // namespace edgevla::nodes
