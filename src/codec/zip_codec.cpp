// The zip (code 3) block codec: each payload is one zlib stream (RFC 1950: 2-byte header,
// deflate data, Adler-32 trailer), as OpenVisus writes with compress2 and reads with uncompress.
// Layer: codec; reached through compress_block / decompress_block in codec.cpp.
#include <zlib.h>

#include <limits>

#include "codec/codec_impl.hpp"

namespace hzio::codec::detail {
namespace {

const char* zlib_reason(int rc) {
  switch (rc) {
    case Z_DATA_ERROR:
      return "data error";
    case Z_BUF_ERROR:
      return "output buffer full";
    case Z_MEM_ERROR:
      return "out of memory";
    case Z_STREAM_ERROR:
      return "stream error";
    default:
      return "error";
  }
}

}  // namespace

Status encode_zip(int level, std::span<const std::byte> samples, std::vector<std::byte>& out) {
  if (level < Z_DEFAULT_COMPRESSION || level > Z_BEST_COMPRESSION) {
    return internal_error("zip level " + std::to_string(level) + " is outside -1..9");
  }
  uLongf size = compressBound(static_cast<uLong>(samples.size()));
  out.resize(size);
  // zlib rejects a null source even when its length is 0.
  const Bytef dummy = 0;
  const Bytef* src = samples.empty() ? &dummy : reinterpret_cast<const Bytef*>(samples.data());
  const int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &size, src, static_cast<uLong>(samples.size()), level);
  if (rc != Z_OK) {
    out.clear();
    return internal_error(std::string("zlib compress2 failed (zlib: ") + zlib_reason(rc) + ")");
  }
  out.resize(size);
  return Status::ok();
}

Status decode_zip(std::span<const std::byte> payload, std::span<std::byte> out) {
  const std::string expected = std::to_string(out.size()) + " bytes";
  if (payload.size() > std::numeric_limits<uLong>::max() || out.size() > std::numeric_limits<uLongf>::max()) {
    return unsupported("zip payload or block too large for zlib");
  }
  // uncompress never writes more than out_size bytes; a stream that inflates to more stops with
  // Z_BUF_ERROR, so a lying payload cannot overrun `out`.
  Bytef dummy_out = 0;
  const Bytef dummy_in = 0;
  Bytef* dst = out.empty() ? &dummy_out : reinterpret_cast<Bytef*>(out.data());
  const Bytef* src = payload.empty() ? &dummy_in : reinterpret_cast<const Bytef*>(payload.data());
  uLongf out_size = static_cast<uLongf>(out.size());
  const int rc = uncompress(dst, &out_size, src, static_cast<uLong>(payload.size()));
  if (rc == Z_BUF_ERROR) return corrupt("zip payload decodes to more than " + expected);
  if (rc == Z_MEM_ERROR) return internal_error("zlib ran out of memory decoding a zip payload");
  if (rc != Z_OK) {
    return corrupt("zip payload does not decode to " + expected + " (zlib: " + zlib_reason(rc) + ")");
  }
  if (out_size != out.size()) {
    return corrupt("zip payload decodes to " + std::to_string(out_size) + " bytes, expected " + expected);
  }
  // Bytes after the zlib stream's Adler-32 trailer are ignored, as OpenVisus's uncompress does;
  // the checksum has already vouched for the block.
  return Status::ok();
}

}  // namespace hzio::codec::detail
