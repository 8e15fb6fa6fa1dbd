// Bitmask parsing, the OpenVisus default guess and coverage checks (docs/format.md "Bitmask").
#include "format/bitmask.hpp"

#include <algorithm>

namespace hzio::format {

Result<Bitmask> Bitmask::parse(std::string_view text) {
  if (text.empty()) return format_error("empty bitmask");
  if (text[0] == 'F' || text[0] == 'f') {
    return unsupported("bitmask '" + std::string(text) + "': F (full-resolution block) masks are not supported");
  }
  if (text[0] != 'V' && text[0] != 'v') {
    return format_error("bitmask '" + std::string(text) + "' must start with V");
  }
  if (text.size() < 2) return format_error("bitmask 'V' has no levels (the digits are required in a .idx)");
  if (static_cast<int>(text.size()) - 1 > kMaxLevels) {
    return format_error("bitmask '" + std::string(text) + "' has more than 62 levels");
  }
  Bitmask b;
  b.text_ = "V";
  b.max_level_ = static_cast<int>(text.size()) - 1;
  for (int k = 1; k <= b.max_level_; ++k) {
    char c = text[k];
    if (c < '0' || c >= '0' + kMaxDims) {
      return format_error("bitmask '" + std::string(text) + "': '" + std::string(1, c) + "' is not an axis digit 0.." +
                          std::to_string(kMaxDims - 1));
    }
    int axis = c - '0';
    b.axis_[k] = static_cast<int8_t>(axis);
    b.pdim_ = std::max(b.pdim_, axis + 1);
    b.pow2_[axis] *= 2;
    b.text_ += c;
  }
  return b;
}

Bitmask Bitmask::default_for(const Point& dims, int ndim) {
  Point p{1, 1, 1};
  for (int a = 0; a < ndim; ++a) {
    while (p[a] < dims[a]) p[a] *= 2;
  }
  std::string text = "V";
  bool any = true;
  while (any) {
    any = false;
    for (int a = 0; a < ndim; ++a) {
      if (p[a] > 1) {
        text += static_cast<char>('0' + a);
        p[a] /= 2;
        any = true;
      }
    }
  }
  // OpenVisus gives axes of extent 1 no digit, so a trailing singleton axis would shrink pdim and
  // the dataset would reopen with fewer dimensions; one finest-level digit for the last axis keeps it.
  int pdim = 0;
  for (size_t k = 1; k < text.size(); ++k) pdim = std::max(pdim, text[k] - '0' + 1);
  if (pdim < ndim) text += static_cast<char>('0' + ndim - 1);
  return parse(text).value();
}

Status Bitmask::check_covers(const Point& dims) const {
  for (int a = 0; a < kMaxDims; ++a) {
    if (dims[a] > pow2_[a]) {
      return format_error("bitmask " + text_ + " covers " + std::to_string(pow2_[0]) + "x" + std::to_string(pow2_[1]) +
                          "x" + std::to_string(pow2_[2]) + " samples but the box needs " + std::to_string(dims[0]) +
                          "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + " (x first)");
    }
  }
  return Status::ok();
}

}  // namespace hzio::format
