#include "runtime/model/groot/generator_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>

namespace edgevla::model::groot {
namespace {

// ---- the tokenizer -------------------------------------------------------------------------

std::string utf8(std::uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's byte-level alphabet: bytes in id order and the symbol of each byte. Printable bytes
// stand for themselves; the others get the code points from 256 on, in byte order.
struct ByteLevel {
  std::vector<int> order;             // id -> byte
  std::vector<std::string> symbol;    // byte -> symbol
  ByteLevel() : symbol(256) {
    std::vector<bool> printable(256, false);
    for (int b = 0; b < 256; ++b) printable[b] = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    for (int b = 0; b < 256; ++b)
      if (printable[b]) {
        order.push_back(b);
        symbol[b] = utf8(static_cast<std::uint32_t>(b));
      }
    int n = 0;
    for (int b = 0; b < 256; ++b)
      if (!printable[b]) {
        order.push_back(b);
        symbol[b] = utf8(static_cast<std::uint32_t>(256 + n++));
      }
  }
};

// Training text for the generated tokenizer: prompts of the kind GR00T sees (any text would do).
constexpr std::string_view kTrainText =
    "You are a helpful assistant.\n"
    "system user assistant image image image image\n"
    "pick the pear from the counter and place it in the plate\n"
    "pick up the cup and put it on the plate next to the bowl\n"
    "put the cup on the plate, then move the bowl to the left\n"
    "open the drawer and take out the spoon, then close the drawer\n"
    "place the red block on top of the blue block and the green block beside them\n"
    "move the arm slowly to the right and stop above the table\n"
    "grasp the handle of the kettle and pour the water into the glass\n"
    "turn the knob to the left until the light turns green\n"
    "stack the cups from the largest to the smallest on the tray\n"
    "wipe the table with the towel from the left side to the right side\n"
    "the robot looks at the image from each camera and moves its hand to the object\n"
    "the gripper opens, moves down, closes on the object and lifts it up\n"
    "each image of the scene becomes tokens that follow the instruction\n"
    "take the apple out of the basket and put it in the bowl on the counter\n"
    "push the button, wait for the door to open, then place the box inside\n"
    "fold the cloth in half and put it on the shelf above the sink\n"
    "the left hand holds the bottle while the right hand turns the cap\n"
    "joints of the arm: shoulder, elbow and wrist; the hand has five fingers\n"
    "numbers: 1 2 3 4 5 6 7 8 9 0, 12 steps, 50 actions, 256 pixels\n"
    "image one, image two and image three show the same table from three cameras\n"
    "La main du robot prend la tasse. Der Arm greift die Flasche. El robot mueve la caja.\n";

// Pieces for training: a run of letters (ASCII or multi-byte) with an optional leading space,
// single digits, punctuation runs, whitespace runs. Merges learned on them are valid for any
// split the encoder makes.
std::vector<std::string> train_pieces(std::string_view text) {
  std::vector<std::string> out;
  auto letter = [](unsigned char c) { return std::isalpha(c) || c >= 0x80; };
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    const auto c = static_cast<unsigned char>(text[i]);
    const bool space_then_letter = c == ' ' && i + 1 < text.size() && letter(static_cast<unsigned char>(text[i + 1]));
    if (letter(c) || space_then_letter) {
      j = i + (space_then_letter ? 1 : 0);
      while (j < text.size() && letter(static_cast<unsigned char>(text[j]))) ++j;
    } else if (std::isdigit(c)) {
      j = i + 1;
    } else if (std::isspace(c)) {
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    } else {
      while (j < text.size() && std::ispunct(static_cast<unsigned char>(text[j]))) ++j;
      if (j == i) j = i + 1;
    }
    out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

// Up to `n` merges, each the most frequent adjacent pair (ties: the smaller pair of strings);
// stops early when no pair occurs twice.
std::vector<std::pair<std::string, std::string>> train_bpe(int n, const ByteLevel& bl) {
  std::map<std::vector<std::string>, std::int64_t> counts;
  for (const std::string& piece : train_pieces(kTrainText)) {
    std::vector<std::string> word;
    for (char ch : piece) word.push_back(bl.symbol[static_cast<unsigned char>(ch)]);
    ++counts[word];
  }
  std::vector<std::pair<std::vector<std::string>, std::int64_t>> words(counts.begin(), counts.end());
  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int>(merges.size()) < n) {
    std::map<std::pair<std::string, std::string>, std::int64_t> pairs;
    for (const auto& [w, f] : words)
      for (std::size_t k = 0; k + 1 < w.size(); ++k) pairs[{w[k], w[k + 1]}] += f;
    const std::pair<std::string, std::string>* best = nullptr;
    std::int64_t best_count = 1;
    for (const auto& [p, f] : pairs) {
      if (f > best_count) {  // strictly greater: the first (smallest) pair wins ties
        best = &p;
        best_count = f;
      }
    }
    if (best == nullptr) break;
    const auto pick = *best;
    merges.push_back(pick);
    for (auto& [w, f] : words) {
      std::vector<std::string> merged;
      for (std::size_t k = 0; k < w.size(); ++k) {
        if (k + 1 < w.size() && w[k] == pick.first && w[k + 1] == pick.second) {
          merged.push_back(pick.first + pick.second);
          ++k;
        } else {
          merged.push_back(w[k]);
        }
      }
      w = std::move(merged);
    }
  }
  return merges;
}

// Qwen's added tokens in id order from <|endoftext|> (content, special).
constexpr std::pair<std::string_view, bool> kAddedTokens[] = {
    {"<|endoftext|>", true},    {"<|im_start|>", true},       {"<|im_end|>", true},
    {"<|object_ref_start|>", true}, {"<|object_ref_end|>", true}, {"<|box_start|>", true},
    {"<|box_end|>", true},      {"<|quad_start|>", true},     {"<|quad_end|>", true},
    {"<|vision_start|>", true}, {"<|vision_end|>", true},     {"<|vision_pad|>", true},
    {"<|image_pad|>", true},    {"<|video_pad|>", true},      {"<tool_call>", false},
    {"</tool_call>", false},    {"<|fim_prefix|>", false},    {"<|fim_middle|>", false},
    {"<|fim_suffix|>", false},  {"<|fim_pad|>", false},       {"<|repo_name|>", false},
    {"<|file_sep|>", false},    {"<tool_response>", false},   {"</tool_response>", false},
    {"<think>", false},         {"</think>", false},          {"<IMG_CONTEXT>", true},
    {"<img>", true},            {"</img>", true},             {"<box>", true},
    {"</box>", true},           {"<quad>", true},             {"</quad>", true},
    {"<ref>", true},            {"</ref>", true},             {"<interval>", true},
    {"</interval>", true}};


}  // namespace

Expected<TokenizerLayout> tokenizer_layout(int n_merges, std::int64_t vocab_size) {
  const ByteLevel bl;
  TokenizerLayout t;
  std::set<std::string> known;
  for (int b : bl.order) {
    t.vocab.emplace_back(bl.symbol[b], static_cast<std::int64_t>(t.vocab.size()));
    known.insert(bl.symbol[b]);
  }
  t.merges = train_bpe(n_merges, bl);
  for (const auto& [a, b] : t.merges) {
    if (known.insert(a + b).second) t.vocab.emplace_back(a + b, static_cast<std::int64_t>(t.vocab.size()));
  }
  std::int64_t base = static_cast<std::int64_t>(t.vocab.size());
  if (vocab_size >= kQwenVocab) {
    // Qwen's own ids for the added tokens; reserved entries keep the vocabulary dense below them.
    for (std::int64_t i = base; i < kQwenFirstAdded; ++i) t.vocab.emplace_back("<|reserved_" + std::to_string(i) + "|>", i);
    base = kQwenFirstAdded;
  }
  const auto n_added = static_cast<std::int64_t>(std::size(kAddedTokens));
  if (base + n_added > vocab_size) {
    return invalid_argument("groot generator: a vocabulary of " + std::to_string(vocab_size) + " cannot hold " +
                            std::to_string(base) + " symbols and " + std::to_string(n_added) + " added tokens");
  }
  for (std::int64_t k = 0; k < n_added; ++k) {
    t.added.emplace_back(std::string(kAddedTokens[k].first), base + k, kAddedTokens[k].second);
  }
  return t;
}


}  // namespace edgevla::model::groot
