// Private to the codec layer: the per-codec encode/decode functions that codec.cpp dispatches to.
// Each lives in its own <name>_codec.cpp; all are Local and thread-safe (no state shared between
// threads; zfp keeps its encoder per thread).
// Callers outside src/codec use codec.hpp instead.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codec/codec.hpp"

namespace hzio::codec::detail {

// Local. Bytes of one sample of `dtype` (all components). DType::bytes() lives in the format
// layer, which the codec layer does not link, hence this copy. Returns 0 for an invalid scalar.
size_t sample_bytes(DType dtype);
// Local. Bytes of one scalar of `dtype`, 0 for an invalid scalar.
size_t scalar_bytes(DType dtype);
// Local. The dtype's .idx spelling for messages, e.g. "float32" or "uint8[3]".
std::string dtype_name(DType dtype);

// Local. Copies `samples` into `out`. Never fails.
Status encode_raw(std::span<const std::byte> samples, std::vector<std::byte>& out);
// Local. Copies `payload` into `out`. Errors: kCorrupt when the sizes differ.
Status decode_raw(std::span<const std::byte> payload, std::span<std::byte> out);

// Local. Writes a zlib (RFC 1950) stream of `samples` at `level` (-1 = zlib default, 0..9).
// Errors: kInternal when zlib refuses (bad level, out of memory).
Status encode_zip(int level, std::span<const std::byte> samples, std::vector<std::byte>& out);
// Local. Inflates a zlib stream into exactly out.size() bytes, never writing past `out`.
// Errors: kCorrupt for a bad stream (header, data or Adler-32) or a wrong decoded size;
// kInternal when zlib runs out of memory.
Status decode_zip(std::span<const std::byte> payload, std::span<std::byte> out);

// Local. Writes one frameless LZ4 block (no frame, no size prefix). Errors: kUnsupported for inputs
// larger than LZ4 can take, kInternal when LZ4 fails.
Status encode_lz4(std::span<const std::byte> samples, std::vector<std::byte>& out);
// Local. Decodes one frameless LZ4 block into exactly out.size() bytes, never writing past `out`.
// Errors: kCorrupt for a malformed block or a wrong decoded size; kUnsupported past LZ4's 2 GB limit.
Status decode_lz4(std::span<const std::byte> payload, std::span<std::byte> out);

// Local. Writes a headerless zfp stream of `samples`, a block_dims grid (x fastest) of `dtype`.
// `samples` must hold exactly prod(block_dims) samples (codec.cpp checks). Errors: kUnsupported
// for dtypes other than single-component float32/float64/int32/int64 or ndim outside 1..3,
// kInternal for inconsistent dims or a zfp failure.
Status encode_zfp(const ZfpMode& mode, DType dtype, int ndim, const std::array<int64_t, 3>& block_dims,
                  std::span<const std::byte> samples, std::vector<std::byte>& out);
// Local. Decodes a headerless zfp stream with `mode` into `out` (prod(block_dims) samples).
// Never reads outside `payload`, whatever its bits (zfp reads a padded copy). Errors: kCorrupt
// when the stream needs more bytes than the payload has or the payload is longer than any such
// block can be; kUnsupported as for encode_zfp; kInternal for inconsistent dims.
Status decode_zfp(const ZfpMode& mode, DType dtype, int ndim, const std::array<int64_t, 3>& block_dims,
                  std::span<const std::byte> payload, std::span<std::byte> out);

}  // namespace hzio::codec::detail
