// Status and Result<T>: how every fallible hzio call reports failure.
// Public header; used by every layer from util/ up to the bindings.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace hzio {

// The error classes a caller can act on; the same set is exposed in C (HZIO_E*) and Python.
enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // the caller passed a bad value (wrong shape, dtype, box, option)
  kNotFound,         // a dataset, field, timestep or file does not exist
  kFormat,           // a .idx text or option that hzio does not accept
  kCorrupt,          // bytes on disk contradict the format (bad header, undecodable block)
  kIo,               // the operating system refused a read, write, rename or sync
  kUnsupported,      // valid IDX, but a feature hzio does not implement
  kInternal,         // a bug in hzio
};

// Local. The name of an error code, e.g. "corrupt".
const char* error_code_name(ErrorCode code);

// A success or an error code with a message that names the file and the reason. Cheap to move. Its
// members are Local.
class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt: file a/0000.bin: block 3 offset past end of file"
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Local. An error Status of each code, with `message`.
Status invalid_argument(std::string message);
Status not_found(std::string message);
Status format_error(std::string message);
Status corrupt(std::string message);
Status io_error(std::string message);
Status unsupported(std::string message);
Status internal_error(std::string message);

// A value or an error Status. value() on an error is a bug (asserted in debug builds). Its members are
// Local.
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : status_(std::move(status)) { assert(!status_.is_ok()); }

  bool is_ok() const { return status_.is_ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(is_ok());
    return *value_;
  }
  const T& value() const& {
    assert(is_ok());
    return *value_;
  }
  T&& value() && {
    assert(is_ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace hzio

// Return early from the enclosing function when a Status or Result is an error.
#define HZIO_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::hzio::Status hzio_status_ = (expr);           \
    if (!hzio_status_.is_ok()) return hzio_status_; \
  } while (0)

#define HZIO_CONCAT_INNER(a, b) a##b
#define HZIO_CONCAT(a, b) HZIO_CONCAT_INNER(a, b)
#define HZIO_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.is_ok()) return tmp.status();           \
  lhs = std::move(tmp).value()
// HZIO_ASSIGN_OR_RETURN(auto x, compute()); declares x or returns the error.
#define HZIO_ASSIGN_OR_RETURN(lhs, expr) HZIO_ASSIGN_OR_RETURN_IMPL(HZIO_CONCAT(hzio_result_, __LINE__), lhs, expr)
