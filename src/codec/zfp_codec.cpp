// The zfp (code 8) block codec: each payload is a headerless zfp 1.0 stream of the block grid
// (x fastest), as OpenVisus writes it. Encoding uses zfp_compress, with a stream and buffer kept per
// thread; decoding walks zfp's 4^d blocks itself so it can stop the moment the stream runs past the
// payload. Layer: codec.
#include <zfp.h>

#include <cstring>
#include <memory>

#include "codec/codec_impl.hpp"

namespace hzio::codec::detail {
namespace {

struct StreamCloser {
  void operator()(zfp_stream* s) const { zfp_stream_close(s); }
};
struct BitsCloser {
  void operator()(bitstream* s) const { stream_close(s); }
};
struct FieldFreer {
  void operator()(zfp_field* f) const { zfp_field_free(f); }
};
using StreamPtr = std::unique_ptr<zfp_stream, StreamCloser>;
using BitsPtr = std::unique_ptr<bitstream, BitsCloser>;
using FieldPtr = std::unique_ptr<zfp_field, FieldFreer>;

std::string describe(DType dtype, const std::array<int64_t, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]) + " " + dtype_name(dtype) +
         " block";
}

Result<zfp_type> zfp_type_of(DType dtype) {
  if (dtype.components == 1) {
    switch (dtype.scalar) {
      case Scalar::kFloat32:
        return zfp_type_float;
      case Scalar::kFloat64:
        return zfp_type_double;
      case Scalar::kInt32:
        return zfp_type_int32;
      case Scalar::kInt64:
        return zfp_type_int64;
      default:
        break;
    }
  }
  return unsupported("zfp cannot compress " + dtype_name(dtype) +
                     " samples (only single-component float32, float64, int32 and int64)");
}

Status check_shape(int ndim, const std::array<int64_t, 3>& dims) {
  if (ndim < 1 || ndim > 3) return unsupported("zfp blocks must be 1-, 2- or 3-D, not " + std::to_string(ndim) + "-D");
  for (int a = ndim; a < 3; ++a) {
    if (dims[a] != 1) {
      return internal_error("zfp: a " + std::to_string(ndim) + "-D block has extent " + std::to_string(dims[a]) +
                            " on axis " + std::to_string(a));
    }
  }
  return Status::ok();
}

// Each of zfp's mode setters fixes all four of its mode parameters (minbits, maxbits, maxprec,
// minexp), so a stream that ran in another mode encodes exactly as a fresh one.
Status set_mode(zfp_stream* zfp, const ZfpMode& mode) {
  switch (mode.kind) {
    case ZfpMode::Kind::kReversible:
      zfp_stream_set_reversible(zfp);
      return Status::ok();
    case ZfpMode::Kind::kPrecision:
      if (!(mode.parameter >= 1 && mode.parameter <= ZFP_MAX_PREC)) break;
      zfp_stream_set_precision(zfp, static_cast<unsigned>(mode.parameter));
      return Status::ok();
    case ZfpMode::Kind::kAccuracy:
      if (!(mode.parameter > 0)) break;
      zfp_stream_set_accuracy(zfp, mode.parameter);
      return Status::ok();
  }
  return internal_error("bad zfp mode parameter " + std::to_string(mode.parameter));
}

Result<StreamPtr> open_stream(const ZfpMode& mode) {
  StreamPtr zfp(zfp_stream_open(nullptr));
  if (!zfp) return internal_error("zfp_stream_open failed");
  HZIO_RETURN_IF_ERROR(set_mode(zfp.get(), mode));
  return zfp;
}

// One thread's encoder, kept from block to block: zfp's stream and the words it writes into, which
// stay mapped and cached, so a block costs zfp_compress and a copy of the bytes it wrote (as when
// the library is called alone), not a new zero-filled buffer of zfp's maximum size. zfp writes
// whole words and never reads them back, so what an earlier block left there cannot reach `out`.
// The buffer keeps the size of the largest block the thread has encoded.
struct Encoder {
  StreamPtr zfp;
  std::vector<uint64_t> words;
  BitsPtr bits;  // over `words`; reopened whenever they grow
};

// The calling thread's encoder in `mode`, rewound, its buffer large enough for `field` (a block
// of `dtype` and `dims`, for messages).
Result<zfp_stream*> thread_encoder(const ZfpMode& mode, const zfp_field* field, DType dtype,
                                   const std::array<int64_t, 3>& dims) {
  thread_local Encoder enc;
  if (!enc.zfp) {
    enc.zfp.reset(zfp_stream_open(nullptr));
    if (!enc.zfp) return internal_error("zfp_stream_open failed");
  }
  HZIO_RETURN_IF_ERROR(set_mode(enc.zfp.get(), mode));
  const size_t max_bytes = zfp_stream_maximum_size(enc.zfp.get(), field);
  if (max_bytes == 0) return internal_error("zfp_stream_maximum_size failed for a " + describe(dtype, dims));
  const size_t words = (max_bytes + 7) / 8 + 1;
  if (enc.words.size() < words) {
    enc.bits.reset();
    enc.words.resize(words);
  }
  if (!enc.bits) {
    enc.bits.reset(stream_open(enc.words.data(), enc.words.size() * sizeof(uint64_t)));
    if (!enc.bits) return internal_error("zfp stream_open failed");
  }
  zfp_stream_set_bit_stream(enc.zfp.get(), enc.bits.get());
  zfp_stream_rewind(enc.zfp.get());
  return enc.zfp.get();
}

