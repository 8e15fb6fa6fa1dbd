// Tests for data file names, checked against OpenVisus's getFilename results.
#include "format/file_name.hpp"

#include <gtest/gtest.h>

namespace hzio::format {
namespace {

IdxFile idx_with(const std::string& tmpl, int64_t bpf, const std::string& time_tmpl) {
  IdxFile f;
  f.bitmask = Bitmask::parse("V" + std::string(40, '0')).value();
  f.ndim = 1;
  f.bits_per_block = 8;
  f.blocks_per_file = bpf;
  f.filename_template = tmpl;
  if (!time_tmpl.empty()) {
    f.time.declared = true;
    f.time.template_text = time_tmpl;
  }
  return f;
}

TEST(FileName, NamesFilesByTheirFirstBlockRightToLeft) {
  IdxFile f = idx_with("./big/%02x/%04x.bin", 2048, "");
  EXPECT_EQ(first_block_of_file(f, 1048575), 0xFF800);
  EXPECT_EQ(data_file_path(f, "/d", 0xFF800, 0).value(), "/d/big/0f/f800.bin");
}

TEST(FileName, PrependsExtraGroupsAndInsertsTheTimeTemplate) {
  IdxFile f = idx_with("./custom/%01x/%02x.bin", 16, "t%03d/");
  EXPECT_EQ(data_file_path(f, "/d", first_block_of_file(f, 0x1234), 2).value(), "/d/custom/t002/1/2/30.bin");
  EXPECT_EQ(data_file_path(f, "/d", first_block_of_file(f, 0xfffff), 2).value(), "/d/custom/t002/f/f/f/f0.bin");
  IdxFile g = idx_with("./u8_2d_time/%04x.bin", 8, "time_%02d/");
  EXPECT_EQ(data_file_path(g, "/d", first_block_of_file(g, 3), 1).value(), "/d/u8_2d_time/time_01/0000.bin");
}

TEST(FileName, MultiFileDatasetsUseFirstBlockNumbers) {
  IdxFile f = idx_with("./m/%04x.bin", 2, "");
  EXPECT_EQ(data_file_path(f, "/d", first_block_of_file(f, 5), 0).value(), "/d/m/0004.bin");
  EXPECT_EQ(slot_in_file(f, 5), 1);
}

TEST(FileName, RejectsMalformedTemplateFields) {
  EXPECT_EQ(data_file_path(idx_with("./m/%4x.bin", 2, ""), "/d", 0, 0).status().code(), ErrorCode::kFormat);
  EXPECT_EQ(format_time("t%s/", 1).status().code(), ErrorCode::kFormat);
  EXPECT_EQ(format_time("time%09d/", 12).value(), "time000000012/");
}

TEST(FileName, DataFileNamesRecogniseEveryFileOfADatasetAndItsCompanionsOnly) {
  IdxFile f = idx_with("./custom/%01x/%02x.bin", 16, "t%03d/");
  auto names = DataFileNames::of(f, "/d").value();
  EXPECT_EQ(names.root(), "/d/custom");
  for (int64_t block : {int64_t{0}, int64_t{0x1234}, int64_t{0xfffff}}) {
    for (int64_t time : {0, 7, 1234}) {
      const std::string path = data_file_path(f, "/d", first_block_of_file(f, block), time).value();
      EXPECT_TRUE(names.matches(path)) << path;
      EXPECT_TRUE(names.matches(path + ".hzstats")) << path;
      EXPECT_TRUE(names.matches(path + ".log.4242")) << path;
      EXPECT_TRUE(names.matches(path + ".hzstats.tmp.17")) << path;
      EXPECT_FALSE(names.matches(path + ".bak")) << path;
    }
  }
  EXPECT_FALSE(names.matches("/d/custom/notes.txt"));
  EXPECT_FALSE(names.matches("/d/custom/t002/1/2/3x.bin"));
  EXPECT_FALSE(names.matches("/d/other/t002/1/2/30.bin"));
  // Regex characters in a template are literal, and a template without fields names one file.
  IdxFile g = idx_with("./a+b (1)/data.bin", 1, "");
  auto one = DataFileNames::of(g, "/d").value();
  EXPECT_TRUE(one.matches("/d/a+b (1)/data.bin"));
  EXPECT_FALSE(one.matches("/d/aab (1)/data.bin"));
  EXPECT_EQ(one.root(), "/d/a+b (1)");
}

}  // namespace
}  // namespace hzio::format
