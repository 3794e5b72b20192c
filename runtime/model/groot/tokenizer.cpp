#include "runtime/model/groot/tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "runtime/model/groot/tokenizer_files.hpp"

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace tokenizer_files;

// Pieces longer than this are encoded but not cached (they are rare and would crowd it).
constexpr std::size_t kMaxCachedPiece = 256;
constexpr std::size_t kMaxCacheEntries = 1 << 14;

// --- UTF-8 ---------------------------------------------------------------------------------------

// Byte length of the well-formed sequence starting at s[i] (Unicode Table 3-7), or the length
// of its maximal ill-formed prefix as a negative number (-1 for a byte that starts nothing).
int utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  int len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
  if (b >= 0xc2 && b <= 0xdf) {
    len = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    len = 3;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
  } else {
    return -1;
  }
  int k = 1;
  for (; k < len && i + static_cast<std::size_t>(k) < s.size(); ++k) {
    const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    const bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xbf);
    if (!ok) break;
  }
  return k == len ? len : -k;
}

std::optional<std::size_t> first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const int n = utf8_sequence(s, i);
    if (n < 0) return i;
    i += static_cast<std::size_t>(n);
  }
  return std::nullopt;
}

Status invalid_utf8(std::string_view what, std::string_view s, std::size_t at) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X",
                static_cast<unsigned>(static_cast<unsigned char>(s[at])));
  return invalid_argument(std::string(what) + " is not valid UTF-8: byte " + hex + " at offset " +
                          std::to_string(at) + " of " + std::to_string(s.size()) +
                          " does not start a complete UTF-8 sequence; pass UTF-8 text");
}

// UTF-8 decoding with Python's errors="replace": each maximal ill-formed subpart becomes U+FFFD.
void append_replacing_invalid(std::string_view bytes, std::string& out) {
  for (std::size_t i = 0; i < bytes.size();) {
    const int n = utf8_sequence(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, static_cast<std::size_t>(n)));
      i += static_cast<std::size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<std::size_t>(-n);
    }
  }
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

// Code point of the (valid) UTF-8 sequence of length n at s[i].
char32_t code_point(std::string_view s, std::size_t i, int n) {
  const auto b = static_cast<unsigned char>(s[i]);
  char32_t c = n == 1 ? b : b & (0x7f >> n);
  for (int k = 1; k < n; ++k)
    c = (c << 6) | (static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0x3f);
  return c;
}

// --- GPT-2's byte <-> printable character table
// ---------------------------------------------------

struct ByteLevelTable {
  std::array<std::string, 256> symbol;  // byte -> UTF-8 of its character
  std::array<int, 324> byte_of{};       // character (< U+0144) -> byte, -1 if none
  ByteLevelTable() {
    byte_of.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    };
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const char32_t c =
          printable(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      append_utf8(c, symbol[static_cast<std::size_t>(b)]);
      byte_of[c] = b;
    }
  }
};

const ByteLevelTable& byte_level() {
  static const ByteLevelTable table;
  return table;
}

// --- PCRE2
// -----------------------------------------------------------------------------------------

struct CodeFree {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataFree {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
using CodePtr = std::unique_ptr<pcre2_code, CodeFree>;
using MatchDataPtr = std::unique_ptr<pcre2_match_data, MatchDataFree>;

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}

// The tokenizer files' regexes are written for Oniguruma, whose \s is Unicode White_Space;
// PCRE2's \s (with UCP) also matches U+180E, which left White_Space in Unicode 6.3. Rewrites \s
// and \S (inside classes too) as the property.
std::string with_white_space_property(std::string_view pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += "\\p{White_Space}";
      } else if (e == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += '\\';
        out += e;
      }
    } else {
      out += pattern[i];
    }
  }
  return out;
}

