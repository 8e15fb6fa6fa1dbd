// Codec specs (parse / to_string), the flags-nibble mapping, and the compress_block / decompress_block
// dispatch to the per-codec files declared in codec_impl.hpp. Layer: codec.
#include "codec/codec.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <exception>
#include <iterator>
#include <new>
#include <optional>

#include "codec/codec_impl.hpp"

namespace hzio::codec {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Whole-string number parses: from_chars alone would accept "16abc" as 16.
template <class T>
bool parse_number(std::string_view s, T& value) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::optional<ZfpMode> make_precision(std::string_view text) {
  long long bits = 0;
  // zfp codes at most 64 bit planes; 0 planes would store nothing.
  if (!parse_number(text, bits) || bits < 1 || bits > 64) return std::nullopt;
  return ZfpMode{ZfpMode::Kind::kPrecision, static_cast<double>(bits)};
}

std::optional<ZfpMode> make_accuracy(std::string_view text) {
  double tolerance = 0;
  if (!parse_number(text, tolerance) || !std::isfinite(tolerance) || tolerance <= 0) return std::nullopt;
  return ZfpMode{ZfpMode::Kind::kAccuracy, tolerance};
}

std::optional<ZfpMode> parse_zfp_mode(std::string_view text) {
  if (iequals(text, "reversible")) return ZfpMode{};
  const size_t eq = text.find('=');
  if (eq != std::string_view::npos) {
    const std::string_view key = text.substr(0, eq);
    const std::string_view value = text.substr(eq + 1);
    if (iequals(key, "precision")) return make_precision(value);
    if (iequals(key, "accuracy")) return make_accuracy(value);
    return std::nullopt;
  }
  if (text.find('.') != std::string_view::npos) return make_accuracy(text);
  return make_precision(text);
}

// "<enc>-<dec>": an accuracy such as 1e-3 contains '-', so try every split and require exactly one
// that parses on both sides.
Result<CodecSpec> parse_zfp_modes(std::string_view spec, std::string_view modes) {
  std::optional<CodecSpec> found;
  for (size_t dash = modes.find('-'); dash != std::string_view::npos; dash = modes.find('-', dash + 1)) {
    auto enc = parse_zfp_mode(modes.substr(0, dash));
    auto dec = parse_zfp_mode(modes.substr(dash + 1));
    if (!enc || !dec) continue;
    if (found) return format_error("ambiguous zfp codec spec '" + std::string(spec) + "'");
    found = CodecSpec{CodecKind::kZfp, -1, *enc, *dec};
  }
  if (!found) {
    return format_error("bad zfp codec spec '" + std::string(spec) +
                        "': expected zfp-<encode mode>-<decode mode>, each mode one of reversible, "
                        "precision=N (1..64), accuracy=X (X > 0), N or X.Y");
  }
  return *found;
}

std::string mode_to_string(const ZfpMode& mode) {
  switch (mode.kind) {
    case ZfpMode::Kind::kReversible:
      return "reversible";
    case ZfpMode::Kind::kPrecision:
      return "precision=" + std::to_string(static_cast<long long>(mode.parameter));
    case ZfpMode::Kind::kAccuracy: {
      char buf[64];
      // Shortest text that reads back to the same double, so parse(to_string()) is exact.
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), mode.parameter);
      return "accuracy=" + std::string(buf, ec == std::errc() ? end : buf);
    }
  }
  return "reversible";
}

const char* kind_name(CodecKind kind) {
  switch (kind) {
    case CodecKind::kRaw:
      return "raw";
    case CodecKind::kZip:
      return "zip";
    case CodecKind::kLz4:
      return "lz4";
    case CodecKind::kZfp:
      return "zfp";
  }
  return "unknown";
}

std::string dims_text(const std::array<int64_t, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

// The byte size block_dims of dtype must have, or an internal error: a mismatch is a caller bug,
// not a property of the file.
Status check_block_size(const char* what, DType dtype, const std::array<int64_t, 3>& dims, size_t size) {
  int64_t samples = 1;
  for (int64_t d : dims) {
    if (d < 1 || __builtin_mul_overflow(samples, d, &samples)) {
      return internal_error(std::string(what) + ": bad block dims " + dims_text(dims));
    }
  }
  const auto per_sample = static_cast<int64_t>(detail::sample_bytes(dtype));
  if (per_sample == 0) return internal_error(std::string(what) + ": invalid dtype " + detail::dtype_name(dtype));
  int64_t bytes = 0;
  if (__builtin_mul_overflow(samples, per_sample, &bytes) || static_cast<uint64_t>(bytes) != size) {
    return internal_error(std::string(what) + ": buffer has " + std::to_string(size) + " bytes but a " +
                          dims_text(dims) + " block of " + detail::dtype_name(dtype) + " needs " +
                          std::to_string(samples) + " samples of " + std::to_string(per_sample) + " bytes");
  }
  return Status::ok();
}

}  // namespace

namespace detail {

size_t scalar_bytes(DType dtype) {
  switch (dtype.scalar) {
    case Scalar::kInt8:
    case Scalar::kUint8:
      return 1;
    case Scalar::kInt16:
    case Scalar::kUint16:
      return 2;
    case Scalar::kInt32:
    case Scalar::kUint32:
    case Scalar::kFloat32:
      return 4;
    case Scalar::kInt64:
    case Scalar::kUint64:
    case Scalar::kFloat64:
      return 8;
  }
  return 0;
}

size_t sample_bytes(DType dtype) {
  return dtype.components < 1 ? 0 : scalar_bytes(dtype) * static_cast<size_t>(dtype.components);
}

std::string dtype_name(DType dtype) {
  static constexpr const char* kNames[] = {"int8",   "uint8", "int16",  "uint16",  "int32",
                                           "uint32", "int64", "uint64", "float32", "float64"};
  const auto i = static_cast<size_t>(dtype.scalar);
  std::string name = i < std::size(kNames) ? kNames[i] : "scalar#" + std::to_string(i);
  if (dtype.components != 1) name += "[" + std::to_string(dtype.components) + "]";
  return name;
}

}  // namespace detail

