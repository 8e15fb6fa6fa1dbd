// Tests for bitmask parsing and the OpenVisus default guess.
#include "format/bitmask.hpp"

#include <gtest/gtest.h>

namespace hzio::format {
namespace {

TEST(Bitmask, DefaultGuessMatchesCurrentOpenVisus) {
  EXPECT_EQ(Bitmask::default_for({16, 8, 1}, 2).text(), "V0101010");
  EXPECT_EQ(Bitmask::default_for({32, 32, 32}, 3).text(), "V012012012012012");
  EXPECT_EQ(Bitmask::default_for({10, 6, 5}, 3).text(), "V0120120120");
  EXPECT_EQ(Bitmask::default_for({300, 200, 100}, 3).text(), "V012012012012012012012010");
}

TEST(Bitmask, DefaultGuessKeepsATrailingSingletonAxis) {
  Bitmask b = Bitmask::default_for({16, 8, 1}, 3);
  EXPECT_EQ(b.text(), "V01010102");
  EXPECT_EQ(b.pdim(), 3);
}

TEST(Bitmask, ParseReportsPowerOfTwoDimsAndLevels) {
  Bitmask b = Bitmask::parse("V0101010").value();
  EXPECT_EQ(b.max_level(), 7);
  EXPECT_EQ(b.pdim(), 2);
  EXPECT_EQ(b.pow2_dims(), (Point{16, 8, 1}));
}

TEST(Bitmask, ParseRejectsMalformedPatterns) {
  EXPECT_EQ(Bitmask::parse("").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(Bitmask::parse("V").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(Bitmask::parse("X01").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(Bitmask::parse("V01a").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(Bitmask::parse("V0123").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(Bitmask::parse("F0101").status().code(), ErrorCode::kUnsupported);
}

TEST(Bitmask, CoverageCheckRejectsATooShortBitmask) {
  Bitmask b = Bitmask::parse("V010101").value();  // 8x8
  EXPECT_TRUE(b.check_covers({8, 8, 1}).is_ok());
  Status s = b.check_covers({16, 8, 1});
  EXPECT_EQ(s.code(), ErrorCode::kFormat);
  EXPECT_NE(s.message().find("16x8x1"), std::string::npos);
}

}  // namespace
}  // namespace hzio::format
