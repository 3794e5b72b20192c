#include "runtime/model/pi0/tokenizer.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unordered_map>

namespace edgevla::model {
namespace {

// Python's str.isspace() code points (str.strip() with no argument strips these).
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
         c == 0x202f || c == 0x205f || c == 0x3000;
}

// Decodes the UTF-8 code point at s[i]; `len` gets its byte length (1 for invalid bytes,
// which then count as non-space).
char32_t decode_at(std::string_view s, std::size_t i, std::size_t& len) {
  const auto b = static_cast<unsigned char>(s[i]);
  int n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + static_cast<std::size_t>(n) > s.size()) {
    len = 1;
    return 0xfffd;
  }
  char32_t c = n == 1 ? b : b & (0x7f >> n);
  for (int k = 1; k < n; ++k) {
    const auto cb = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((cb & 0xc0) != 0x80) {
      len = 1;
      return 0xfffd;
    }
    c = (c << 6) | (cb & 0x3f);
  }
  len = static_cast<std::size_t>(n);
  return c;
}

std::string sp_error(const sentencepiece::util::Status& s) { return s.ToString(); }

// Feeds the corpus to the trainer without a temporary file.
class VectorIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& lines) : lines_(lines) {}
  bool done() const override { return i_ >= lines_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& lines_;
  std::size_t i_ = 0;
};

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::string path)
    : sp_(std::move(sp)), path_(std::move(path)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Expected<Tokenizer> Tokenizer::load(const std::string& model_path) {
  const std::string where =
      " (edgevla reads the preprocess node's 'tokenizer' param, else <checkpoint>/tokenizer.model; "
      "openpi checkpoints carry none: put PaliGemma's paligemma_tokenizer.model there, "
      "docs/checkpoint.md §4)";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model_path, ec)) {
    return not_found("tokenizer model '" + model_path + "' does not exist" + where);
  }
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  if (auto s = sp->Load(model_path); !s.ok()) {
    return data_loss("tokenizer model '" + model_path +
                     "' is not a SentencePiece model: " + sp_error(s) + where);
  }
  if (sp->bos_id() < 0) {
    return invalid_argument("tokenizer model '" + model_path +
                            "' has no BOS piece, which both prompt formats start with");
  }
  return Tokenizer(std::move(sp), model_path);
}

int Tokenizer::vocab_size() const { return sp_->GetPieceSize(); }
int Tokenizer::bos_id() const { return sp_->bos_id(); }

std::string Tokenizer::clean_prompt(std::string_view prompt) {
  // Strip (Python's notion of whitespace, which includes a few non-ASCII spaces) ...
  std::size_t begin = 0, end = prompt.size();
  while (begin < end) {
    std::size_t len = 0;
    if (!is_python_space(decode_at(prompt, begin, len))) break;
    begin += len;
  }
  while (end > begin) {
    // Step back to the first byte of the last code point.
    std::size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(prompt[start]) & 0xc0) == 0x80) --start;
    std::size_t len = 0;
    const char32_t c = decode_at(prompt, start, len);
    if (start + len != end || !is_python_space(c)) break;
    end = start;
  }
  // ... then replace.
  std::string out(prompt.substr(begin, end - begin));
  for (char& ch : out) {
    if (ch == '_' || ch == '\n') ch = ' ';
  }
  return out;
}

Expected<std::vector<int>> Tokenizer::discretize_state(std::span<const double> normalized) {
  std::vector<int> bins;
  bins.reserve(normalized.size());
  for (std::size_t i = 0; i < normalized.size(); ++i) {
    const double x = normalized[i];
    if (!std::isfinite(x)) {
      return invalid_argument("state[" + std::to_string(i) + "] is " + std::to_string(x) +
                              "; a NaN or infinite state cannot be written into the prompt");
    }
    // x * 128 is exact (a power-of-two scale), so the floor lands on the same side of every
    // bin edge -1 + k/128 as numpy's comparison against the edges does.
    bins.push_back(x < -1.0 ? -1 : static_cast<int>(std::min(std::floor(x * 128.0) + 128.0, 255.0)));
  }
  return bins;
}

std::string Tokenizer::pi05_prompt(std::string_view cleaned, std::span<const int> bins) {
  std::string s = "Task: ";
  s += cleaned;
  s += ", State: ";
  for (std::size_t i = 0; i < bins.size(); ++i) {
    if (i > 0) s += ' ';
    s += std::to_string(bins[i]);
  }
  s += ";\nAction: ";
  return s;
}

Expected<std::vector<int>> Tokenizer::encode_text(std::string_view text) const {
  std::vector<int> ids;
  if (auto s = sp_->Encode(text, &ids); !s.ok()) {
    return internal_error("tokenizer '" + path_ + "' failed to encode: " + sp_error(s));
  }
  return ids;
}

