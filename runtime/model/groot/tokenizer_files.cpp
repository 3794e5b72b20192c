#include "runtime/model/groot/tokenizer_files.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

namespace edgevla::model::groot::tokenizer_files {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// --- files
// -----------------------------------------------------------------------------------------

Expected<std::string> read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("groot tokenizer: cannot open '" + path + "'; " + std::string(kFix));
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad())
    return data_loss("groot tokenizer: reading '" + path + "' failed; " + std::string(kFix));
  return ss.str();
}

Expected<json> read_json_file(const std::string& path) {
  EDGEVLA_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse errors and numbers out of range (1e400)
    return data_loss("groot tokenizer: '" + path + "' is not valid JSON (" + e.what() + ", " +
                     std::to_string(text.size()) +
                     " bytes in the file): it is truncated or corrupt; " + std::string(kFix));
  }
}


Status unsupported(const std::string& path, const std::string& what) {
  return invalid_argument("groot tokenizer: '" + path + "' " + what +
                          ", which Qwen's byte-level BPE does not use and this tokenizer does not "
                          "implement; " +
                          std::string(kFix));
}

// "a b" -> {a, b}; anything else is malformed.
std::optional<std::pair<std::string, std::string>> split_merge(std::string_view line) {
  const std::size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size() ||
      line.find(' ', sp + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return std::make_pair(std::string(line.substr(0, sp)), std::string(line.substr(sp + 1)));
}

Status read_normalizer(const json& n, const std::string& path, bool& nfc) {
  if (n.is_null()) {
    nfc = false;
    return Status::ok();
  }
  const std::string type = n.value("type", std::string());
  if (type == "NFC") {
    nfc = true;
    return Status::ok();
  }
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    nfc = false;
    for (const json& s : n["normalizers"]) {
      if (s.value("type", std::string()) != "NFC")
        return unsupported(path, "has normalizer " + s.dump());
      nfc = true;
    }
    return Status::ok();
  }
  return unsupported(path, "has normalizer " + n.dump());
}

Status read_byte_level(const json& b, const std::string& path, bool allow_regex) {
  if (b.value("add_prefix_space", false))
    return unsupported(path, "sets ByteLevel add_prefix_space");
  if (!allow_regex && b.value("use_regex", true)) {
    return unsupported(path, "sets ByteLevel use_regex after its Split (GPT-2's second split)");
  }
  return Status::ok();
}

Status read_pre_tokenizer(const json& p, const std::string& path, std::string& regex) {
  if (p.is_null()) return unsupported(path, "has no pre_tokenizer");
  const std::string type = p.value("type", std::string());
  if (type != "Sequence")
    return unsupported(path,
                       "has pre_tokenizer " + type + " (expected Sequence[Split, ByteLevel])");
  const json& seq = p.at("pretokenizers");
  if (!seq.is_array() || seq.size() != 2 || seq[0].value("type", std::string()) != "Split" ||
      seq[1].value("type", std::string()) != "ByteLevel") {
    return unsupported(path,
                       "has pre_tokenizer " + p.dump() + " (expected Sequence[Split, ByteLevel])");
  }
  const json& split = seq[0];
  if (!split.contains("pattern") || !split["pattern"].contains("Regex")) {
    return unsupported(path, "has a Split pre-tokenizer without a Regex pattern");
  }
  if (split.value("behavior", std::string()) != "Isolated" || split.value("invert", false)) {
    return unsupported(path,
                       "has a Split pre-tokenizer other than behavior Isolated, invert false");
  }
  regex = split["pattern"]["Regex"].get<std::string>();
  return read_byte_level(seq[1], path, /*allow_regex=*/false);
}