class Regex {
 public:
  static Expected<Regex> compile(std::string_view pattern, const std::string& where) {
    int err = 0;
    PCRE2_SIZE at = 0;
    const std::string translated = with_white_space_property(pattern);
    CodePtr code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                               PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr));
    if (!code) {
      return invalid_argument(where + ": the split regex does not compile with PCRE2 (" +
                              pcre2_message(err) + " at offset " + std::to_string(at) + " of '" +
                              translated + "'); " + std::string(kFix));
    }
    // JIT when the platform has it; matching falls back to the interpreter otherwise.
    (void)pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
    return Regex(std::move(code));
  }

  // Calls fn(begin, end) for each non-empty match, left to right. `s` must be valid UTF-8.
  template <class Fn>
  Status for_each_match(std::string_view s, Fn&& fn) const {
    MatchDataPtr md(pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    if (!md) return resource_exhausted("groot tokenizer: out of memory for PCRE2 match data");
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    std::size_t from = 0;
    while (from < s.size()) {
      // The text was validated once; checking it again at every offset would be quadratic.
      std::uint32_t options = PCRE2_NO_UTF_CHECK;
      int rc = pcre2_match(code_.get(), subject, s.size(), from, options, md.get(), nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        options |= PCRE2_NO_JIT;  // the interpreter keeps its backtracking on the heap
        rc = pcre2_match(code_.get(), subject, s.size(), from, options, md.get(), nullptr);
      }
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        return internal_error("groot tokenizer: the split regex failed at byte " +
                              std::to_string(from) + ": " + pcre2_message(rc));
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      const std::size_t b = ov[0], e = ov[1];
      if (e > b) {
        fn(b, e);
        from = e;
      } else {
        // An empty match takes nothing: search again one character further.
        const int n = utf8_sequence(s, b);
        from = b + static_cast<std::size_t>(n > 0 ? n : 1);
      }
    }
    return Status::ok();
  }

 private:
  explicit Regex(CodePtr code) : code_(std::move(code)) {}
  CodePtr code_;
};

std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

}  // namespace

// --- the tokenizer
// ---------------------------------------------------------------------------------

struct Tokenizer::Impl {
  struct Merge {
    std::int32_t rank;
    std::int32_t id;  // of the merged symbol
  };
  enum class Kind : std::uint8_t { kNone, kSymbol, kAdded };

  std::string source;
  std::unordered_map<std::string, std::int32_t> vocab;
  std::unordered_map<std::string, std::int32_t> added;
  std::array<std::vector<std::pair<std::string, std::int32_t>>, 256>
      added_by_first_byte;         // longest first
  std::vector<Kind> kind;          // by id
  std::vector<std::string> bytes;  // by id: a symbol's bytes, an added token's content
  std::array<std::int32_t, 256> byte_id{};
  std::unordered_map<std::uint64_t, Merge> merges;
  bool nfc = true;
  std::optional<Regex> split;

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache;

  static Expected<std::unique_ptr<Impl>> build(Parts parts);
  // Calls fn(segment, added id or -1) for the text split at added tokens.
  template <class Fn>
  void split_added(std::string_view text, Fn&& fn) const;
  Expected<std::string> normalize(std::string_view segment) const;
  void bpe(std::string_view piece, std::vector<std::int32_t>& out) const;
};

