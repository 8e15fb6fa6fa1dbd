// DType parsing and printing (docs/format.md "Field dtypes"). Declared in include/hzio/types.hpp.
#include <cctype>
#include <charconv>

#include "hzio/types.hpp"

namespace hzio {
namespace {

struct ScalarName {
  const char* name;
  Scalar scalar;
  size_t bytes;
};

constexpr ScalarName kScalars[] = {
    {"int8", Scalar::kInt8, 1},       {"uint8", Scalar::kUint8, 1},   {"int16", Scalar::kInt16, 2},
    {"uint16", Scalar::kUint16, 2},   {"int32", Scalar::kInt32, 4},   {"uint32", Scalar::kUint32, 4},
    {"int64", Scalar::kInt64, 8},     {"uint64", Scalar::kUint64, 8}, {"float32", Scalar::kFloat32, 4},
    {"float64", Scalar::kFloat64, 8},
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool parse_count(std::string_view s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 1 && out <= 64;
}

}  // namespace

size_t DType::scalar_bytes() const {
  for (const auto& s : kScalars) {
    if (s.scalar == scalar) return s.bytes;
  }
  return 0;
}

std::string DType::to_string() const {
  std::string name;
  for (const auto& s : kScalars) {
    if (s.scalar == scalar) name = s.name;
  }
  if (components != 1) name += "[" + std::to_string(components) + "]";
  return name;
}

Result<DType> DType::parse(std::string_view text) {
  std::string t = lower(text);
  int components = 1;
  std::string base = t;
  if (auto star = t.find('*'); star != std::string::npos) {
    if (!parse_count(std::string_view(t).substr(0, star), components)) {
      return format_error("bad component count in dtype '" + std::string(text) + "'");
    }
    base = t.substr(star + 1);
  } else if (auto br = t.find('['); br != std::string::npos) {
    if (t.back() != ']' || !parse_count(std::string_view(t).substr(br + 1, t.size() - br - 2), components)) {
      return format_error("bad component count in dtype '" + std::string(text) + "'");
    }
    base = t.substr(0, br);
  }
  for (const auto& s : kScalars) {
    if (base == s.name) return DType{s.scalar, components};
  }
  return format_error("unknown dtype '" + std::string(text) +
                      "' (expected int8..uint64, float32 or float64, optionally [N] or N*)");
}

}  // namespace hzio
