// The family-neutral seam between model families (pi0 / pi0.5, later GR00T...) and the rest of
// edgevla. A family turns a checkpoint folder into a Model; a Model names its inference stages
// and declares, per stage, the named, typed tensors the stage takes and produces. Backends make
// an engine for a (family, stage) pair (runtime/backends/backend.hpp); the stage nodes bind
// message tensors to engine inputs by those names and publish the outputs under them, so a
// node never knows which family it runs. Adding a family adds folders (model code here under
// runtime/model/<family>/, engines under runtime/backends/<backend>/<family>/), not branches.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/tensor.hpp"

namespace edgevla::model {

// The two model stages every family has: the backbone (once per observation) and the action
// head (once per chunk, from the backbone's output).
inline constexpr std::string_view kBackbone = "backbone";
inline constexpr std::string_view kActionHead = "action_head";

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;  // the dtype produced; inputs may accept more (accepts)
  Shape max_shape;           // the largest shape accepted or produced
  bool required = true;      // inputs: must be bound for run(); outputs: false = diagnostic
  std::string description;
  std::vector<DType> accepts;  // every dtype accepted when bound (empty: dtype only); outputs are
                               // written in the bound tensor's dtype
  // Where the engine reads (inputs) or would like (outputs) the tensor without a copy. Host
  // tensors are accepted by every engine; a tensor on another device is copied to the host first.
  // A family declares cpu; an engine on a device sets its own.
  Device device = Device::cpu();

  bool accepts_dtype(DType t) const;
};

struct StageSpec {
  std::string name;                  // "backbone", "action_head"
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::int64_t weight_bytes = 0;     // checkpoint bytes the stage reads
  std::int64_t weight_elements = 0;  // their element count (bytes in another dtype: elements × its size)
};

// Turns a chunk of normalized actions from the action head into the robot's actions
// (un-normalized, relative made absolute, cut to the robot's dims).
class ActionDecoder {
 public:
  virtual ~ActionDecoder() = default;
  // Robot dims per action (columns of decode's output).
  virtual std::int64_t out_dim() const = 0;
  // Rows of decode's output for a normalized chunk of `horizon` rows (pi0: all of them; GR00T:
  // the embodiment's own horizon, which may be shorter than the model's).
  virtual std::int64_t out_rows(std::int64_t horizon) const = 0;
  // normalized f32 [H, A] -> out f32 [out_rows(H), out_dim()]. `context` holds the action head's input
  // message tensors (e.g. the raw state, for relative actions). A non-finite value is an error.
  virtual Status decode(const Tensor& normalized, std::span<const std::pair<std::string, const Tensor*>> context,
                        const Tensor& out) const = 0;
};

// One camera frame for a family's preprocessing: 8-bit RGB [height][width][3], by camera name.
struct CameraFrame {
  std::string name;
  int height = 0, width = 0;
  std::span<const std::uint8_t> rgb;
};

struct PreprocessInput {
  std::vector<CameraFrame> cameras;
  std::string prompt;
  // The robot's raw state by group (a family with one state vector reads "state"), as the robot
  // sent it: float64, so a family may normalize from the raw values in double.
  std::vector<std::pair<std::string, std::vector<double>>> state;
  // Where the image tensors' storage comes from (empty: Tensor::empty). The preprocess node
  // passes its publisher's loans, so each image is written once, into the shared memory the next
  // stage reads, not copied there afterwards. Called on run()'s own thread, once per image; an
  // error fails run().
  std::function<Expected<Tensor>(DType, const Shape&)> image_buffer;
};

// The storage for one image tensor: `in.image_buffer`'s, checked for the shape and dtype asked for.
Expected<Tensor> image_tensor(const PreprocessInput& in, DType dtype, const Shape& shape);

// A prompt over the model's token budget: refused (run() fails with out_of_range) or cut (run()
// succeeds and says so in PreprocessOutput::note). A family that never cuts refuses kTruncate.
enum class LongPrompt { kError, kTruncate };

struct PreprocessorOptions {
  std::string embodiment;  // the robot, for families that serve several ("" = the only one)
  int pad_to = 0;          // prompt tokens to left-pad to (0: no padding)
  // The cameras to read, a subset of the model's (empty: all); the model treats the others as
  // absent. A family that needs every camera refuses a subset.
  std::vector<std::string> cameras;
  // Asset files by name in place of the checkpoint's own (pi0: tokenizer, norm_stats); a name the
  // family does not know is refused, naming the ones it does.
  std::vector<std::pair<std::string, std::string>> assets;
  LongPrompt long_prompt = LongPrompt::kError;
  std::string variant;  // "" or "auto": the checkpoint's; else a checkpoint of another variant is refused
  int state_dim = 0;    // the robot's state length (0: any the model takes); checked against the model
  // Threads the camera frames' resizing may use (frame_threads(): 0 picks by the core count); the
  // inputs are the same bytes whatever the count. Preprocessor::threads() says how many it uses.
  int threads = 1;
};

