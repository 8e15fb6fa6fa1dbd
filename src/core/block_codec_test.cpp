// Tests for one block's bytes (block_codec.hpp): blocks encoded for a field and stored in a file load back
// as written, their flags name the codec and layout as docs/format.md "Codecs" and "Block header table"
// say, layouts convert to the documented row-major order, and bad payloads are errors, not crashes.
#include "core/block_codec.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "format/block_header.hpp"
#include "io/posix_file.hpp"
#include "core/block_oracle_test_util.hpp"

namespace hzio::core {
namespace {

using hzorder::HzSpace;
using Bytes = std::vector<std::byte>;

const DType kU8{Scalar::kUint8, 1}, kI16{Scalar::kInt16, 1}, kI32{Scalar::kInt32, 1}, kI64{Scalar::kInt64, 1};
const DType kF32{Scalar::kFloat32, 1}, kF64{Scalar::kFloat64, 1}, kF32x3{Scalar::kFloat32, 3};

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("hzio_block_codec_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A payload stored in a file of its own after 40 header bytes, as a data file would hold it.
BlockLocation store(const std::string& name, std::span<const std::byte> payload, uint32_t flags) {
  auto file = io::File::open(temp_path(name), io::File::Mode::kCreate);
  EXPECT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_TRUE(file->write_at(0, Bytes(40)).is_ok());
  EXPECT_TRUE(file->write_at(40, payload).is_ok());
  BlockLocation where;
  where.entry = {40, static_cast<uint32_t>(payload.size()), flags};
  where.file = std::make_shared<io::File>(std::move(file).value());
  return where;
}

FieldCoding coding(DType dtype, const char* codec, Layout layout) {
  auto spec = codec::CodecSpec::parse(codec);
  EXPECT_TRUE(spec.is_ok()) << codec;
  return {dtype, spec.is_ok() ? spec.value() : codec::CodecSpec{}, layout, 0};
}

// Random samples of the dtype: integers of a moderate range, so that every codec takes them.
Bytes random_samples(DType dtype, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Bytes out(n * dtype.bytes());
  std::uniform_int_distribution<int> v(-1000, 1000);
  for (size_t i = 0; i < n * static_cast<size_t>(dtype.components); ++i) {
    std::byte* p = out.data() + i * dtype.scalar_bytes();
    const auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
    switch (dtype.scalar) {
      case Scalar::kUint8:
        put(static_cast<uint8_t>(v(rng)));
        break;
      case Scalar::kInt16:
        put(static_cast<int16_t>(v(rng)));
        break;
      case Scalar::kInt32:
        put(static_cast<int32_t>(v(rng)));
        break;
      case Scalar::kInt64:
        put(static_cast<int64_t>(v(rng)) << 20);
        break;
      case Scalar::kFloat32:
        put(static_cast<float>(v(rng)) / 8);
        break;
      case Scalar::kFloat64:
        put(static_cast<double>(v(rng)) / 1024);
        break;
      default:
        ADD_FAILURE() << "dtype not used by these tests";
    }
  }
  return out;
}

// The spaces and blocks the round trips cover: 2-D and 3-D, block 0 (several levels), the first block
// of a level, and the last block.
struct Space {
  const char* bitmask;
  int bpb;
  int ndim;
};
const Space kSpaces[] = {{"V0101010101", 6, 2}, {"V012012012012", 9, 3}};

std::vector<uint64_t> blocks_of(const HzSpace& s) { return {0, 1, 2, s.block_count() / 2, s.block_count() - 1}; }

// The data files of a one-field dataset named "v": where checksum mismatches take the field's name.
const format::IdxFile& one_field_idx() {
  static const format::IdxFile idx = [] {
    format::IdxFile i;
    i.fields.push_back(format::FieldDesc{.name = "v", .dtype = kF32});
    return i;
  }();
  return idx;
}

Bytes load(const BlockLocation& where, const FieldCoding& field, const HzSpace& space, int ndim, uint64_t block,
           Status& status, Layout* layout = nullptr, ReadReport* report = nullptr) {
  Bytes scratch, out((size_t{1} << space.bits_per_block()) * field.dtype.bytes());
  const DataFiles files(&one_field_idx(), temp_path(""), false);
  auto r = load_block(files, where, field, space, ndim, block, scratch, out, report);
  status = r.status();
  if (r.is_ok() && layout) *layout = r.value();
  return out;
}

TEST(BlockCodec, EncodedFlagsHoldTheDocumentedCodecCodeAndTheLayoutBitOnly) {
  // docs/format.md "Codecs": the low nibble's code of each spec.
  const std::pair<const char*, uint32_t> codes[] = {
      {"raw", 0}, {"zip", 3}, {"zip-Z_BEST_SPEED", 3}, {"lz4", 7}, {"zfp-reversible-reversible", 8}, {"zfp-8-8", 8}};
  const HzSpace space(format::Bitmask::parse(kSpaces[1].bitmask).value(), kSpaces[1].bpb);
  const Bytes raw = random_samples(kF32, size_t{1} << kSpaces[1].bpb, 1);
  for (const auto& [codec, code] : codes) {
    for (Layout layout : {Layout::kHzOrder, Layout::kRowMajor}) {
      Bytes payload;
      auto flags = encode_block(coding(kF32, codec, layout), space, 3, 5, raw, payload);
      ASSERT_TRUE(flags.is_ok()) << codec << ": " << flags.status().to_string();
      const uint32_t f = flags.value();
      EXPECT_EQ(f & kBlockFlagCodecMask, code) << codec;
      EXPECT_EQ(format::codec_code_of(f), code) << codec;
      EXPECT_EQ((f & kBlockFlagRowMajor) != 0, layout == Layout::kRowMajor) << codec;
      EXPECT_EQ(format::layout_of(f), layout) << codec;
      EXPECT_EQ(f & ~(kBlockFlagCodecMask | kBlockFlagRowMajor), 0u) << codec;
      if (code == 0) {
        EXPECT_EQ(payload, raw) << "a raw payload is the decoded bytes as they are";
      }
    }
  }
}

TEST(BlockCodec, LosslessBlocksLoadBackAsWrittenForEveryCodecLayoutAndDimension) {
  const std::pair<const char*, std::vector<DType>> cases[] = {
      {"raw", {kU8, kI16, kF32, kF64, kF32x3}},
      {"zip", {kU8, kI16, kF32, kF64, kF32x3}},
      {"lz4", {kU8, kI16, kF32, kF64, kF32x3}},
      {"zfp-reversible-reversible", {kI32, kI64, kF32, kF64}},
  };
  int n = 0;
  for (const Space& sp : kSpaces) {
    const HzSpace space(format::Bitmask::parse(sp.bitmask).value(), sp.bpb);
    for (const auto& [codec, dtypes] : cases)
      for (DType dtype : dtypes)
        for (Layout layout : {Layout::kHzOrder, Layout::kRowMajor})
          for (uint64_t b : blocks_of(space)) {
            SCOPED_TRACE(std::string(sp.bitmask) + " " + codec + " " + dtype.to_string() + " block " +
                         std::to_string(b) + (layout == Layout::kRowMajor ? " rowmajor" : " hzorder"));
            const FieldCoding field = coding(dtype, codec, layout);
            const Bytes raw = random_samples(dtype, size_t{1} << sp.bpb, static_cast<uint32_t>(++n));
            Bytes payload;
            auto flags = encode_block(field, space, sp.ndim, b, raw, payload);
            ASSERT_TRUE(flags.is_ok()) << flags.status().to_string();
            const BlockLocation where = store("lossless.bin", payload, flags.value());
            Status s;
            Layout got = layout == Layout::kHzOrder ? Layout::kRowMajor : Layout::kHzOrder;
            ReadReport report;
            const Bytes out = load(where, field, space, sp.ndim, b, s, &got, &report);
            ASSERT_TRUE(s.is_ok()) << s.to_string();
            EXPECT_EQ(out, raw);
            EXPECT_EQ(got, layout);
            EXPECT_EQ(report.bytes_read, static_cast<int64_t>(payload.size()));
          }
  }
}

TEST(BlockCodec, LoadedLayoutIsTheOneTheFlagsSayNotTheFieldsLayout) {
  const HzSpace space(format::Bitmask::parse(kSpaces[0].bitmask).value(), kSpaces[0].bpb);
  const Bytes raw = random_samples(kF32, size_t{1} << kSpaces[0].bpb, 3);
  for (const char* codec : {"raw", "zip"}) {
    for (Layout stored : {Layout::kHzOrder, Layout::kRowMajor}) {
      Bytes payload;
      const uint32_t flags = encode_block(coding(kF32, codec, stored), space, 2, 3, raw, payload).value();
      const Layout other = stored == Layout::kHzOrder ? Layout::kRowMajor : Layout::kHzOrder;
      Status s;
      Layout got = other;
      load(store("flags.bin", payload, flags), coding(kF32, codec, other), space, 2, 3, s, &got);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_EQ(got, stored) << codec;
    }
  }
}

double float_at(DType dtype, const std::byte* p) {
  if (dtype == kF64) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

TEST(BlockCodec, LossyZfpBlocksLoadBackWithinTheirAccuracy) {
  for (const Space& sp : kSpaces) {
    const HzSpace space(format::Bitmask::parse(sp.bitmask).value(), sp.bpb);
    for (DType dtype : {kF32, kF64}) {
      for (auto [codec, tolerance] : {std::pair{"zfp-accuracy=0.01-accuracy=0.01", 0.01}, {"zfp-0.5-0.5", 0.5}}) {
        const FieldCoding field = coding(dtype, codec, Layout::kRowMajor);
        const size_t n = size_t{1} << sp.bpb;
        // Smooth values over the block grid, as zfp's lossy modes expect.
        std::vector<double> values(n);
        for (size_t i = 0; i < n; ++i) values[i] = 50 * std::sin(0.2 * static_cast<double>(i % 16)) + i / 32.0;
        Bytes raw(n * dtype.bytes());
        for (size_t i = 0; i < n; ++i) {
          const float f = static_cast<float>(values[i]);
          if (dtype == kF32)
            std::memcpy(&raw[i * 4], &f, 4);
          else
            std::memcpy(&raw[i * 8], &values[i], 8);
        }
        for (uint64_t b : blocks_of(space)) {
          Bytes payload;
          auto flags = encode_block(field, space, sp.ndim, b, raw, payload);
          ASSERT_TRUE(flags.is_ok()) << flags.status().to_string();
          Status s;
          const Bytes out = load(store("lossy.bin", payload, flags.value()), field, space, sp.ndim, b, s);
          ASSERT_TRUE(s.is_ok()) << s.to_string();
          double err = 0;
          for (size_t i = 0; i < n; ++i) {
            const double want = dtype == kF32 ? static_cast<double>(static_cast<float>(values[i])) : values[i];
            err = std::max(err, std::abs(float_at(dtype, &out[i * dtype.bytes()]) - want));
          }
          EXPECT_LE(err, tolerance) << sp.bitmask << " " << codec << " " << dtype.to_string() << " block " << b;
        }
      }
    }
  }
}

using testing::row_major_index;

TEST(BlockCodec, ConvertLayoutGivesTheDocumentedRowMajorOrderAndBack) {
  for (const char* bitmask : {"V0101010101", "V012012012012", "V2210100"}) {
    const HzSpace space(format::Bitmask::parse(bitmask).value(), 5);
    for (size_t sb : {1, 2, 4, 8, 12}) {
      const size_t n = size_t{1} << 5;
      for (uint64_t b = 0; b < space.block_count(); ++b) {
        const Bytes hz = random_samples(kU8, n * sb, static_cast<uint32_t>(b * 16 + sb));
        const std::vector<uint64_t> at = row_major_index(space, b);
        Bytes expected(n * sb);
        for (size_t i = 0; i < n; ++i) std::memcpy(&expected[at[i] * sb], &hz[i * sb], sb);
        Bytes row_major(n * sb), back(n * sb);
        convert_layout(space, b, Layout::kHzOrder, hz, row_major, sb);
        EXPECT_EQ(row_major, expected) << bitmask << " block " << b << " sample bytes " << sb;
        convert_layout(space, b, Layout::kRowMajor, row_major, back, sb);
        EXPECT_EQ(back, hz) << bitmask << " block " << b << " sample bytes " << sb;
      }
    }
  }
}

// An error of load_block names the file and the block (block_codec.hpp).
void expect_error_naming(const Status& s, ErrorCode code, const BlockLocation& where, uint64_t block,
                         const std::string& what) {
  EXPECT_EQ(s.code(), code) << what << ": " << s.to_string();
  EXPECT_NE(s.message().find(where.file->path()), std::string::npos) << what << ": " << s.to_string();
  EXPECT_NE(s.message().find("block " + std::to_string(block)), std::string::npos) << what << ": " << s.to_string();
}

TEST(BlockCodec, TruncatedOrGarbledPayloadsAreCorruptErrorsNamingTheFileAndBlock) {
  const Space& sp = kSpaces[1];
  const HzSpace space(format::Bitmask::parse(sp.bitmask).value(), sp.bpb);
  const uint64_t b = 5;  // of the 8 blocks of this space
  for (const char* codec : {"raw", "zip", "lz4", "zfp-reversible-reversible"}) {
    const FieldCoding field = coding(kF32, codec, Layout::kHzOrder);
    const Bytes raw = random_samples(kF32, size_t{1} << sp.bpb, 4);
    Bytes payload;
    const uint32_t flags = encode_block(field, space, sp.ndim, b, raw, payload).value();
    // zfp streams carry no length: cuts must leave out the last 8-byte word to be detectable.
    for (size_t len :
         {size_t{1}, payload.size() / 2, payload.size() - (std::string(codec).starts_with("zfp") ? 8 : 1)}) {
      const BlockLocation where = store("cut.bin", std::span(payload).first(len), flags);
      Status s;
      load(where, field, space, sp.ndim, b, s);
      expect_error_naming(s, ErrorCode::kCorrupt, where, b, std::string(codec) + " cut to " + std::to_string(len));
    }
    if (std::string(codec) == "zip" || std::string(codec) == "lz4") {
      const Bytes garbled(payload.size(), std::byte{0xFF});
      const BlockLocation where = store("garbled.bin", garbled, flags);
      Status s;
      load(where, field, space, sp.ndim, b, s);
      expect_error_naming(s, ErrorCode::kCorrupt, where, b, std::string(codec) + " garbled");
    }
  }
  // A raw payload one byte longer than the block.
  Bytes longer = random_samples(kF32, (size_t{1} << sp.bpb) + 1, 5);
  longer.resize(longer.size() - 3);
  const BlockLocation where = store("long.bin", longer, 0);
  Status s;
  load(where, coding(kF32, "raw", Layout::kHzOrder), space, sp.ndim, b, s);
  expect_error_naming(s, ErrorCode::kCorrupt, where, b, "raw one byte too long");
}

TEST(BlockCodec, CodecCodesHzioCannotDecodeAreErrorsNamingTheFileAndBlock) {
  const Space& sp = kSpaces[0];
  const HzSpace space(format::Bitmask::parse(sp.bitmask).value(), sp.bpb);
  const Bytes raw = random_samples(kF32, size_t{1} << sp.bpb, 6);
  // docs/format.md "Codecs": 4 and 6 (jpg, png) are unsupported, any code not in the table corrupt.
  for (uint32_t code = 0; code <= kBlockFlagCodecMask; ++code) {
    if (code == 0 || code == 3 || code == 7 || code == 8) continue;
    for (uint32_t layout_bit : {0u, kBlockFlagRowMajor}) {
      const BlockLocation where = store("code.bin", raw, code | layout_bit);
      Status s;
      load(where, coding(kF32, "raw", Layout::kHzOrder), space, sp.ndim, 7, s);
      expect_error_naming(s, code == 4 || code == 6 ? ErrorCode::kUnsupported : ErrorCode::kCorrupt, where, 7,
                          "code " + std::to_string(code));
    }
  }
}

TEST(BlockCodec, APayloadPastTheEndOfItsFileIsCorruptNamingTheFileAndBlock) {
  const Space& sp = kSpaces[0];
  const HzSpace space(format::Bitmask::parse(sp.bitmask).value(), sp.bpb);
  const Bytes raw = random_samples(kF32, size_t{1} << sp.bpb, 7);
  for (const char* codec : {"raw", "zip"}) {
    const FieldCoding field = coding(kF32, codec, Layout::kHzOrder);
    Bytes payload;
    const uint32_t flags = encode_block(field, space, sp.ndim, 3, raw, payload).value();
    BlockLocation where = store("short.bin", std::span(payload).first(payload.size() / 2), flags);
    where.entry.size = static_cast<uint32_t>(payload.size());  // the header table claims the whole payload
    Status s;
    load(where, field, space, sp.ndim, 3, s);
    expect_error_naming(s, ErrorCode::kCorrupt, where, 3, codec);
  }
}

TEST(BlockCodec, APayloadThatDiffersFromItsChecksumsIsCorruptNamingFileFieldTimestepAndBlock) {
  const Space& sp = kSpaces[1];
  const HzSpace space(format::Bitmask::parse(sp.bitmask).value(), sp.bpb);
  const Bytes raw = random_samples(kF32, size_t{1} << sp.bpb, 8);
  for (const char* codec : {"raw", "zip"}) {
    for (int bits : {0, 2}) {
      const FieldCoding field = coding(kF32, codec, Layout::kHzOrder);
      Bytes payload;
      const uint32_t flags = encode_block(field, space, sp.ndim, 5, raw, payload).value();
      auto table = std::make_shared<stats::StatsTable>();
      table->sub_block_bits = bits;
      table->checksums.resize(stats::checksum_parts(bits));
      stats::payload_checksums(payload, bits, table->checksums.data());
      BlockLocation where = store("summed.bin", payload, flags);
      where.sidecar = table;
      where.time = 3;
      where.block = 5;
      Status s;
      const Bytes back = load(where, field, space, sp.ndim, 5, s);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_EQ(back, raw);
      // The last byte of the payload changed on disk: the chunk holding it no longer matches.
      Bytes changed = payload;
      changed.back() ^= std::byte{0x01};
      BlockLocation bad = store("changed.bin", changed, flags);
      bad.sidecar = table;
      bad.time = 3;
      bad.block = 5;
      load(bad, field, space, sp.ndim, 5, s);
      const std::string what = std::string(codec) + ", sub-block bits " + std::to_string(bits);
      expect_error_naming(s, ErrorCode::kCorrupt, bad, 5, what);
      EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << what;
      EXPECT_NE(s.message().find("field 'v', timestep 3"), std::string::npos) << what << ": " << s.to_string();
    }
  }
}

TEST(BlockCodec, StatisticsAsStoredBoundTheValuesAReadReturns) {
  const Space& sp = kSpaces[1];
  const HzSpace space(format::Bitmask::parse(sp.bitmask).value(), sp.bpb);
  const Box dataset_box{{0, 0, 0}, {13, 11, 9}};  // smaller than the 16^3 box: padding is left out
  const size_t n = size_t{1} << sp.bpb;
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = 20 * std::cos(0.3 * static_cast<double>(i % 8)) + i / 64.0;
  Bytes raw(n * 8);
  std::memcpy(raw.data(), values.data(), raw.size());
  for (const char* codec : {"zfp-0.5-0.5", "zfp-precision=6-precision=6", "zip"}) {
    const FieldCoding field = coding(kF64, codec, Layout::kHzOrder);
    for (uint64_t b : blocks_of(space)) {
      Bytes payload;
      auto flags = encode_block(field, space, sp.ndim, b, raw, payload);
      ASSERT_TRUE(flags.is_ok()) << flags.status().to_string();
      Status s;
      const Bytes out = load(store("stats.bin", payload, flags.value()), field, space, sp.ndim, b, s);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      // Brute force over the block's samples inside the dataset box (HZ order: sample i is address b*2^bpb+i).
      uint64_t count = 0;
      double lo = INFINITY, hi = -INFINITY;
      for (size_t i = 0; i < n; ++i) {
        const Point p = space.hz_to_point((b << sp.bpb) + i);
        if (!(Box{p, {p[0] + 1, p[1] + 1, p[2] + 1}}).intersect(dataset_box).sample_count()) continue;
        const double d = float_at(kF64, &out[i * 8]);
        ++count;
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
      const stats::BlockStats st = stats_as_stored(field, space, sp.ndim, b, raw, payload, dataset_box, 0);
      ASSERT_EQ(st.block.count, count) << codec << " block " << b;
      if (count == 0) continue;
      EXPECT_LE(st.block.min[0], lo) << codec << " block " << b;
      EXPECT_GE(st.block.max[0], hi) << codec << " block " << b;
    }
  }
}

}  // namespace
}  // namespace hzio::core
