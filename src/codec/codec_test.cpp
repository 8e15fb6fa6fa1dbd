// Tests for the codec layer (codec.hpp): round trips, the zlib/LZ4/zfp wire formats, spec parsing,
// flags mapping, hostile payloads, and decoding the OpenVisus-written samples in shared/interop.
#include <lz4.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "codec/codec.hpp"

namespace hzio::codec {
namespace {

using Bytes = std::vector<std::byte>;
using Dims = std::array<int64_t, 3>;
const DType kU8{Scalar::kUint8, 1}, kF32{Scalar::kFloat32, 1}, kF64{Scalar::kFloat64, 1};
const DType kI32{Scalar::kInt32, 1}, kI64{Scalar::kInt64, 1};
const std::uniform_real_distribution<float> kFloats(-1e4f, 1e4f);

CodecSpec spec_of(std::string_view text) {
  auto spec = CodecSpec::parse(text);
  EXPECT_TRUE(spec.is_ok()) << text << ": " << spec.status().to_string();
  return spec.is_ok() ? spec.value() : CodecSpec{};
}

// Half random, half runs, so compressors take both their literal and their match paths.
Bytes test_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(i < n / 2 ? rng() & 0xFF : (i / 64) & 0xFF);
  return b;
}

template <class T>
Bytes to_bytes(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const std::byte*>(v.data());
  return Bytes(p, p + v.size() * sizeof(T));
}

template <class T>
std::vector<T> from_bytes(std::span<const std::byte> b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

template <class T, class Dist>
std::vector<T> random_values(size_t n, uint32_t seed, Dist dist) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

Bytes encode(const CodecSpec& spec, DType dtype, int ndim, Dims dims, std::span<const std::byte> raw) {
  Bytes out;
  const Status s = compress_block(spec, dtype, ndim, dims, raw, out);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

Status decode(const CodecSpec& spec, DType dtype, int ndim, Dims dims, std::span<const std::byte> payload,
              std::span<std::byte> out) {
  return decompress_block(spec.kind, spec, dtype, ndim, dims, payload, out);
}

TEST(Codec, RawZipAndLz4RoundTripRandomBytesOfManySizes) {
  for (const char* text : {"raw", "zip", "zip-Z_BEST_SPEED", "zip-Z_BEST_COMPRESSION", "lz4"}) {
    for (int64_t n : {1, 7, 64, 4096, 65536}) {
      const Bytes raw = test_bytes(static_cast<size_t>(n), static_cast<uint32_t>(n));
      const Bytes payload = encode(spec_of(text), kU8, 1, {n, 1, 1}, raw);
      Bytes out(raw.size());
      ASSERT_TRUE(decode(spec_of(text), kU8, 1, {n, 1, 1}, payload, out).is_ok()) << text << " n=" << n;
      EXPECT_EQ(out, raw) << text << " n=" << n;
    }
  }
}

TEST(Codec, ZipPayloadIsAZlibStreamThatUncompressDecodes) {
  const Bytes raw = test_bytes(16384, 1);
  const Bytes payload = encode(spec_of("zip"), kU8, 2, {128, 128, 1}, raw);
  ASSERT_GE(payload.size(), 6u);
  EXPECT_EQ(payload[0], std::byte{0x78});
  EXPECT_EQ(payload[1], std::byte{0x9c});  // default level, as OpenVisus writes
  EXPECT_EQ(encode(spec_of("zip-Z_BEST_SPEED"), kU8, 2, {128, 128, 1}, raw)[1], std::byte{0x01});
  EXPECT_EQ(encode(spec_of("zip-Z_BEST_COMPRESSION"), kU8, 2, {128, 128, 1}, raw)[1], std::byte{0xda});
  Bytes out(raw.size());
  uLongf n = out.size();
  const auto* src = reinterpret_cast<const Bytef*>(payload.data());
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(out.data()), &n, src, payload.size()), Z_OK);
  EXPECT_EQ(n, raw.size());
  EXPECT_EQ(out, raw);
  Bytes padded = payload;  // bytes after the Adler-32 trailer are ignored, as OpenVisus's uncompress does
  padded.resize(payload.size() + 8);
  EXPECT_TRUE(decode(spec_of("zip"), kU8, 2, {128, 128, 1}, padded, out).is_ok());
}

TEST(Codec, Lz4PayloadIsARawBlockThatLz4DecompressSafeDecodesWithTheKnownSize) {
  const Bytes raw = test_bytes(16384, 2);
  const Bytes payload = encode(spec_of("lz4"), kU8, 1, {16384, 1, 1}, raw);
  Bytes out(raw.size());
  const auto* src = reinterpret_cast<const char*>(payload.data());
  EXPECT_EQ(LZ4_decompress_safe(src, reinterpret_cast<char*>(out.data()), int(payload.size()), 16384), 16384);
  EXPECT_EQ(out, raw);
}

TEST(Codec, EveryTruncationOfARawZipOrLz4PayloadIsCorrupt) {
  for (const char* text : {"raw", "zip", "lz4"}) {
    const Bytes payload = encode(spec_of(text), kU8, 1, {2048, 1, 1}, test_bytes(2048, 3));
    for (size_t len = 0; len < payload.size(); ++len) {
      Bytes out(2048);
      // A copy of exactly len bytes, so ASan sees any read past the truncated payload.
      const Bytes cut(payload.begin(), payload.begin() + static_cast<ptrdiff_t>(len));
      EXPECT_EQ(decode(spec_of(text), kU8, 1, {2048, 1, 1}, cut, out).code(), ErrorCode::kCorrupt) << text << len;
    }
  }
}

TEST(Codec, GarbledZipAndLz4PayloadsAreCorruptOrDecodeWithoutCrashing) {
  std::mt19937 rng(4);
  for (const char* text : {"zip", "lz4"}) {
    const CodecSpec spec = spec_of(text);
    const Bytes raw = test_bytes(4096, 5);
    const Bytes payload = encode(spec, kU8, 1, {4096, 1, 1}, raw);
    int corrupt_count = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      Bytes bad = payload;
      for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) bad[rng() % bad.size()] ^= std::byte(1 + rng() % 255);
      Bytes out(raw.size());
      const Status s = decode(spec, kU8, 1, {4096, 1, 1}, bad, out);
      ASSERT_TRUE(s.is_ok() || s.code() == ErrorCode::kCorrupt) << s.to_string();
      corrupt_count += !s.is_ok();
      // zlib's Adler-32 trailer catches changed output; only unused padding bits can change silently.
      if (spec.kind == CodecKind::kZip && s.is_ok()) {
        EXPECT_EQ(out, raw);
      }
    }
    EXPECT_GT(corrupt_count, 0) << text;
  }
}