// The frame pipeline's thread count for a requested one: `requested` when >= 1, else one per
// four online cores, 1 to 4 (a 2-core machine: 1; 16 cores: 4).
int frame_threads(int requested);

// One group of the robot's raw state as a preprocessor reads it (PreprocessInput::state).
struct StateGroupSpec {
  std::string name;
  std::int64_t dim = 0;  // values (0: any width)
};

struct PreprocessOutput {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::string note;  // non-fatal, for the caller to log once per prompt (e.g. the prompt was cut)
};

// Turns one observation into the model's inputs, named as the stages' TensorSpecs name them
// (plus what the action decoder reads, e.g. the raw state), so the preprocess node needs no
// family code. Made from the checkpoint's config (Family::make_preprocessor); load() reads the
// rest before the first check_state() or run().
class Preprocessor {
 public:
  virtual ~Preprocessor() = default;
  // The cameras it reads, in the model's view order.
  virtual const std::vector<std::string>& cameras() const = 0;
  // The state groups it reads, in the order a flat state vector lists them (at most one has
  // no fixed width: it takes what the others leave).
  virtual const std::vector<StateGroupSpec>& state_groups() const = 0;
  // Reads the assets run() needs that the config does not hold (pi0: tokenizer, norm stats);
  // again after a failure or to reload. Errors name the file and the fix.
  virtual Status load() = 0;
  // A frame of `camera` that run() would refuse for its size, caught when it arrives.
  virtual Status check_frame(std::string_view camera, int height, int width) const = 0;
  // A flat state vector (the groups concatenated) that run() would refuse for its length or
  // the model's limits. Finiteness is the caller's to check.
  virtual Status check_state(std::span<const double> state) const = 0;
  // A prompt refused whatever the frames and state (over the budget under LongPrompt::kError,
  // where its length does not depend on the state).
  virtual Status check_prompt(std::string_view prompt) const = 0;
  virtual Expected<PreprocessOutput> run(const PreprocessInput& input) const = 0;
  // Threads run() resizes the frames on (PreprocessorOptions::threads, or fewer where the family
  // has less to split: pi0 takes one a camera). run() is for one caller at a time.
  virtual int threads() const { return 1; }
};

struct DecoderOptions {
  std::string norm_stats;  // stats file (empty: the checkpoint's own)
  int output_dim = 0;      // 0: the stats' length
  std::string embodiment;  // checkpoints of several robots (groot): the robot's tag (empty: the only one)
};

// An opened checkpoint of one family.
class Model {
 public:
  virtual ~Model() = default;
  virtual std::string_view family() const = 0;   // "pi0" (pi0 and pi0.5)
  virtual std::string_view variant() const = 0;  // "pi0", "pi05"
  virtual const std::string& dir() const = 0;
  virtual const std::vector<StageSpec>& stages() const = 0;
  // The stage called `name`, or not_found listing the family's stages.
  Expected<const StageSpec*> stage(std::string_view name) const;
  // Euler steps of the action head unless a node says otherwise.
  virtual int default_num_steps() const = 0;
  // Bytes of every weight the model reads.
  virtual std::int64_t weight_bytes() const = 0;
  virtual Expected<std::unique_ptr<ActionDecoder>> make_action_decoder(const DecoderOptions& options) const = 0;
};

struct ModelOpenOptions {
  std::string variant;  // "" or "auto": any; else a checkpoint of another variant is refused
};

// A model family: recognizes and opens its checkpoints.
class Family {
 public:
  virtual ~Family() = default;
  virtual std::string_view name() const = 0;
  // True when `dir` looks like a checkpoint of this family (reads headers only).
  virtual bool recognizes(const std::string& dir) const = 0;
  // Header-only look at `dir`: the stages and the bytes each would load, for configure-time
  // checks (nothing is mapped). Only a checkpoint of another variant than asked is an error
  // (invalid_argument); a missing or damaged folder gives no stages (open() reports it).
  virtual Expected<std::vector<StageSpec>> peek(const std::string& dir, const ModelOpenOptions& options) const = 0;
  virtual Expected<std::shared_ptr<const Model>> open(const std::string& dir, const ModelOpenOptions& options) const = 0;
  // The family's preprocessing for checkpoint folder `dir`, made from its config without
  // opening the weights (load() reads the assets). Errors name the option and the fix.
  virtual Expected<std::unique_ptr<Preprocessor>> make_preprocessor(const std::string& dir,
                                                                    const PreprocessorOptions& options) const = 0;
};

// Registers a family (static registration from the family's library).
bool register_family(std::unique_ptr<Family> family);
// The family called `name`; "auto" asks each registered family whether it recognizes `dir`.
Expected<const Family*> find_family(std::string_view name, const std::string& dir);
std::vector<std::string> family_names();

}  // namespace edgevla::model
