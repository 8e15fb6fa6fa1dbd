// Status helpers declared in include/hzio/status.hpp.
#include "hzio/status.hpp"

namespace hzio {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kFormat:
      return "format error";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message_;
}

Status invalid_argument(std::string m) { return Status(ErrorCode::kInvalidArgument, std::move(m)); }
Status not_found(std::string m) { return Status(ErrorCode::kNotFound, std::move(m)); }
Status format_error(std::string m) { return Status(ErrorCode::kFormat, std::move(m)); }
Status corrupt(std::string m) { return Status(ErrorCode::kCorrupt, std::move(m)); }
Status io_error(std::string m) { return Status(ErrorCode::kIo, std::move(m)); }
Status unsupported(std::string m) { return Status(ErrorCode::kUnsupported, std::move(m)); }
Status internal_error(std::string m) { return Status(ErrorCode::kInternal, std::move(m)); }

}  // namespace hzio