Expected<std::unique_ptr<Tokenizer::Impl>> Tokenizer::Impl::build(Parts parts) {
  auto impl = std::make_unique<Impl>();
  impl->source = parts.source;
  impl->nfc = parts.nfc;
  const std::string& src = parts.source;
  // Ids index dense tables; Qwen's go to 151679.
  constexpr std::int64_t kMaxId = (1 << 24) - 1;
  auto claim = [&](std::int64_t id, Kind k, std::string bytes, const std::string& name) -> Status {
    if (id < 0 || id > kMaxId) {
      return data_loss("groot tokenizer: " + src + ": '" + name + "' has id " + std::to_string(id) +
                       ", outside 0.." + std::to_string(kMaxId) + "; " + std::string(kFix));
    }
    const auto i = static_cast<std::size_t>(id);
    if (i >= impl->kind.size()) {
      impl->kind.resize(i + 1, Kind::kNone);
      impl->bytes.resize(i + 1);
    }
    if (impl->kind[i] != Kind::kNone) {
      // An added token may repeat a vocabulary symbol with its own id (GPT-2 style files).
      if (k == Kind::kAdded && impl->kind[i] == Kind::kSymbol && impl->vocab.count(name) &&
          impl->vocab.at(name) == id) {
        impl->kind[i] = Kind::kAdded;
        impl->bytes[i] = std::move(bytes);
        return Status::ok();
      }
      return data_loss("groot tokenizer: " + src + ": id " + std::to_string(id) + " is given to '" +
                       name + "' and to another token; " + std::string(kFix));
    }
    impl->kind[i] = k;
    impl->bytes[i] = std::move(bytes);
    return Status::ok();
  };

  const ByteLevelTable& table = byte_level();
  for (auto& [symbol, id] : parts.vocab) {
    // A symbol's bytes: each character of GPT-2's table is one byte; anything else (never in a
    // byte-level vocabulary's merged symbols) stands for its own UTF-8.
    std::string raw;
    for (std::size_t i = 0; i < symbol.size();) {
      const int n = utf8_sequence(symbol, i);
      if (n < 0)
        return data_loss("groot tokenizer: " + src + ": a vocabulary symbol is not valid UTF-8; " +
                         std::string(kFix));
      const char32_t c = code_point(symbol, i, n);
      if (c < table.byte_of.size() && table.byte_of[c] >= 0) {
        raw += static_cast<char>(table.byte_of[c]);
      } else {
        raw.append(symbol, i, static_cast<std::size_t>(n));
      }
      i += static_cast<std::size_t>(n);
    }
    EDGEVLA_RETURN_IF_ERROR(claim(id, Kind::kSymbol, std::move(raw), symbol));
    impl->vocab.emplace(symbol, static_cast<std::int32_t>(id));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = impl->vocab.find(table.symbol[static_cast<std::size_t>(b)]);
    if (it == impl->vocab.end()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(b));
      return data_loss("groot tokenizer: " + src +
                       ": the vocabulary lacks the byte-level symbol '" +
                       table.symbol[static_cast<std::size_t>(b)] + "' (byte " + hex +
                       "): not a complete byte-level BPE vocabulary; " + std::string(kFix));
    }
    impl->byte_id[static_cast<std::size_t>(b)] = it->second;
  }
  for (std::size_t r = 0; r < parts.merges.size(); ++r) {
    const auto& [left, right] = parts.merges[r];
    auto l = impl->vocab.find(left), rt = impl->vocab.find(right),
         m = impl->vocab.find(left + right);
    if (l == impl->vocab.end() || rt == impl->vocab.end() || m == impl->vocab.end()) {
      return data_loss("groot tokenizer: " + src + ": merge " + std::to_string(r) + " ('" + left +
                       " " + right + "') names a symbol the vocabulary lacks; " +
                       std::string(kFix));
    }
    // The first occurrence of a pair holds its rank, as in the Hugging Face loaders.
    impl->merges.try_emplace(pair_key(l->second, rt->second),
                             Merge{static_cast<std::int32_t>(r), m->second});
  }
  for (auto& [content, id] : parts.added) {
    if (content.empty())
      return data_loss("groot tokenizer: " + src + ": an added token is empty; " +
                       std::string(kFix));
    if (auto bad = first_invalid_utf8(content))
      return invalid_utf8("groot tokenizer: " + src + ": added token", content, *bad);
    EDGEVLA_RETURN_IF_ERROR(claim(id, Kind::kAdded, content, content));
    impl->added[content] = static_cast<std::int32_t>(id);
  }
  for (const auto& [content, id] : impl->added) {
    impl->added_by_first_byte[static_cast<unsigned char>(content[0])].emplace_back(content, id);
  }
  for (auto& list : impl->added_by_first_byte) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first.size() != b.first.size() ? a.first.size() > b.first.size() : a.first < b.first;
    });
  }
  EDGEVLA_ASSIGN_OR_RETURN(Regex regex,
                           Regex::compile(parts.split_regex, "groot tokenizer: " + src));
  impl->split.emplace(std::move(regex));
  return impl;
}

