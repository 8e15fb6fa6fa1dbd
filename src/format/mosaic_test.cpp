// Tests for the .midx mosaic text: what hzio writes parses back; OpenVisus's own form of a part's url is
// taken; malformed or foreign mosaics are refused with what is wrong.
#include "hzio/mosaic.hpp"

#include <gtest/gtest.h>

namespace hzio {
namespace {

Mosaic sample() {
  Mosaic m;
  m.ndim = 3;
  m.dims = {40, 33, 17};
  m.bitmask = "V012012012012012";
  m.bits_per_block = 8;
  m.partitions = 4;
  m.parts = {{0, "sim_p0.idx", {0, 0, 0}}, {1, "sim_p1.idx", {32, 0, 0}}, {3, "sim_p3.idx", {32, 32, 0}}};
  return m;
}

TEST(Mosaic, WhatHzioWritesParsesBack) {
  const Mosaic m = sample();
  const std::string text = m.to_text();
  EXPECT_NE(text.find("typename='IdxMultipleDataset' mosaic='true'"), std::string::npos);
  EXPECT_NE(text.find("url=\"file://$(CurrentFileDirectory)/sim_p1.idx\""), std::string::npos);
  EXPECT_NE(text.find("offset=\"32 0 0\""), std::string::npos);
  auto back = Mosaic::parse(text);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->ndim, 3);
  EXPECT_EQ(back->dims, m.dims);
  EXPECT_EQ(back->bitmask, m.bitmask);
  EXPECT_EQ(back->bits_per_block, 8);
  EXPECT_EQ(back->partitions, 4);
  ASSERT_EQ(back->parts.size(), 3u);
  EXPECT_EQ(back->parts[2].partition, 3);
  EXPECT_EQ(back->parts[2].file, "sim_p3.idx");
  EXPECT_EQ(back->parts[2].offset, (Point{32, 32, 0}));
}

TEST(Mosaic, RefusesMalformedAndForeignMosaics) {
  const std::string good = sample().to_text();
  const auto fails = [](const std::string& text, const std::string& why) {
    auto r = Mosaic::parse(text);
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kFormat);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  // A mosaic OpenVisus or PIDX wrote has none of hzio's attributes.
  fails("<dataset typename='IdxMultipleDataset' mosaic='true'>\n<dataset url=\"a.idx\" offset=\"0 0 0\"/>\n</dataset>",
        "hzio_ndim");
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  fails(replaced("hzio_dims='40 33 17'", "hzio_dims='40 33'"), "hzio_dims");
  fails(replaced("hzio_partitions='4'", "hzio_partitions='3'"), "out of range");
  fails(replaced("sim_p1.idx", "../etc/passwd"), "not a file next to the mosaic");
  fails(replaced("offset=\"32 0 0\"", "offset=\"32 x 0\""), "not an integer");
  fails(replaced("hzio_partition=\"3\"", "hzio_partition=\"1\""), "ascend");
  fails("", "no <dataset>");
  fails(replaced("\t<dataset url=\"file://$(CurrentFileDirectory)/sim_p0.idx\"",
                 "\t<dataset url=\"file://$(CurrentFileDirectory)/sim_p0.idx"),
        "url");
}

TEST(Mosaic, PathsOfTheMosaicAndItsParts) {
  EXPECT_EQ(mosaic_path("a/sim.idx"), "a/sim.midx");
  EXPECT_EQ(mosaic_path("a/sim.midx"), "a/sim.midx");
  EXPECT_EQ(mosaic_path("a.b/sim"), "a.b/sim.midx");
  EXPECT_EQ(mosaic_part_name("a/sim.midx", 3), "sim_p3.idx");
}

}  // namespace
}  // namespace hzio
