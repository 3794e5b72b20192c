#include "runtime/node/params.hpp"

#include <charconv>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string_view>

namespace edgevla {

std::string_view param_type_name(ParamType t) {
  switch (t) {
    case ParamType::kBool: return "bool";
    case ParamType::kInt: return "int";
    case ParamType::kDouble: return "double";
    case ParamType::kString: return "string";
    case ParamType::kIntList: return "int list";
    case ParamType::kDoubleList: return "double list";
    case ParamType::kStringList: return "string list";
  }
  return "?";
}

namespace {

// yaml-cpp marks quoted scalars with the "!" tag; plain scalars have "?".
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

Expected<bool> to_bool(const YAML::Node& n) {
  const std::string s = n.Scalar();
  if (!is_quoted(n)) {
    if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off") return false;
  }
  return invalid_argument("expects a bool (true/false), got '" + s + "'");
}

Expected<std::int64_t> to_int(const YAML::Node& n) {
  const std::string s = n.Scalar();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (is_quoted(n) || ec != std::errc() || p != s.data() + s.size()) {
    return invalid_argument("expects an integer, got '" + s + "'" +
                            (is_quoted(n) ? " (a quoted string)" : ""));
  }
  return v;
}

Expected<double> to_double(const YAML::Node& n) {
  const std::string s = n.Scalar();
  if (!is_quoted(n)) {
    if (s == ".inf" || s == "+.inf") return INFINITY;
    if (s == "-.inf") return -INFINITY;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && !std::isnan(v)) return v;
  }
  return invalid_argument("expects a number, got '" + s + "'" +
                          (is_quoted(n) ? " (a quoted string)" : ""));
}

// The byte offset of the first byte that does not start a well-formed UTF-8 sequence of a
// character YAML can hold, or -1.
std::ptrdiff_t first_invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
      return static_cast<std::ptrdiff_t>(i);
    }
    if (s.size() - i < len) return static_cast<std::ptrdiff_t>(i);
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return static_cast<std::ptrdiff_t>(i);
    }
    // Unicode's noncharacters (U+FDD0..U+FDEF and the last two code points of every plane,
    // U+FFFE, U+1FFFF, ...) are outside what a YAML emitter writes back: it writes U+FFFD instead.
    std::uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
    for (std::size_t k = 1; k < len; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
    if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE) return static_cast<std::ptrdiff_t>(i);
    i += len;
  }
  return -1;
}

// Strings are UTF-8 text: a YAML emitter (param dump, `edgevla param get`) cannot write other
// bytes back as they were, so a dumped value would differ from the one set.
Expected<std::string> to_text(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (const auto at = first_invalid_utf8(s); at >= 0) {
    return invalid_argument("expects UTF-8 text, got a byte that is not UTF-8 (or starts a Unicode noncharacter "
                            "such as U+FFFE, which YAML cannot hold) at offset " + std::to_string(at));
  }
  return s;
}

template <class T, class F>
Expected<ParamValue> to_list(const YAML::Node& n, F convert, std::string_view what) {
  // A single string is a list of one (`backend: cpu` as well as `backend: [cuda, cpu]`).
  if constexpr (std::is_same_v<T, std::string>) {
    if (n.IsScalar()) {
      auto v = to_text(n);
      if (!v) return v.status();
      return ParamValue(std::vector<std::string>{*v});
    }
  }
  if (!n.IsSequence()) {
    return invalid_argument("expects a list of " + std::string(what) + ", e.g. [1, 2, 3]");
  }
  std::vector<T> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      return invalid_argument("element " + std::to_string(i) + " is not a " + std::string(what));
    }
    auto v = convert(n[i]);
    if (!v) return invalid_argument("element " + std::to_string(i) + " " + v.status().message());
    out.push_back(*v);
  }
  return ParamValue(std::move(out));
}

}  // namespace

Expected<ParamValue> param_from_yaml(const YAML::Node& n, ParamType type) {
  if (!n || n.IsNull()) return invalid_argument("has no value");
  const bool list = type == ParamType::kIntList || type == ParamType::kDoubleList ||
                    type == ParamType::kStringList;
  if (!list && !n.IsScalar()) {
    return invalid_argument("expects a single " + std::string(param_type_name(type)) +
                            ", got a " + (n.IsSequence() ? "list" : "map"));
  }
  switch (type) {
    case ParamType::kBool: {
      auto v = to_bool(n);
      if (!v) return v.status();
      return ParamValue(*v);
    }
    case ParamType::kInt: {
      auto v = to_int(n);
      if (!v) return v.status();
      return ParamValue(*v);
    }
    case ParamType::kDouble: {
      auto v = to_double(n);
      if (!v) return v.status();
      return ParamValue(*v);
    }
    case ParamType::kString: {
      auto v = to_text(n);
      if (!v) return v.status();
      return ParamValue(*v);
    }
    case ParamType::kIntList: return to_list<std::int64_t>(n, to_int, "integers");
    case ParamType::kDoubleList: return to_list<double>(n, to_double, "numbers");
    case ParamType::kStringList:
      return to_list<std::string>(n, to_text, "strings");
  }
  return internal_error("unknown param type");
}