FieldPtr make_field(zfp_type type, int ndim, const std::array<int64_t, 3>& d, void* data) {
  const auto nx = static_cast<size_t>(d[0]), ny = static_cast<size_t>(d[1]), nz = static_cast<size_t>(d[2]);
  if (ndim == 1) return FieldPtr(zfp_field_1d(data, type, nx));
  if (ndim == 2) return FieldPtr(zfp_field_2d(data, type, nx, ny));
  return FieldPtr(zfp_field_3d(data, type, nx, ny, nz));
}

// zfp's per-block entry points for one sample type, picked at compile time.
template <class T>
struct BlockDecoder;

#define HZIO_ZFP_BLOCK_DECODER(T, suffix)                                        \
  template <>                                                                    \
  struct BlockDecoder<T> {                                                       \
    static constexpr auto full1 = zfp_decode_block_strided_##suffix##_1;         \
    static constexpr auto part1 = zfp_decode_partial_block_strided_##suffix##_1; \
    static constexpr auto full2 = zfp_decode_block_strided_##suffix##_2;         \
    static constexpr auto part2 = zfp_decode_partial_block_strided_##suffix##_2; \
    static constexpr auto full3 = zfp_decode_block_strided_##suffix##_3;         \
    static constexpr auto part3 = zfp_decode_partial_block_strided_##suffix##_3; \
  };
HZIO_ZFP_BLOCK_DECODER(float, float)
HZIO_ZFP_BLOCK_DECODER(double, double)
HZIO_ZFP_BLOCK_DECODER(int32_t, int32)
HZIO_ZFP_BLOCK_DECODER(int64_t, int64)
#undef HZIO_ZFP_BLOCK_DECODER

// Decodes the zfp block whose first sample is p, of extent n (each 1..4) inside a grid with row
// stride sy and slab stride sz.
template <class T>
void decode_one(zfp_stream* zfp, T* p, int ndim, const std::array<size_t, 3>& n, ptrdiff_t sy, ptrdiff_t sz) {
  using D = BlockDecoder<T>;
  const bool full = n[0] == 4 && (ndim < 2 || n[1] == 4) && (ndim < 3 || n[2] == 4);
  if (ndim == 1) {
    full ? D::full1(zfp, p, 1) : D::part1(zfp, p, n[0], 1);
  } else if (ndim == 2) {
    full ? D::full2(zfp, p, 1, sy) : D::part2(zfp, p, n[0], n[1], 1, sy);
  } else {
    full ? D::full3(zfp, p, 1, sy, sz) : D::part3(zfp, p, n[0], n[1], n[2], 1, sy, sz);
  }
}

// Same block order as zfp_decompress (z, then y, then x, x innermost). After each block the read
// position is checked, so a garbled stream overruns the payload by at most one block's bits,
// which the caller's padding absorbs.
template <class T>
Status decode_blocks(zfp_stream* zfp, T* data, int ndim, const std::array<int64_t, 3>& dims, uint64_t payload_bits,
                     const std::string& what) {
  const auto nx = static_cast<size_t>(dims[0]), ny = static_cast<size_t>(dims[1]), nz = static_cast<size_t>(dims[2]);
  const auto sy = static_cast<ptrdiff_t>(nx), sz = static_cast<ptrdiff_t>(nx * ny);
  bitstream* bits = zfp_stream_bit_stream(zfp);
  for (size_t z = 0; z < nz; z += 4) {
    for (size_t y = 0; y < ny; y += 4) {
      for (size_t x = 0; x < nx; x += 4) {
        const std::array<size_t, 3> n{std::min<size_t>(4, nx - x), std::min<size_t>(4, ny - y),
                                      std::min<size_t>(4, nz - z)};
        decode_one(zfp, data + x + sy * static_cast<ptrdiff_t>(y) + sz * static_cast<ptrdiff_t>(z), ndim, n, sy, sz);
        if (stream_rtell(bits) > payload_bits) {
          return corrupt("zfp payload of " + std::to_string(payload_bits / 8) +
                         " bytes ends inside the 4^d block at (" + std::to_string(x) + "," + std::to_string(y) + "," +
                         std::to_string(z) + ") of a " + what);
        }
      }
    }
  }
  return Status::ok();
}

