// Per-block codecs (raw, zip, lz4, zfp) behind one interface; see docs/format.md "Codecs".
// Layer: codec (depends on util only). No file I/O here: bytes in, bytes out.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio::codec {

// The compression code stored in the low nibble of a block-header flags word.
enum class CodecKind : uint8_t { kRaw = 0, kZip = 3, kLz4 = 7, kZfp = 8 };

// One zfp mode: reversible (lossless), fixed precision (bit planes) or fixed accuracy (absolute error).
struct ZfpMode {
  enum class Kind : uint8_t { kReversible, kPrecision, kAccuracy } kind = Kind::kReversible;
  double parameter = 0;  // precision in bits, or accuracy tolerance
  bool operator==(const ZfpMode&) const = default;
};

// A parsed codec spec, the text of a field's default_compression(...) option.
struct CodecSpec {
  CodecKind kind = CodecKind::kRaw;
  int zip_level = -1;  // zlib level; -1 = zlib's default
  ZfpMode zfp_encode;  // mode used when writing
  ZfpMode zfp_decode;  // mode used when reading (the .idx names both; they must match to round-trip)

  // Local. Parses "", "raw", "bin", "zip", "zip-Z_BEST_SPEED", "zip-Z_BEST_COMPRESSION",
  // "zip-Z_DEFAULT_COMPRESSION", "lz4", "zfp-<enc>-<dec>" where each mode is "reversible",
  // "precision=N", "accuracy=X", a bare integer (precision) or a bare number with '.' (accuracy).
  // A bare "zfp" means encode reversible, decode precision 64 (what OpenVisus does).
  // Errors: kFormat naming the spec.
  static Result<CodecSpec> parse(std::string_view spec);
  // Canonical spec text for the .idx: "" for raw, "zip", "lz4", "zfp-reversible-reversible", ...
  std::string to_string() const;
};

// Local. Maps a flags low nibble to a kind. Errors: kUnsupported for jpg (4) and png (6), which
// OpenVisus can write but hzio does not decode; kCorrupt for unknown codes. Both name the code.
Result<CodecKind> codec_kind_from_flags(uint32_t flags);

// Local, thread-safe. Compresses one block. `samples` holds prod(block_dims) samples of `dtype`
// in the block's storage order; block_dims is the block grid (x first, unused axes 1) and
// `ndim` the dataset dimension (zfp needs it). Replaces `out`. Errors: kUnsupported (zfp on a dtype
// or dimension zfp cannot take), kInternal (compressor failure, or `samples` not prod(block_dims) samples).
Status compress_block(const CodecSpec& spec, DType dtype, int ndim, const std::array<int64_t, 3>& block_dims,
                      std::span<const std::byte> samples, std::vector<std::byte>& out);

// Local, thread-safe. Decompresses one block payload stored with `kind` (from the block flags) into
// `out`, whose size is exactly the block's decoded size. `field_spec` supplies zfp's decode mode.
// Never reads or writes outside the spans, whatever the payload bytes. Errors: kCorrupt when the
// payload does not decode to exactly out.size() bytes; kUnsupported as for compress_block.
Status decompress_block(CodecKind kind, const CodecSpec& field_spec, DType dtype, int ndim,
                        const std::array<int64_t, 3>& block_dims, std::span<const std::byte> payload,
                        std::span<std::byte> out);

}  // namespace hzio::codec