Status check_param_value(const ParamValue& value, const ParamInfo& info, bool int32) {
  if (const auto* i = std::get_if<std::int64_t>(&value); i && int32 && (*i < INT32_MIN || *i > INT32_MAX)) {
    // Range first: its message says what the node accepts.
    if ((info.min && *i < *info.min) || (info.max && *i > *info.max)) {
      return check_param_value(ParamValue(static_cast<double>(*i)), info, false);
    }
    return out_of_range(std::to_string(*i) + " does not fit a 32-bit int");
  }
  auto in_range = [&](double v) -> Status {
    if ((info.min && v < *info.min) || (info.max && v > *info.max)) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "%g is out of range [%g, %g]", v,
                    info.min ? *info.min : -INFINITY, info.max ? *info.max : INFINITY);
      return out_of_range(buf);
    }
    return Status::ok();
  };
  if (const auto* i = std::get_if<std::int64_t>(&value)) return in_range(static_cast<double>(*i));
  if (const auto* d = std::get_if<double>(&value)) return in_range(*d);
  if (const auto* l = std::get_if<std::vector<std::int64_t>>(&value)) {
    for (auto v : *l) EDGEVLA_RETURN_IF_ERROR(in_range(static_cast<double>(v)));
  }
  if (const auto* l = std::get_if<std::vector<double>>(&value)) {
    for (auto v : *l) EDGEVLA_RETURN_IF_ERROR(in_range(v));
  }
  if (const auto* s = std::get_if<std::string>(&value); s && !info.choices.empty()) {
    for (const auto& c : info.choices) {
      if (c == *s) return Status::ok();
    }
    std::string all;
    for (const auto& c : info.choices) all += (all.empty() ? "" : ", ") + c;
    return out_of_range("'" + *s + "' is not one of: " + all);
  }
  return Status::ok();
}

std::string param_value_to_string(const ParamValue& value) {
  YAML::Emitter out;
  out << YAML::Flow;
  emit_param_value(out, value);
  return out.c_str();
}

void emit_param_value(YAML::Emitter& out, const ParamValue& value) {
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          out << YAML::TrueFalseBool << v;
        } else if constexpr (std::is_same_v<T, std::string>) {
          out << YAML::DoubleQuoted << v;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          out << YAML::Flow << YAML::BeginSeq;
          for (const auto& s : v) out << YAML::DoubleQuoted << s;
          out << YAML::EndSeq;
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                             std::is_same_v<T, std::vector<double>>) {
          out << YAML::Flow << v;
        } else {
          out << v;
        }
      },
      value);
}

Expected<ParamSetRequest> parse_param_set(std::string_view argument) {
  const auto a = argument.find('\n');
  const auto b = a == std::string_view::npos ? a : argument.find('\n', a + 1);
  if (b == std::string_view::npos) return invalid_argument("set expects node, key and value");
  return ParamSetRequest{std::string(argument.substr(0, a)), std::string(argument.substr(a + 1, b - a - 1)),
                         std::string(argument.substr(b + 1))};
}

Expected<ParamValue> param_value_from_text(std::string_view text, const ParamDescriptor& d,
                                           const std::string& where) {
  if (d.info.read_only) {
    return failed_precondition(where + " is read-only (it is used when the node is configured); "
                               "change it in the launch or params file and restart");
  }
  // A NUL among the first bytes would make the YAML reader take the text for UTF-16 or UTF-32.
  if (const auto at = first_invalid_utf8(text); at >= 0 || text.find('\0') != std::string_view::npos) {
    return invalid_argument(where + ": the value is not UTF-8 text YAML can hold (byte " +
                            std::to_string(at >= 0 ? static_cast<std::size_t>(at) : text.find('\0')) + ")");
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return invalid_argument(where + ": '" + std::string(text) + "' is not valid YAML: " + e.msg);
  }
  auto v = param_from_yaml(parsed, d.type);
  if (!v) return invalid_argument(where + " " + v.status().message());
  if (Status s = check_param_value(*v, d.info, d.int32); !s.is_ok()) {
    return out_of_range(where + " = " + s.message());
  }
  return v;
}

Expected<YAML::Node> load_yaml_file(const std::string& path, const std::string& referenced_from) {
  namespace fs = std::filesystem;
  const std::string who = (referenced_from.empty() ? "" : referenced_from + ": ") + "file '" + path + "'";
  std::error_code ec;  // e.g. a name longer than the file system allows: an error, not a throw
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) return not_found(who + " cannot be read: " + ec.message());
  if (!fs::exists(st)) return not_found(who + " does not exist");
  if (fs::is_directory(st)) return invalid_argument(who + " is a folder; name a YAML file in it");
  if (!fs::is_regular_file(st)) return invalid_argument(who + " is not a regular file; name a YAML file");
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return invalid_argument(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  } catch (const std::exception& e) {  // a read error below the YAML reader (I/O, memory)
    return invalid_argument(who + " cannot be read: " + e.what());
  }
}

}  // namespace edgevla
