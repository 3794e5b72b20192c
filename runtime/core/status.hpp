// Status and Expected<T>: the error model of the runtime and of every hot path.
// A Status carries a code and a message that says what failed, where, and what to do.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace edgevla {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller passed something malformed (bad shape, bad dtype, bad value)
  kNotFound,           // a named thing does not exist (file, tensor, node, topic, segment)
  kOutOfRange,         // a value is outside its declared range or a buffer bound
  kFailedPrecondition, // the object is in the wrong state for the call (lifecycle, device)
  kAlreadyExists,      // a name is taken
  kResourceExhausted,  // a pool, queue or memory limit was hit
  kUnavailable,        // a peer, device or transport is not reachable right now
  kDataLoss,           // bytes are truncated or corrupted
  kTimeout,            // a bounded wait ran out
  kInternal,           // a bug in edgevla
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: <message>", or "ok".
  std::string to_string() const;

  // Prefixes the message with context, e.g. with("launch/demo.yaml:12").
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status invalid_argument(std::string message);
Status not_found(std::string message);
Status out_of_range(std::string message);
Status failed_precondition(std::string message);
Status already_exists(std::string message);
Status resource_exhausted(std::string message);
Status unavailable(std::string message);
Status data_loss(std::string message);
Status timeout_error(std::string message);
Status internal_error(std::string message);

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like std::expected
  Expected(Status status) : v_(std::move(status)) {
    if (std::get<Status>(v_).is_ok()) {
      v_ = Status(StatusCode::kInternal, "Expected constructed from an ok Status without a value");
    }
  }

  bool has_value() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  // The error; an ok Status when a value is held.
  Status status() const { return has_value() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace edgevla

#define EDGEVLA_CONCAT_INNER(a, b) a##b
#define EDGEVLA_CONCAT(a, b) EDGEVLA_CONCAT_INNER(a, b)

#define EDGEVLA_RETURN_IF_ERROR(expr)             \
  do {                                            \
    ::edgevla::Status edgevla_status_ = (expr);   \
    if (!edgevla_status_.is_ok()) return edgevla_status_; \
  } while (0)

#define EDGEVLA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.has_value()) return tmp.status();          \
  lhs = std::move(tmp).value()

// EDGEVLA_ASSIGN_OR_RETURN(auto x, make_x()); returns the Status on error.
#define EDGEVLA_ASSIGN_OR_RETURN(lhs, expr) \
  EDGEVLA_ASSIGN_OR_RETURN_IMPL(EDGEVLA_CONCAT(edgevla_expected_, __LINE__), lhs, expr)
