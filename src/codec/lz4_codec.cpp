// The lz4 (code 7) block codec: each payload is one frameless LZ4 block (no frame, no size prefix);
// the decoded size comes from the block grid, never from the payload. Layer: codec.
#include <lz4.h>

#include "codec/codec_impl.hpp"

namespace hzio::codec::detail {

Status encode_lz4(std::span<const std::byte> samples, std::vector<std::byte>& out) {
  if (samples.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
    return unsupported("lz4 cannot compress a block of " + std::to_string(samples.size()) + " bytes (limit " +
                       std::to_string(LZ4_MAX_INPUT_SIZE) + ")");
  }
  const int bound = LZ4_compressBound(static_cast<int>(samples.size()));
  out.resize(static_cast<size_t>(bound));
  const char dummy = 0;
  const char* src = samples.empty() ? &dummy : reinterpret_cast<const char*>(samples.data());
  const int n = LZ4_compress_default(src, reinterpret_cast<char*>(out.data()), static_cast<int>(samples.size()), bound);
  if (n <= 0) {
    out.clear();
    return internal_error("LZ4_compress_default failed on a block of " + std::to_string(samples.size()) + " bytes");
  }
  out.resize(static_cast<size_t>(n));
  return Status::ok();
}

Status decode_lz4(std::span<const std::byte> payload, std::span<std::byte> out) {
  const std::string expected = std::to_string(out.size()) + " bytes";
  constexpr auto kLimit = static_cast<size_t>(LZ4_MAX_INPUT_SIZE);
  if (payload.size() > kLimit || out.size() > kLimit) {
    return unsupported("lz4 payload of " + std::to_string(payload.size()) + " bytes for a block of " + expected +
                       " exceeds LZ4's size limit");
  }
  if (payload.empty()) return corrupt("lz4 payload is empty, expected a block of " + expected);
  char dummy = 0;
  char* dst = out.empty() ? &dummy : reinterpret_cast<char*>(out.data());
  // The _safe decoder checks every match and literal against both buffer ends.
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(payload.data()), dst,
                                    static_cast<int>(payload.size()), static_cast<int>(out.size()));
  if (n < 0) {
    return corrupt("lz4 payload does not decode to " + expected + " (malformed LZ4 block or larger output)");
  }
  if (static_cast<size_t>(n) != out.size()) {
    return corrupt("lz4 payload decodes to " + std::to_string(n) + " bytes, expected " + expected);
  }
  return Status::ok();
}

}  // namespace hzio::codec::detail
