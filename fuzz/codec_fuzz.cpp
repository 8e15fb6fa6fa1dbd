// libFuzzer target for the codec layer: feeds untrusted bytes as a block payload to decompress_block for
// every codec kind, a few dtypes and block shapes, and every zfp decode mode. ctest replays fuzz/corpus/codec
// through fuzz/replay_main.cpp; with clang build it as a libFuzzer target:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc fuzz/codec_fuzz.cpp
//     src/codec/{codec,raw_codec,zip_codec,lz4_codec,zfp_codec}.cpp src/util/status.cpp -lz -llz4 -lzfp
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "codec/codec.hpp"

namespace {

using hzio::DType;
using hzio::ErrorCode;
using hzio::Scalar;
using hzio::codec::CodecKind;
using hzio::codec::CodecSpec;

struct Shape {
  DType dtype;
  size_t sample_bytes;
  int ndim;
  std::array<int64_t, 3> dims;
};

// Small grids keep each input fast; the odd ones exercise zfp's partial 4^d blocks.
constexpr Shape kShapes[] = {
    {{Scalar::kUint8, 1}, 1, 1, {4096, 1, 1}},  {{Scalar::kFloat32, 1}, 4, 3, {16, 16, 16}},
    {{Scalar::kFloat64, 1}, 8, 2, {32, 32, 1}}, {{Scalar::kInt32, 1}, 4, 3, {5, 6, 7}},
    {{Scalar::kInt64, 1}, 8, 1, {13, 1, 1}},    {{Scalar::kUint8, 3}, 3, 2, {8, 8, 1}},
};

constexpr const char* kZfpSpecs[] = {"zfp-reversible-reversible", "zfp", "zfp-16-16", "zfp-0.5-0.5"};

// Anything but a clean success or a corrupt / unsupported error is a bug worth a crash report.
void check(const hzio::Status& s) {
  if (s.is_ok() || s.code() == ErrorCode::kCorrupt || s.code() == ErrorCode::kUnsupported) return;
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data), size);
  std::vector<std::byte> out;
  for (const Shape& shape : kShapes) {
    out.assign(static_cast<size_t>(shape.dims[0] * shape.dims[1] * shape.dims[2]) * shape.sample_bytes, std::byte{0});
    for (CodecKind kind : {CodecKind::kRaw, CodecKind::kZip, CodecKind::kLz4}) {
      check(hzio::codec::decompress_block(kind, CodecSpec{}, shape.dtype, shape.ndim, shape.dims, payload, out));
    }
    for (const char* text : kZfpSpecs) {
      const auto spec = CodecSpec::parse(text);
      if (!spec.is_ok()) std::abort();
      check(hzio::codec::decompress_block(CodecKind::kZfp, spec.value(), shape.dtype, shape.ndim, shape.dims, payload,
                                          out));
    }
  }
  return 0;
}
