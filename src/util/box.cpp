// Box helpers declared in include/hzio/types.hpp.
#include <algorithm>

#include "hzio/types.hpp"

namespace hzio {

bool Box::contains(const Box& other) const {
  if (other.empty()) return true;
  for (int a = 0; a < kMaxDims; ++a) {
    if (other.lo[a] < lo[a] || other.hi[a] > hi[a]) return false;
  }
  return true;
}

Box Box::intersect(const Box& other) const {
  Box out;
  for (int a = 0; a < kMaxDims; ++a) {
    out.lo[a] = std::max(lo[a], other.lo[a]);
    out.hi[a] = std::max(out.lo[a], std::min(hi[a], other.hi[a]));
  }
  return out;
}

std::string Box::to_string() const {
  std::string s = "[";
  for (int a = 0; a < kMaxDims; ++a) {
    if (a) s += ", ";
    s += std::to_string(lo[a]) + ":" + std::to_string(hi[a]);
  }
  return s + ") (x first)";
}

}  // namespace hzio