Status decode_typed(zfp_type type, zfp_stream* zfp, void* data, int ndim, const std::array<int64_t, 3>& dims,
                    uint64_t payload_bits, const std::string& what) {
  switch (type) {
    case zfp_type_float:
      return decode_blocks(zfp, static_cast<float*>(data), ndim, dims, payload_bits, what);
    case zfp_type_double:
      return decode_blocks(zfp, static_cast<double*>(data), ndim, dims, payload_bits, what);
    case zfp_type_int32:
      return decode_blocks(zfp, static_cast<int32_t*>(data), ndim, dims, payload_bits, what);
    case zfp_type_int64:
      return decode_blocks(zfp, static_cast<int64_t*>(data), ndim, dims, payload_bits, what);
    default:
      return internal_error("zfp: unexpected type for a " + what);
  }
}

uint64_t zfp_block_count(const std::array<int64_t, 3>& d) {
  return static_cast<uint64_t>((d[0] + 3) / 4) * static_cast<uint64_t>((d[1] + 3) / 4) *
         static_cast<uint64_t>((d[2] + 3) / 4);
}

bool aligned_for(const void* p, DType dtype) { return reinterpret_cast<uintptr_t>(p) % scalar_bytes(dtype) == 0; }

}  // namespace

Status encode_zfp(const ZfpMode& mode, DType dtype, int ndim, const std::array<int64_t, 3>& block_dims,
                  std::span<const std::byte> samples, std::vector<std::byte>& out) {
  HZIO_ASSIGN_OR_RETURN(const zfp_type type, zfp_type_of(dtype));
  HZIO_RETURN_IF_ERROR(check_shape(ndim, block_dims));
  // zfp reads the samples through typed pointers, so give it aligned storage.
  std::vector<uint64_t> aligned;
  const void* data = samples.data();
  if (!aligned_for(data, dtype)) {
    aligned.resize((samples.size() + 7) / 8);
    std::memcpy(aligned.data(), samples.data(), samples.size());
    data = aligned.data();
  }
  FieldPtr field = make_field(type, ndim, block_dims, const_cast<void*>(data));
  if (!field) return internal_error("zfp_field allocation failed");
  HZIO_ASSIGN_OR_RETURN(zfp_stream* const zfp, thread_encoder(mode, field.get(), dtype, block_dims));
  const size_t n = zfp_compress(zfp, field.get());
  if (n == 0) return internal_error("zfp_compress failed on a " + describe(dtype, block_dims));
  const auto* bytes = static_cast<const std::byte*>(stream_data(zfp_stream_bit_stream(zfp)));
  out.assign(bytes, bytes + n);
  return Status::ok();
}

Status decode_zfp(const ZfpMode& mode, DType dtype, int ndim, const std::array<int64_t, 3>& block_dims,
                  std::span<const std::byte> payload, std::span<std::byte> out) {
  HZIO_ASSIGN_OR_RETURN(const zfp_type type, zfp_type_of(dtype));
  HZIO_RETURN_IF_ERROR(check_shape(ndim, block_dims));
  const std::string what = describe(dtype, block_dims);
  // No zfp block uses more than ZFP_MAX_BITS bits, which bounds any honest payload (plus slack
  // for word padding). The bound comes from the block grid, so the copy below never trusts a
  // size the payload implies.
  const uint64_t block_bytes = (ZFP_MAX_BITS + 7) / 8;
  const uint64_t max_payload = zfp_block_count(block_dims) * block_bytes + 64;
  if (payload.size() > max_payload) {
    return corrupt("zfp payload of " + std::to_string(payload.size()) + " bytes is longer than any " + what +
                   " compresses to (" + std::to_string(max_payload) + " bytes)");
  }
  // zfp's bit reader does not check the end of its buffer. Decode from an aligned, zero-padded
  // copy whose padding holds one more block than the payload, and stop at the first block that
  // ends past the payload (decode_blocks).
  const size_t pad_words = (ZFP_MAX_BITS + 63) / 64 + 2;
  std::vector<uint64_t> stream_words((payload.size() + 7) / 8 + pad_words, 0);
  if (!payload.empty()) std::memcpy(stream_words.data(), payload.data(), payload.size());
  BitsPtr bits(stream_open(stream_words.data(), stream_words.size() * sizeof(uint64_t)));
  if (!bits) return internal_error("zfp stream_open failed");
  HZIO_ASSIGN_OR_RETURN(StreamPtr zfp, open_stream(mode));
  zfp_stream_set_bit_stream(zfp.get(), bits.get());
  zfp_stream_rewind(zfp.get());

  std::vector<uint64_t> aligned;
  void* target = out.data();
  if (!aligned_for(target, dtype)) {
    aligned.resize((out.size() + 7) / 8);
    target = aligned.data();
  }
  HZIO_RETURN_IF_ERROR(decode_typed(type, zfp.get(), target, ndim, block_dims, uint64_t{payload.size()} * 8, what));
  if (target != out.data()) std::memcpy(out.data(), target, out.size());
  return Status::ok();
}

}  // namespace hzio::codec::detail