Result<CodecSpec> CodecSpec::parse(std::string_view text) {
  const std::string_view s = trim(text);
  CodecSpec spec;
  if (s.empty() || iequals(s, "raw") || iequals(s, "bin")) return spec;
  if (iequals(s, "lz4")) {
    spec.kind = CodecKind::kLz4;
    return spec;
  }
  if (iequals(s, "zip") || iequals(s, "zip-Z_DEFAULT_COMPRESSION") || iequals(s, "zip-Z_BEST_SPEED") ||
      iequals(s, "zip-Z_BEST_COMPRESSION")) {
    spec.kind = CodecKind::kZip;
    if (iequals(s, "zip-Z_BEST_SPEED")) spec.zip_level = 1;
    if (iequals(s, "zip-Z_BEST_COMPRESSION")) spec.zip_level = 9;
    return spec;
  }
  if (iequals(s, "zfp")) {
    // OpenVisus writes a bare "zfp" reversibly but reads it back at precision 64.
    spec.kind = CodecKind::kZfp;
    spec.zfp_decode = ZfpMode{ZfpMode::Kind::kPrecision, 64};
    return spec;
  }
  if (s.size() > 4 && iequals(s.substr(0, 4), "zfp-")) return parse_zfp_modes(text, s.substr(4));
  return format_error("unknown codec spec '" + std::string(text) +
                      "' (expected raw, zip, zip-Z_BEST_SPEED, zip-Z_BEST_COMPRESSION, "
                      "zip-Z_DEFAULT_COMPRESSION, lz4, zfp or zfp-<encode mode>-<decode mode>)");
}

std::string CodecSpec::to_string() const {
  switch (kind) {
    case CodecKind::kRaw:
      return "";
    case CodecKind::kLz4:
      return "lz4";
    case CodecKind::kZip:
      // Other levels only change how hard the writer works; readers need just "zip".
      if (zip_level == 1) return "zip-Z_BEST_SPEED";
      if (zip_level == 9) return "zip-Z_BEST_COMPRESSION";
      return "zip";
    case CodecKind::kZfp:
      return "zfp-" + mode_to_string(zfp_encode) + "-" + mode_to_string(zfp_decode);
  }
  return "";
}

Result<CodecKind> codec_kind_from_flags(uint32_t flags) {
  const uint32_t code = flags & kBlockFlagCodecMask;
  switch (code) {
    case 0:
      return CodecKind::kRaw;
    case 3:
      return CodecKind::kZip;
    case 7:
      return CodecKind::kLz4;
    case 8:
      return CodecKind::kZfp;
    case 4:
      return unsupported("block compression code 4 (jpg) cannot be decoded by hzio");
    case 6:
      return unsupported("block compression code 6 (png) cannot be decoded by hzio");
    default:
      return corrupt("unknown block compression code " + std::to_string(code));
  }
}

Status compress_block(const CodecSpec& spec, DType dtype, int ndim, const std::array<int64_t, 3>& block_dims,
                      std::span<const std::byte> samples, std::vector<std::byte>& out) {
  try {
    HZIO_RETURN_IF_ERROR(check_block_size("compress_block", dtype, block_dims, samples.size()));
    switch (spec.kind) {
      case CodecKind::kRaw:
        return detail::encode_raw(samples, out);
      case CodecKind::kZip:
        return detail::encode_zip(spec.zip_level, samples, out);
      case CodecKind::kLz4:
        return detail::encode_lz4(samples, out);
      case CodecKind::kZfp:
        return detail::encode_zfp(spec.zfp_encode, dtype, ndim, block_dims, samples, out);
    }
    return internal_error("compress_block: bad codec kind " + std::to_string(static_cast<int>(spec.kind)));
  } catch (const std::bad_alloc&) {
    return internal_error(std::string("out of memory encoding a ") + kind_name(spec.kind) + " block");
  } catch (const std::exception& e) {
    return internal_error(std::string("encoding a ") + kind_name(spec.kind) + " block failed: " + e.what());
  }
}

Status decompress_block(CodecKind kind, const CodecSpec& field_spec, DType dtype, int ndim,
                        const std::array<int64_t, 3>& block_dims, std::span<const std::byte> payload,
                        std::span<std::byte> out) {
  try {
    HZIO_RETURN_IF_ERROR(check_block_size("decompress_block", dtype, block_dims, out.size()));
    switch (kind) {
      case CodecKind::kRaw:
        return detail::decode_raw(payload, out);
      case CodecKind::kZip:
        return detail::decode_zip(payload, out);
      case CodecKind::kLz4:
        return detail::decode_lz4(payload, out);
      case CodecKind::kZfp:
        return detail::decode_zfp(field_spec.zfp_decode, dtype, ndim, block_dims, payload, out);
    }
    return corrupt("unknown block compression code " + std::to_string(static_cast<int>(kind)));
  } catch (const std::bad_alloc&) {
    return internal_error(std::string("out of memory decoding a ") + kind_name(kind) + " block");
  } catch (const std::exception& e) {
    return internal_error(std::string("decoding a ") + kind_name(kind) + " block failed: " + e.what());
  }
}

}  // namespace hzio::codec
