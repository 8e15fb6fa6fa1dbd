// The raw (uncompressed, code 0) block codec: the payload is the block's bytes as they are.
// Layer: codec; reached through compress_block / decompress_block in codec.cpp.
#include <cstring>

#include "codec/codec_impl.hpp"

namespace hzio::codec::detail {

Status encode_raw(std::span<const std::byte> samples, std::vector<std::byte>& out) {
  out.assign(samples.begin(), samples.end());
  return Status::ok();
}

Status decode_raw(std::span<const std::byte> payload, std::span<std::byte> out) {
  if (payload.size() != out.size()) {
    return corrupt("raw payload has " + std::to_string(payload.size()) + " bytes, expected " +
                   std::to_string(out.size()) + " bytes");
  }
  if (!out.empty()) std::memcpy(out.data(), payload.data(), out.size());
  return Status::ok();
}

}  // namespace hzio::codec::detail