TEST(Codec, DecodeIntoTheWrongSizeIsCorruptNamingTheExpectedSize) {
  for (const char* text : {"raw", "zip", "lz4"}) {
    const Bytes payload = encode(spec_of(text), kU8, 1, {4096, 1, 1}, test_bytes(4096, 6));
    for (int64_t n : {4095, 2048, 4097, 8192}) {
      Bytes out(static_cast<size_t>(n));
      const Status s = decode(spec_of(text), kU8, 1, {n, 1, 1}, payload, out);
      EXPECT_EQ(s.code(), ErrorCode::kCorrupt) << text << " n=" << n;
      EXPECT_NE(s.message().find(std::string(text) + " payload"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(std::to_string(n) + " bytes"), std::string::npos) << s.message();
    }
  }
}

TEST(Codec, BuffersNotMatchingBlockDimsAreAnInternalError) {
  Bytes out(100), encoded;
  EXPECT_EQ(decode(spec_of("raw"), kF32, 1, {100, 1, 1}, Bytes(100), out).code(), ErrorCode::kInternal);
  EXPECT_EQ(compress_block(spec_of("zip"), kU8, 1, {0, 1, 1}, Bytes(100), encoded).code(), ErrorCode::kInternal);
}

TEST(CodecSpec, ParsesEveryDocumentedForm) {
  for (auto [text, kind, level] : {std::tuple{"", CodecKind::kRaw, -1},
                                   {"raw", CodecKind::kRaw, -1},
                                   {" bin ", CodecKind::kRaw, -1},
                                   {"lz4", CodecKind::kLz4, -1},
                                   {"zip", CodecKind::kZip, -1},
                                   {"zip-Z_DEFAULT_COMPRESSION", CodecKind::kZip, -1},
                                   {"zip-Z_BEST_SPEED", CodecKind::kZip, 1},
                                   {"zip-Z_BEST_COMPRESSION", CodecKind::kZip, 9}}) {
    EXPECT_EQ(spec_of(text).kind, kind) << text;
    EXPECT_EQ(spec_of(text).zip_level, level) << text;
  }
  using M = ZfpMode;
  const M rev{M::Kind::kReversible, 0}, p64{M::Kind::kPrecision, 64}, p20{M::Kind::kPrecision, 20};
  const M a5{M::Kind::kAccuracy, 0.5}, a25{M::Kind::kAccuracy, 0.25}, a3{M::Kind::kAccuracy, 1e-3};
  for (auto [text, enc, dec] : {std::tuple{"zfp", rev, p64},
                                {"zfp-reversible-reversible", rev, rev},
                                {"zfp-precision=20-precision=20", p20, p20},
                                {"zfp-reversible-64", rev, p64},
                                {"zfp-accuracy=0.5-accuracy=.25", a5, a25},
                                {"zfp-20-0.001", p20, a3},
                                {"zfp-accuracy=1e-3-20", a3, p20}}) {
    const CodecSpec spec = spec_of(text);
    EXPECT_EQ(spec.kind, CodecKind::kZfp) << text;
    EXPECT_TRUE(spec.zfp_encode == enc && spec.zfp_decode == dec) << text;
  }
}

TEST(CodecSpec, ToStringParsesBackToTheSameSpec) {
  for (auto [text, canonical] : {std::pair{"raw", ""},
                                 {"zip-Z_DEFAULT_COMPRESSION", "zip"},
                                 {"zfp-reversible-reversible", "zfp-reversible-reversible"},
                                 {"zfp-20-0.5", "zfp-precision=20-accuracy=0.5"}}) {
    EXPECT_EQ(spec_of(text).to_string(), canonical);
  }
  for (const char* text :
       {"", "bin", "zip", "zip-Z_BEST_SPEED", "zip-Z_BEST_COMPRESSION", "lz4", "zfp", "zfp-reversible-reversible",
        "zfp-precision=20-precision=20", "zfp-accuracy=1e-7-3", "zfp-0.1-accuracy=0.3"}) {
    const CodecSpec spec = spec_of(text);
    const CodecSpec again = spec_of(spec.to_string());
    EXPECT_TRUE(again.kind == spec.kind && again.zip_level == spec.zip_level && again.zfp_encode == spec.zfp_encode &&
                again.zfp_decode == spec.zfp_decode)
        << text << " -> " << spec.to_string();
  }
}

TEST(CodecSpec, RejectsMalformedSpecsWithAFormatErrorNamingThem) {
  for (const char* text : {"gzip",
                           "zip-9",
                           "zip-Z_FASTEST",
                           "lz4hc",
                           "png",
                           "jpg",
                           "zfp-",
                           "zfp-reversible",
                           "zfp-reversible-",
                           "zfp--reversible",
                           "zfp-reversible-reversible-reversible",
                           "zfp-precision=0-reversible",
                           "zfp-precision=65-reversible",
                           "zfp-precision=x-reversible",
                           "zfp-accuracy=0-reversible",
                           "zfp-accuracy=-1-reversible",
                           "zfp-accuracy=nan-reversible",
                           "zfp-rate=8-rate=8",
                           "zfp-1e-3-1e-3",
                           "zfp-16x-16",
                           "zfpreversible"}) {
    const auto spec = CodecSpec::parse(text);
    ASSERT_FALSE(spec.is_ok()) << text;
    EXPECT_EQ(spec.status().code(), ErrorCode::kFormat) << text;
    EXPECT_NE(spec.status().message().find(text), std::string::npos) << spec.status().message();
  }
}

TEST(CodecKindFromFlags, MapsTheLowNibbleAndRejectsCodesHzioCannotDecode) {
  for (auto [flags, kind] : {std::pair{0x00u, CodecKind::kRaw},
                             {0x10u, CodecKind::kRaw},
                             {0x03u, CodecKind::kZip},
                             {0x13u, CodecKind::kZip},
                             {0x07u, CodecKind::kLz4},
                             {0x17u, CodecKind::kLz4},
                             {0x08u, CodecKind::kZfp}}) {
    EXPECT_EQ(codec_kind_from_flags(flags).value(), kind) << flags;
  }
  for (uint32_t flags : {0x04u, 0x06u, 0x0Fu, 0x16u, 0x05u, 0x01u}) {
    const auto kind = codec_kind_from_flags(flags);
    ASSERT_FALSE(kind.is_ok()) << flags;
    const bool image = (flags & 0xF) == 4 || (flags & 0xF) == 6;  // valid IDX codecs hzio does not implement
    EXPECT_EQ(kind.status().code(), image ? ErrorCode::kUnsupported : ErrorCode::kCorrupt);
    EXPECT_NE(kind.status().message().find(std::to_string(flags & 0xF)), std::string::npos);
  }
}

TEST(Zfp, ReversibleRoundTripsFloat32BlocksExactlyIn1D2DAnd3D) {
  const CodecSpec spec = spec_of("zfp-reversible-reversible");
  for (auto [ndim, dims] : {std::pair{2, Dims{16, 16, 1}},
                            {2, Dims{13, 7, 1}},
                            {3, Dims{16, 16, 16}},
                            {3, Dims{5, 6, 7}},
                            {1, Dims{4096, 1, 1}},
                            {1, Dims{13, 1, 1}},
                            {2, Dims{2, 2, 1}}}) {
    const auto values = random_values<float>(static_cast<size_t>(dims[0] * dims[1] * dims[2]), 8, kFloats);
    const Bytes payload = encode(spec, kF32, ndim, dims, to_bytes(values));
    Bytes out(values.size() * 4);
    ASSERT_TRUE(decode(spec, kF32, ndim, dims, payload, out).is_ok()) << ndim;
    EXPECT_EQ(from_bytes<float>(out), values) << "dims " << dims[0] << "x" << dims[1] << "x" << dims[2];
  }
}

template <class T>
void expect_reversible_round_trip(DType dtype, const std::vector<T>& values) {
  const CodecSpec spec = spec_of("zfp-reversible-reversible");
  const Bytes payload = encode(spec, dtype, 3, {8, 8, 8}, to_bytes(values));
  Bytes out(values.size() * sizeof(T));
  ASSERT_TRUE(decode(spec, dtype, 3, {8, 8, 8}, payload, out).is_ok());
  EXPECT_EQ(from_bytes<T>(out), values);
}

TEST(Zfp, ReversibleRoundTripsFloat64Int32AndInt64Exactly) {
  expect_reversible_round_trip(kF64, random_values<double>(512, 9, std::uniform_real_distribution(-1e300, 1e300)));
  expect_reversible_round_trip(kI32, random_values<int32_t>(512, 9, std::uniform_int_distribution<int32_t>()));
  expect_reversible_round_trip(kI64, random_values<int64_t>(512, 9, std::uniform_int_distribution<int64_t>()));
}

TEST(Zfp, PrecisionAndAccuracyModesStayWithinTheirErrorBounds) {
  std::vector<float> values;  // smooth, as zfp's lossy modes expect
  for (int i = 0; i < 4096; ++i) {
    values.push_back(float(100 * std::sin(0.3 * (i % 16)) * std::cos(0.2 * (i / 16 % 16)) + i / 256));
  }
  for (auto [text, bound] : {std::pair{"zfp-precision=20-precision=20", 0.05f},
                             {"zfp-16-16", 1.0f},
                             {"zfp-accuracy=0.5-accuracy=0.5", 0.5f},
                             {"zfp-0.001-0.001", 0.001f}}) {
    const Bytes payload = encode(spec_of(text), kF32, 3, {16, 16, 16}, to_bytes(values));
    EXPECT_LT(payload.size(), values.size() * 4) << text;
    Bytes out(values.size() * 4);
    ASSERT_TRUE(decode(spec_of(text), kF32, 3, {16, 16, 16}, payload, out).is_ok()) << text;
    const auto decoded = from_bytes<float>(out);
    float err = 0;
    for (size_t i = 0; i < values.size(); ++i) err = std::max(err, std::abs(decoded[i] - values[i]));
    EXPECT_LE(err, bound) << text;
    EXPECT_GT(err, 0.0f) << text;  // really lossy, so the mode was applied
  }
}

// Each thread keeps its zfp stream and output buffer from block to block (zfp_codec.cpp): a block
// encoded after others, in other modes and sizes, must come out as from a thread's first encode.
TEST(Zfp, ABlockEncodedAfterOthersInOtherModesEqualsItsFirstEncodeOnAFreshThread) {
  struct Case {
    const char* spec;
    DType dtype;
    int ndim;
    Dims dims;
    Bytes raw;
  };
  const auto doubles = random_values<double>(256, 15, std::uniform_real_distribution(-1e3, 1e3));
  const auto ints = random_values<int32_t>(13, 16, std::uniform_int_distribution<int32_t>());
  std::vector<Case> cases{
      {"zfp-reversible-reversible", kF32, 3, {32, 32, 16}, to_bytes(random_values<float>(16384, 13, kFloats))},
      {"zfp-accuracy=0.5-accuracy=0.5", kF32, 3, {16, 16, 16}, to_bytes(random_values<float>(4096, 14, kFloats))},
      {"zfp-precision=12-precision=12", kF64, 2, {16, 16, 1}, to_bytes(doubles)},
      {"zfp-reversible-reversible", kI32, 1, {13, 1, 1}, to_bytes(ints)},
      {"zfp", kF32, 3, {5, 6, 7}, to_bytes(random_values<float>(210, 17, kFloats))}};
  std::vector<Bytes> reused;  // all on this thread, largest block first so the buffer holds old bytes
  for (const Case& c : cases) reused.push_back(encode(spec_of(c.spec), c.dtype, c.ndim, c.dims, c.raw));
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    Bytes fresh;
    std::thread([&] { fresh = encode(spec_of(c.spec), c.dtype, c.ndim, c.dims, c.raw); }).join();
    EXPECT_EQ(reused[i], fresh) << c.spec;
    EXPECT_EQ(encode(spec_of(c.spec), c.dtype, c.ndim, c.dims, c.raw), fresh) << c.spec << ", encoded again";
  }
}