Expected<TokenizedPrompt> Tokenizer::encode(std::string_view prompt,
                                            std::optional<std::span<const double>> state,
                                            int max_len) const {
  if (max_len < 1) return invalid_argument("token budget max_len must be >= 1");
  const std::string cleaned = clean_prompt(prompt);
  std::vector<int> ids = {sp_->bos_id()};
  if (state) {
    EDGEVLA_ASSIGN_OR_RETURN(std::vector<int> bins, discretize_state(*state));
    EDGEVLA_ASSIGN_OR_RETURN(std::vector<int> text, encode_text(pi05_prompt(cleaned, bins)));
    ids.insert(ids.end(), text.begin(), text.end());
  } else {
    // Two separate encodes, concatenated, as openpi does: "\n" is tokenized on its own.
    EDGEVLA_ASSIGN_OR_RETURN(std::vector<int> text, encode_text(cleaned));
    EDGEVLA_ASSIGN_OR_RETURN(std::vector<int> newline, encode_text("\n"));
    ids.insert(ids.end(), text.begin(), text.end());
    ids.insert(ids.end(), newline.begin(), newline.end());
  }
  TokenizedPrompt out;
  out.full_length = static_cast<int>(ids.size());
  out.length = std::min(out.full_length, max_len);
  out.truncated = out.full_length > max_len;
  out.tokens.assign(static_cast<std::size_t>(max_len), 0);
  out.mask.assign(static_cast<std::size_t>(max_len), 0);
  for (int i = 0; i < out.length; ++i) {
    out.tokens[static_cast<std::size_t>(i)] = ids[static_cast<std::size_t>(i)];
    out.mask[static_cast<std::size_t>(i)] = 1;
  }
  return out;
}

Status train_tokenizer(const std::vector<std::string>& corpus_lines, int vocab_size,
                       const std::string& model_path) {
  if (corpus_lines.empty()) return invalid_argument("train_tokenizer: the corpus is empty");
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},  // whole words and numbers become pieces: short prompts
      {"vocab_size", std::to_string(vocab_size)},
      {"hard_vocab_limit", "false"},
      {"pad_id", "0"},
      {"eos_id", "1"},
      {"bos_id", "2"},
      {"unk_id", "3"},
      {"user_defined_symbols", "\n"},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      // PaliGemma's model adds no dummy prefix either: "\n" encodes as one piece on its own.
      {"add_dummy_prefix", "false"},
      {"character_coverage", "1.0"},
      {"num_threads", "1"},
      {"minloglevel", "2"},
  };
  // The seed is process-global in SentencePiece; serialize training so it cannot change
  // under another training run.
  static std::mutex mu;
  std::lock_guard lock(mu);
  sentencepiece::SetRandomGeneratorSeed(20240601);
  VectorIterator it(corpus_lines);
  std::string proto;
  if (auto s = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto); !s.ok()) {
    return invalid_argument("training a tokenizer of vocab_size " + std::to_string(vocab_size) +
                            " failed: " + sp_error(s) +
                            " (byte fallback alone needs more than 260 pieces)");
  }
  std::ofstream out(model_path, std::ios::binary | std::ios::trunc);
  if (!out) return not_found("cannot write tokenizer model '" + model_path + "'");
  out.write(proto.data(), static_cast<std::streamsize>(proto.size()));
  out.close();
  if (!out) return data_loss("writing tokenizer model '" + model_path + "' failed");
  return Status::ok();
}

std::vector<std::string> generated_corpus() {
  static const char* const kVerbs[] = {
      "pick up the", "put down the", "grasp the",  "move the",     "push the", "pull the",
      "lift the",    "place the",    "open the",   "close the",    "stack the", "wipe the",
      "pour the",    "rotate the",   "slide the",  "hand over the"};
  static const char* const kColors[] = {"red",   "green", "blue",   "yellow", "black",
                                        "white", "small", "large",  "orange", "purple"};
  static const char* const kObjects[] = {
      "cup",  "bowl", "block",  "drawer", "door",   "bottle", "sponge", "towel", "spoon",
      "lid",  "box",  "marker", "apple",  "banana", "plate",  "mug",    "can",   "cloth"};
  static const char* const kPlaces[] = {"on the table", "in the drawer", "into the bowl",
                                        "on the plate", "to the left",   "to the right",
                                        "in the box",   "on the shelf"};
  std::vector<std::string> lines;
  std::vector<std::string> instructions;
  for (const char* v : kVerbs) {
    for (const char* c : kColors) {
      for (const char* o : kObjects) instructions.push_back(std::string(v) + " " + c + " " + o);
    }
  }
  for (const char* o : kObjects) {
    for (const char* p : kPlaces) instructions.push_back(std::string("put the ") + o + " " + p);
  }
  // Capitalized and underscore-free forms as robot datasets write them.
  instructions.push_back("Pick up the cup and place it in the bowl");
  instructions.push_back("Open the top drawer and put the bowl inside");
  instructions.push_back("fold the towel");
  instructions.push_back("do something");

  // A fixed linear congruential sequence for the state bins, so the corpus never changes.
  std::uint64_t lcg = 12345;
  auto next_bin = [&lcg] {
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((lcg >> 33) % 258) - 1;  // -1 .. 256 -> clamp 256 to 255
  };
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const std::string& ins = instructions[i];
    lines.push_back(ins);
    lines.push_back(ins + "\n");  // pi0 format
    std::vector<int> bins;
    for (int d = 0; d < 8; ++d) bins.push_back(std::min(next_bin(), 255));
    lines.push_back(Tokenizer::pi05_prompt(ins, bins));  // pi0.5 format
  }
  for (int n = -1; n <= 255; ++n) lines.push_back(std::to_string(n));
  std::string all;
  for (int n = -1; n <= 255; ++n) all += (n > -1 ? " " : "") + std::to_string(n);
  lines.push_back(all);
  return lines;
}

}  // namespace edgevla::model
