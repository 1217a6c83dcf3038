// Status and StatusOr<T>: how every fallible call across a module boundary reports failure.
//
// A Status carries a code from a fixed set (below), a message a user can act on, and optionally
// a typed detail naming the failure in its module's vocabulary (ecs::Error::kClusterNotFound,
// sched::Error::kLeaseLost). Callers recognise a failure by its detail, never by its message; the
// AWS names a detail is answered with live in each service's table (ecs/api/errors.cc), not here.
//
//   StatusOr<Cluster> c = clusters.Get(...);
//   if (!c.ok()) return c.status();
//   ASSIGN_OR_RETURN(auto cluster, clusters.Get(...));
//   return NotFound("Cluster not found.", ecs::Error::kClusterNotFound);
//   if (IsError(s, sched::Error::kLeaseLost)) ...
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace paddock {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // The request is malformed or a value is out of range (caller's fault).
  kNotFound,            // A named resource does not exist in the caller's scope.
  kAlreadyExists,       // A resource that must be new exists.
  kFailedPrecondition,  // The resource is in a state that does not allow the operation.
  kPermissionDenied,    // Authenticated, but not allowed.
  kUnauthenticated,     // The request's credentials are missing or wrong.
  kResourceExhausted,   // A rate limit or quota was hit.
  kAborted,             // A concurrency conflict; retrying may succeed.
  kUnavailable,         // The service is shutting down or a dependency is unreachable.
  kDataLoss,            // Stored data is corrupt.
  kInternal,            // A bug or an unexpected failure of a dependency.
};

std::string_view StatusCodeName(StatusCode code);

// One module's vocabulary of error details: a static object per error enum, compared by address.
struct ErrorDomain {
  std::string_view name;                     // "ecs", for logs
  std::string_view (*code_name)(int code);  // "ClusterNotFound", for logs; never null
};

// A value of some module's error enum, or empty. A module declares its vocabulary as
//
//   enum class Error { kClusterNotFound = 1, ... };        // 0 is never used
//   const ErrorDomain& ErrorDomainOf(Error);               // found by argument-dependent lookup
//
// after which an `Error` converts to an ErrorDetail. Cheap to copy (a pointer and an int).
class ErrorDetail {
 public:
  constexpr ErrorDetail() = default;
  template <typename E>
    requires std::is_enum_v<E>
  ErrorDetail(E e) : domain_(&ErrorDomainOf(e)), code_(static_cast<int>(e)) {}  // NOLINT: implicit by design

  bool empty() const { return domain_ == nullptr; }
  const ErrorDomain* domain() const { return domain_; }
  int code() const { return code_; }

  template <typename E>
    requires std::is_enum_v<E>
  bool Is(E e) const {
    return domain_ == &ErrorDomainOf(e) && code_ == static_cast<int>(e);
  }
  // The detail as a value of E, or nullopt when it is empty or of another domain; what a
  // service's table switches on.
  template <typename E>
    requires std::is_enum_v<E>
  std::optional<E> As() const {
    if (domain_ != &ErrorDomainOf(E{})) return std::nullopt;
    return static_cast<E>(code_);
  }

  // "ecs.ClusterNotFound"; empty when empty.
  std::string ToString() const;

  friend bool operator==(const ErrorDetail&, const ErrorDetail&) = default;

 private:
  const ErrorDomain* domain_ = nullptr;
  int code_ = 0;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, ErrorDetail detail = {})
      : code_(code), message_(std::move(message)), detail_(detail) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // What failed, in the failing module's vocabulary; empty when the code says enough.
  const ErrorDetail& detail() const { return detail_; }

  std::string ToString() const;

  // Marks an intentionally ignored status.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  ErrorDetail detail_;
};

// Whether `status` failed with detail `e`.
template <typename E>
  requires std::is_enum_v<E>
bool IsError(const Status& status, E e) {
  return status.detail().Is(e);
}

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m, ErrorDetail d = {}) { return {StatusCode::kInvalidArgument, std::move(m), d}; }
inline Status NotFound(std::string m, ErrorDetail d = {}) { return {StatusCode::kNotFound, std::move(m), d}; }
inline Status AlreadyExists(std::string m, ErrorDetail d = {}) { return {StatusCode::kAlreadyExists, std::move(m), d}; }
inline Status FailedPrecondition(std::string m, ErrorDetail d = {}) { return {StatusCode::kFailedPrecondition, std::move(m), d}; }
inline Status PermissionDenied(std::string m, ErrorDetail d = {}) { return {StatusCode::kPermissionDenied, std::move(m), d}; }
inline Status Unauthenticated(std::string m, ErrorDetail d = {}) { return {StatusCode::kUnauthenticated, std::move(m), d}; }
inline Status ResourceExhausted(std::string m, ErrorDetail d = {}) { return {StatusCode::kResourceExhausted, std::move(m), d}; }
inline Status Aborted(std::string m, ErrorDetail d = {}) { return {StatusCode::kAborted, std::move(m), d}; }
inline Status Unavailable(std::string m, ErrorDetail d = {}) { return {StatusCode::kUnavailable, std::move(m), d}; }
inline Status DataLoss(std::string m, ErrorDetail d = {}) { return {StatusCode::kDataLoss, std::move(m), d}; }
inline Status Internal(std::string m, ErrorDetail d = {}) { return {StatusCode::kInternal, std::move(m), d}; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status s) : v_(std::move(s)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  StatusOr(T value) : v_(std::move(value)) {}                                  // NOLINT
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, T>>>
  StatusOr(U&& value) : v_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace paddock

#define PADDOCK_CONCAT_INNER(a, b) a##b
#define PADDOCK_CONCAT(a, b) PADDOCK_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR_IMPL(st, expr) \
  do {                                 \
    ::paddock::Status st = (expr);     \
    if (!st.ok()) return st;           \
  } while (0)
#define RETURN_IF_ERROR(expr) RETURN_IF_ERROR_IMPL(PADDOCK_CONCAT(_status_, __COUNTER__), expr)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(PADDOCK_CONCAT(_status_or_, __COUNTER__), lhs, expr)