TEST(Zfp, UnsupportedDtypesAndDimensionsAreRejected) {
  const CodecSpec spec = spec_of("zfp-reversible-reversible");
  Bytes payload;
  for (auto [dtype, sample_bytes] : {std::pair{kU8, 1},
                                     {DType{Scalar::kUint32, 1}, 4},
                                     {DType{Scalar::kInt16, 1}, 2},
                                     {DType{Scalar::kFloat32, 3}, 12}}) {
    Bytes raw(static_cast<size_t>(64 * 64 * sample_bytes));
    EXPECT_EQ(compress_block(spec, dtype, 2, {64, 64, 1}, raw, payload).code(), ErrorCode::kUnsupported);
    EXPECT_EQ(decode(spec, dtype, 2, {64, 64, 1}, Bytes(raw), raw).code(), ErrorCode::kUnsupported);
  }
  EXPECT_EQ(compress_block(spec, kF32, 4, {16, 1, 1}, Bytes(64), payload).code(), ErrorCode::kUnsupported);
}

TEST(Zfp, TruncatedPayloadsAreCorruptAndGarbledOnesNeverCrash) {
  const CodecSpec spec = spec_of("zfp-reversible-reversible");
  const Dims dims{16, 16, 16};
  const Bytes payload = encode(spec, kF32, 3, dims, to_bytes(random_values<float>(4096, 10, kFloats)));
  Bytes out(4096 * 4);
  // The last 8-byte word of a flushed zfp stream holds at least one coded bit.
  for (size_t len = 0; len + 8 <= payload.size(); len += 1 + len / 64) {
    const Bytes cut(payload.begin(), payload.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_EQ(decode(spec, kF32, 3, dims, cut, out).code(), ErrorCode::kCorrupt) << len;
  }
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    Bytes bad = payload;
    if (trial % 2) bad.resize(rng() % bad.size());
    for (int k = 1 + int(rng() % 8); k > 0 && !bad.empty(); --k) bad[rng() % bad.size()] ^= std::byte(1 + rng() % 255);
    for (const char* mode : {"zfp-reversible-reversible", "zfp", "zfp-8-8", "zfp-0.5-0.5"}) {
      const Status s = decode(spec_of(mode), kF32, 3, dims, bad, out);
      ASSERT_TRUE(s.is_ok() || s.code() == ErrorCode::kCorrupt) << s.to_string();
    }
  }
  Bytes twice(16 * 16 * 32 * 4);
  EXPECT_EQ(decode(spec, kF32, 3, {16, 16, 32}, payload, twice).code(), ErrorCode::kCorrupt);
}

