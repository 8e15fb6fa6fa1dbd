// Tests for the block header table against the hex dump of an OpenVisus file.
#include "format/block_header.hpp"

#include <gtest/gtest.h>

namespace hzio::format {
namespace {

TEST(BlockHeader, DecodesTheOpenVisusMultifileExample) {
  std::vector<std::byte> bytes(152, std::byte{0});
  bytes[0x28 + 11] = std::byte{0x78};  // entry 0: offset 120
  bytes[0x28 + 19] = std::byte{0x10};  // size 16
  bytes[0x50 + 11] = std::byte{0x88};  // entry 1: offset 136
  bytes[0x50 + 19] = std::byte{0x10};
  auto e = parse_header_table(bytes, 1, 2, 152, "0000.bin").value();
  EXPECT_EQ(e[0], (BlockEntry{120, 16, 0}));
  EXPECT_EQ(e[1], (BlockEntry{136, 16, 0}));
}

TEST(BlockHeader, EncodesBothOffsetWordsLowFirst) {
  std::vector<BlockEntry> entries = {{(uint64_t{5} << 32) | 1000, 7, 0x13}, {}};
  std::vector<std::byte> out;
  serialize_header_table(entries, out);
  ASSERT_EQ(out.size(), 120u);
  EXPECT_EQ(out[40 + 11], std::byte{0xe8});
  EXPECT_EQ(out[40 + 15], std::byte{5});
  EXPECT_EQ(out[40 + 23], std::byte{0x13});
  auto back = parse_header_table(out, 1, 2, uint64_t{6} << 32, "f").value();
  EXPECT_EQ(back, entries);
}

TEST(BlockHeader, RejectsPayloadsPastTheEndOfTheFile) {
  std::vector<BlockEntry> entries = {{200, 100, 0}};
  std::vector<std::byte> out;
  serialize_header_table(entries, out);
  auto r = parse_header_table(out, 1, 1, 250, "data/0000.bin");
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status().message().find("data/0000.bin"), std::string::npos);
  EXPECT_EQ(parse_header_table(out, 1, 1, 300, "f").status().code(), ErrorCode::kOk);
  EXPECT_EQ(parse_header_table(std::span(out).first(60), 1, 1, 300, "f").status().code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace hzio::format