template <class Fn>
void Tokenizer::Impl::split_added(std::string_view text, Fn&& fn) const {
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto& candidates = added_by_first_byte[static_cast<unsigned char>(text[i])];
    const std::pair<std::string, std::int32_t>* hit = nullptr;
    for (const auto& c : candidates) {
      if (text.substr(i, c.first.size()) == c.first) {
        hit = &c;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (start < i) fn(text.substr(start, i - start), -1);
    fn(text.substr(i, hit->first.size()), hit->second);
    i += hit->first.size();
    start = i;
  }
  if (start < text.size()) fn(text.substr(start), -1);
}

Expected<std::string> Tokenizer::Impl::normalize(std::string_view segment) const {
  if (!nfc) return std::string(segment);
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(err);
  if (U_FAILURE(err))
    return internal_error(std::string("groot tokenizer: ICU has no NFC data: ") + u_errorName(err));
  const icu::StringPiece in(segment.data(), static_cast<std::int32_t>(segment.size()));
  if (n->isNormalizedUTF8(in, err) && U_SUCCESS(err)) return std::string(segment);
  err = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out, static_cast<std::int32_t>(segment.size()));
  n->normalizeUTF8(0, in, sink, nullptr, err);
  if (U_FAILURE(err))
    return internal_error(std::string("groot tokenizer: NFC normalisation failed: ") +
                          u_errorName(err));
  return out;
}

void Tokenizer::Impl::bpe(std::string_view piece, std::vector<std::int32_t>& out) const {
  const bool cacheable = piece.size() <= kMaxCachedPiece;
  if (cacheable) {
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(std::string(piece)); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<std::int32_t> word;
  word.reserve(piece.size());
  for (char c : piece) word.push_back(byte_id[static_cast<unsigned char>(c)]);
  while (word.size() > 1) {
    // The pair of lowest rank; all of its occurrences merge, left to right.
    const Merge* best = nullptr;
    std::int32_t best_left = 0, best_right = 0;
    for (std::size_t k = 0; k + 1 < word.size(); ++k) {
      auto it = merges.find(pair_key(word[k], word[k + 1]));
      if (it != merges.end() && (best == nullptr || it->second.rank < best->rank)) {
        best = &it->second;
        best_left = word[k];
        best_right = word[k + 1];
      }
    }
    if (best == nullptr) break;
    std::size_t w = 0;
    for (std::size_t k = 0; k < word.size(); ++k) {
      if (k + 1 < word.size() && word[k] == best_left && word[k + 1] == best_right) {
        word[w++] = best->id;
        ++k;
      } else {
        word[w++] = word[k];
      }
    }
    word.resize(w);
  }
  out.insert(out.end(), word.begin(), word.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex);
    if (cache.size() >= kMaxCacheEntries) cache.clear();
    cache.emplace(std::string(piece), std::move(word));
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;


Expected<Tokenizer> Tokenizer::load(const std::string& path) {
  EDGEVLA_ASSIGN_OR_RETURN(Parts parts, read_parts(path));
  EDGEVLA_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Impl::build(std::move(parts)));
  return Tokenizer(std::move(impl));
}

namespace {

// The walk encode and pre_tokenize share: added tokens split out first (on_added(segment, id)),
// every other segment normalised and cut by the split regex (on_piece(piece)).
template <class ImplT, class OnAdded, class OnPiece>
Status walk_text(const ImplT& impl, std::string_view text, const char* what, OnAdded on_added, OnPiece on_piece) {
  if (auto bad = first_invalid_utf8(text)) return invalid_utf8(what, text, *bad);
  Status status;
  impl.split_added(text, [&](std::string_view segment, std::int32_t added_id) {
    if (!status.is_ok()) return;
    if (added_id >= 0) {
      on_added(segment, added_id);
      return;
    }
    Expected<std::string> normalized = impl.normalize(segment);
    if (!normalized) {
      status = normalized.status();
      return;
    }
    const std::string& s = *normalized;
    status = impl.split->for_each_match(
        s, [&](std::size_t b, std::size_t e) { on_piece(std::string_view(s).substr(b, e - b)); });
  });
  return status;
}

}  // namespace

Expected<std::vector<std::int32_t>> Tokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  EDGEVLA_RETURN_IF_ERROR(walk_text(
      *impl_, text, "groot tokenizer: the text to encode",
      [&](std::string_view, std::int32_t id) { ids.push_back(id); },
      [&](std::string_view piece) { impl_->bpe(piece, ids); }));
  return ids;
}