Expected<Parts> read_tokenizer_json(const std::string& path) {
  EDGEVLA_ASSIGN_OR_RETURN(json j, read_json_file(path));
  Parts parts;
  parts.source = path;
  try {
    if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
      return data_loss("groot tokenizer: '" + path + "' has no \"model\" object; " +
                       std::string(kFix));
    }
    const json& m = j["model"];
    if (m.contains("type") && m["type"] != "BPE") {
      return unsupported(path, "has model type " + m["type"].dump() + " (expected BPE)");
    }
    for (const char* key : {"vocab", "merges"}) {
      if (!m.contains(key)) {
        return data_loss("groot tokenizer: '" + path + "' lacks model." + key + "; " +
                         std::string(kFix));
      }
    }
    if (m.contains("dropout") && !m["dropout"].is_null())
      return unsupported(path, "sets BPE dropout");
    if (m.value("byte_fallback", false)) return unsupported(path, "sets byte_fallback");
    if (m.value("ignore_merges", false)) return unsupported(path, "sets ignore_merges");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (m.contains(key) && !m[key].is_null() && !m[key].get<std::string>().empty()) {
        return unsupported(path, std::string("sets ") + key);
      }
    }
    if (!m["vocab"].is_object()) {
      return data_loss("groot tokenizer: '" + path + "' model.vocab is not an object; " +
                       std::string(kFix));
    }
    for (const auto& [symbol, id] : m["vocab"].items())
      parts.vocab.emplace_back(symbol, id.get<std::int64_t>());
    if (!m["merges"].is_array()) {
      return data_loss("groot tokenizer: '" + path + "' model.merges is not an array; " +
                       std::string(kFix));
    }
    const json& merges = m["merges"];
    for (std::size_t r = 0; r < merges.size(); ++r) {
      const json& e = merges[r];
      std::optional<std::pair<std::string, std::string>> pair;
      if (e.is_string()) {
        pair = split_merge(e.get<std::string>());
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        pair = std::make_pair(e[0].get<std::string>(), e[1].get<std::string>());
      }
      if (!pair) {
        return data_loss("groot tokenizer: '" + path + "' model.merges[" + std::to_string(r) +
                         "] is " + e.dump() + ", expected \"left right\" or [left, right]; " +
                         std::string(kFix));
      }
      parts.merges.push_back(std::move(*pair));
    }
    if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
      for (const json& a : j["added_tokens"]) {
        const std::string content = a.at("content").get<std::string>();
        for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
          if (a.value(flag, false))
            return unsupported(path, "sets " + std::string(flag) + " on added token " + content);
        }
        if (a.value("normalized", false))
          return unsupported(path, "sets normalized on added token " + content);
        parts.added.emplace_back(content, a.at("id").get<std::int64_t>());
      }
    }
    EDGEVLA_RETURN_IF_ERROR(read_normalizer(j.value("normalizer", json()), path, parts.nfc));
    EDGEVLA_RETURN_IF_ERROR(
        read_pre_tokenizer(j.value("pre_tokenizer", json()), path, parts.split_regex));
  } catch (const json::exception& e) {
    return data_loss("groot tokenizer: '" + path + "' does not have the tokenizer.json layout (" +
                     e.what() + "); " + std::string(kFix));
  }
  return parts;
}

// Qwen2Tokenizer's slow files: NFC and Qwen2's regex are implied by the class.
Expected<Parts> read_vocab_merges(const fs::path& dir) {
  Parts parts;
  const std::string vocab_path = (dir / "vocab.json").string();
  const std::string merges_path = (dir / "merges.txt").string();
  const std::string added_path = (dir / "added_tokens.json").string();
  parts.source = vocab_path + " + " + merges_path;
  parts.split_regex = std::string(kQwen2SplitRegex);
  EDGEVLA_ASSIGN_OR_RETURN(json vocab, read_json_file(vocab_path));
  try {
    if (!vocab.is_object()) {
      return data_loss("groot tokenizer: '" + vocab_path + "' is not a {symbol: id} object; " +
                       std::string(kFix));
    }
    for (const auto& [symbol, id] : vocab.items())
      parts.vocab.emplace_back(symbol, id.get<std::int64_t>());
    std::error_code ec;
    if (fs::is_regular_file(added_path, ec)) {
      parts.source += " + " + added_path;
      EDGEVLA_ASSIGN_OR_RETURN(json added, read_json_file(added_path));
      if (!added.is_object()) {
        return data_loss("groot tokenizer: '" + added_path + "' is not a {content: id} object; " +
                         std::string(kFix));
      }
      for (const auto& [content, id] : added.items())
        parts.added.emplace_back(content, id.get<std::int64_t>());
    }
  } catch (const json::exception& e) {
    return data_loss("groot tokenizer: '" + vocab_path + "' or '" + added_path +
                     "' holds a value that is not an integer id (" + e.what() + "); " +
                     std::string(kFix));
  }
  EDGEVLA_ASSIGN_OR_RETURN(std::string merges, read_text_file(merges_path));
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < merges.size();) {
    std::size_t end = merges.find('\n', pos);
    if (end == std::string::npos) end = merges.size();
    std::string_view line(merges.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.starts_with("#version")) continue;
    auto pair = split_merge(line);
    if (!pair) {
      return data_loss("groot tokenizer: '" + merges_path + "' line " + std::to_string(line_no) +
                       " is '" + std::string(line) +
                       "', expected two symbols separated by one space; " + std::string(kFix));
    }
    parts.merges.push_back(std::move(*pair));
  }
  return parts;
}

}  // namespace

Expected<Parts> read_parts(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return read_tokenizer_json(path);
  if (!fs::is_directory(path, ec)) {
    return not_found("groot tokenizer: '" + path + "' does not exist; " + std::string(kFix));
  }
  const fs::path dir(path);
  if (fs::exists(dir / "tokenizer.json", ec))
    return read_tokenizer_json((dir / "tokenizer.json").string());
  if (!fs::exists(dir / "vocab.json", ec) && !fs::exists(dir / "merges.txt", ec)) {
    return not_found("groot tokenizer: '" + path +
                     "' holds neither tokenizer.json nor vocab.json + merges.txt; " +
                     std::string(kFix));
  }
  for (const char* name : {"vocab.json", "merges.txt"}) {
    if (!fs::exists(dir / name, ec)) {
      return not_found("groot tokenizer: '" + (dir / name).string() +
                       "' is missing (the folder has no tokenizer.json, so it needs vocab.json and "
                       "merges.txt); " +
                       std::string(kFix));
    }
  }
  return read_vocab_merges(dir);
}


}  // namespace edgevla::model::groot::tokenizer_files
