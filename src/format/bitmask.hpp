// The IDX bitmask ("V012012..."): which axis each resolution level splits (docs/format.md "Bitmask").
// Layer: format. Pure values, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio::format {

// The longest bitmask hzio accepts: 62 levels keeps every hz address and block id in 64 bits.
inline constexpr int kMaxLevels = 62;

class Bitmask {
 public:
  Bitmask() = default;

  // Local. Parses "V" + one digit per level. pdim is the largest digit + 1. Errors: kFormat for an
  // empty or too long pattern, a leading letter other than V, a digit >= kMaxDims, or "F" masks
  // (full-resolution blocks, which hzio does not support: kUnsupported).
  static Result<Bitmask> parse(std::string_view text);

  // Local. The bitmask OpenVisus chooses for these dims (x first, 1..3 of them): pad each axis to a
  // power of two, then in rounds append each axis 0, 1, ... that is still above 1 and halve it.
  // Axes of extent 1 get no digit, except that when the last axis would get none, one digit for it
  // is appended so that pdim equals ndim (OpenVisus's own guess is unusable there).
  static Bitmask default_for(const Point& dims, int ndim);

  const std::string& text() const { return text_; }
  int max_level() const { return max_level_; }                 // maxh = number of digits
  int pdim() const { return pdim_; }                           // largest digit + 1
  int axis_at(int position) const { return axis_[position]; }  // digit at 1..maxh
  // The power-of-two extent of each axis: 2^(number of digits naming it); 1 for absent axes.
  const Point& pow2_dims() const { return pow2_; }
  // Local. OK if the power-of-two box covers dims (x first); else kFormat naming both.
  Status check_covers(const Point& dims) const;

 private:
  std::string text_;
  int max_level_ = 0;
  int pdim_ = 0;
  std::array<int8_t, kMaxLevels + 1> axis_{};
  Point pow2_{1, 1, 1};
};

}  // namespace hzio::format