Expected<std::vector<std::string>> Tokenizer::pre_tokenize(std::string_view text) const {
  std::vector<std::string> pieces;
  EDGEVLA_RETURN_IF_ERROR(walk_text(
      *impl_, text, "groot tokenizer: the text to split",
      [&](std::string_view segment, std::int32_t) { pieces.emplace_back(segment); },
      [&](std::string_view piece) { pieces.emplace_back(piece); }));
  return pieces;
}

Expected<std::string> Tokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string out, pending;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || static_cast<std::size_t>(id) >= impl_->kind.size() ||
        impl_->kind[static_cast<std::size_t>(id)] == Impl::Kind::kNone) {
      return out_of_range("groot tokenizer: token id " + std::to_string(id) + " (position " +
                          std::to_string(i) + ") is not in the vocabulary of " + impl_->source);
    }
    const auto k = static_cast<std::size_t>(id);
    if (impl_->kind[k] == Impl::Kind::kAdded) {
      append_replacing_invalid(pending, out);
      pending.clear();
      out += impl_->bytes[k];
    } else {
      pending += impl_->bytes[k];
    }
  }
  append_replacing_invalid(pending, out);
  return out;
}

Expected<std::int32_t> Tokenizer::token_id(std::string_view content) const {
  const std::string key(content);
  if (auto it = impl_->added.find(key); it != impl_->added.end()) return it->second;
  if (auto it = impl_->vocab.find(key); it != impl_->vocab.end()) return it->second;
  return not_found("groot tokenizer: '" + key +
                   "' is neither an added token nor a vocabulary symbol of " + impl_->source +
                   "; " + std::string(kFix));
}

std::int32_t Tokenizer::vocab_size() const { return static_cast<std::int32_t>(impl_->kind.size()); }

const std::string& Tokenizer::source() const { return impl_->source; }

// --- the prompt
// -------------------------------------------------------------------------------------

Expected<std::string> formalize_language(std::string_view instruction) {
  if (auto bad = first_invalid_utf8(instruction))
    return invalid_utf8("groot: the instruction", instruction, *bad);
  std::string lower;
  icu::UnicodeString::fromUTF8(
      icu::StringPiece(instruction.data(), static_cast<std::int32_t>(instruction.size())))
      .toLower(icu::Locale::getRoot())
      .toUTF8String(lower);
  // Python's re [^\w\s]: \w is letters, numbers and '_'; \s is str.isspace, which is Unicode
  // White_Space plus U+001C..U+001F.
  static const Expected<Regex> drop =
      Regex::compile(R"([^\p{L}\p{N}_\p{White_Space}\x{1C}-\x{1F}]+)", "groot: formalize_language");
  if (!drop) return drop.status();
  std::string out;
  std::size_t kept = 0;
  EDGEVLA_RETURN_IF_ERROR(drop->for_each_match(lower, [&](std::size_t b, std::size_t e) {
    out.append(lower, kept, b - kept);
    kept = e;
  }));
  out.append(lower, kept, std::string::npos);
  return out;
}

std::string render_prompt(std::string_view instruction, std::span<const int> tokens_per_view) {
  std::string s = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n";
  s += instruction;
  for (std::size_t k = 0; k < tokens_per_view.size(); ++k) {
    s += "<image " + std::to_string(k + 1) + "><img>";
    for (int i = 0; i < tokens_per_view[k]; ++i) s += "<IMG_CONTEXT>";
    s += "</img>";
  }
  s += "<|im_end|>\n";
  return s;
}

}  // namespace edgevla::model::groot