TEST(Zfp, MisalignedInputAndOutputBuffersRoundTrip) {
  const CodecSpec spec = spec_of("zfp-reversible-reversible");
  const Bytes values = to_bytes(random_values<float>(64, 12, kFloats));
  Bytes raw_storage(values.size() + 1), out_storage(values.size() + 3);
  std::copy(values.begin(), values.end(), raw_storage.begin() + 1);
  const Bytes payload = encode(spec, kF32, 2, {8, 8, 1}, std::span(raw_storage).subspan(1));
  Bytes payload_storage(payload.size() + 5);
  std::copy(payload.begin(), payload.end(), payload_storage.begin() + 5);
  const auto out = std::span(out_storage).subspan(3);
  ASSERT_TRUE(decode(spec, kF32, 2, {8, 8, 1}, std::span(payload_storage).subspan(5), out).is_ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), values.begin()));
}

// Finds shared/interop/openvisus-samples (see its README.md) walking up from this file or the working dir.
std::optional<std::filesystem::path> samples_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::path start : {fs::path(__FILE__).parent_path(), fs::current_path(ec)}) {
    for (fs::path p = start; !p.empty() && p != p.parent_path(); p = p.parent_path()) {
      if (fs::is_directory(p / "shared/interop/openvisus-samples", ec)) return p / "shared/interop/openvisus-samples";
    }
  }
  return std::nullopt;
}

// (payload, flags) per entry: a 40-byte header, then 40-byte big-endian entries (w2,w3 offset; w4 size; w5 flags).
std::vector<std::pair<Bytes, uint32_t>> read_block_file(const std::filesystem::path& file, int entries) {
  std::ifstream in(file, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto word = [&](size_t at) {
    uint32_t w = 0;
    for (int i = 0; i < 4; ++i) w = w << 8 | static_cast<unsigned char>(data.at(at + i));
    return w;
  };
  std::vector<std::pair<Bytes, uint32_t>> blocks;
  for (size_t base = 40; base < 40 + 40 * static_cast<size_t>(entries); base += 40) {
    const uint64_t offset = word(base + 8) | uint64_t{word(base + 12)} << 32, size = word(base + 16);
    EXPECT_LE(offset + size, data.size()) << file << " entry at " << base;
    const std::string payload = offset < data.size() ? data.substr(offset, size) : "";
    const auto* p = reinterpret_cast<const std::byte*>(payload.data());
    blocks.emplace_back(Bytes(p, p + payload.size()), word(base + 20));
  }
  return blocks;
}

// The samples hold x + 100*y + 10000*z for integer x, y, z in [0, 31].
bool is_xyz_value(float v) {
  if (v != std::floor(v) || v < 0 || v > 31 + 3100 + 310000) return false;
  const auto i = static_cast<int64_t>(v);
  return i % 100 <= 31 && i / 100 % 100 <= 31 && i / 10000 <= 31;
}

// The zfp sample and field a of the zip sample hold the same values in the same HZ-order blocks.
TEST(OpenVisusSamples, ZfpZipAndLz4BlocksDecodeToTheKnownFieldAndZfpMatchesZipExactly) {
  const auto dir = samples_dir();
  if (!dir) GTEST_SKIP() << "shared/interop/openvisus-samples not found";
  const auto zfp_blocks = read_block_file(*dir / "f32_3d_zfp_reversible/0000.bin", 8);
  const auto zip_blocks = read_block_file(*dir / "f32_3d_2fields_zip/0000.bin", 8);
  const auto lz4_blocks = read_block_file(*dir / "f32_3d_rowmajor_lz4/0000.bin", 8);
  const CodecSpec spec = spec_of("zfp-reversible-reversible");
  for (int b = 0; b < 8; ++b) {
    SCOPED_TRACE("block " + std::to_string(b));
    Bytes out(4096 * 4), want(4096 * 4), lz4(4096 * 4);
    ASSERT_EQ(codec_kind_from_flags(zfp_blocks[b].second).value(), CodecKind::kZfp);
    const Status s = decode(spec, kF32, 3, {16, 16, 16}, zfp_blocks[b].first, out);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    const auto values = from_bytes<float>(out);
    EXPECT_TRUE(std::all_of(values.begin(), values.end(), is_xyz_value));
    if (b == 0) {  // HZ order: (0,0,0), (16,0,0), (0,16,0), (16,16,0), (0,0,16)
      EXPECT_EQ(std::vector<float>(values.begin(), values.begin() + 5),
                (std::vector<float>{0, 16, 1600, 1616, 160000}));
    }
    ASSERT_EQ(codec_kind_from_flags(zip_blocks[b].second).value(), CodecKind::kZip);
    ASSERT_TRUE(decode(spec_of("zip"), kF32, 3, {16, 16, 16}, zip_blocks[b].first, want).is_ok());
    EXPECT_EQ(out, want);
    ASSERT_EQ(lz4_blocks[b].second, 0x17u);  // row-major, lz4
    ASSERT_TRUE(decode(spec_of("lz4"), kF32, 3, {16, 16, 16}, lz4_blocks[b].first, lz4).is_ok());
    const auto row_major = from_bytes<float>(lz4);
    EXPECT_TRUE(std::all_of(row_major.begin(), row_major.end(), is_xyz_value));
  }
}

}  // namespace
}  // namespace hzio::codec
