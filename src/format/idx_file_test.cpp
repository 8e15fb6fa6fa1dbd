// Tests for .idx parsing and writing, including OpenVisus- and PIDX-written texts.
#include "format/idx_file.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace hzio::format {
namespace {

const char* kOpenVisus2Fields = R"((version)
6
(box)
0 31 0 31 0 31
(fields)
a float32 default_compression(zip) default_layout(hzorder) default_value(0) min(0) max(0) 
+ b float32 default_compression(zip) default_layout(hzorder) default_value(0) min(0) max(0) 
(bits)
V012012012012012
(bitsperblock)
12
(blocksperfile)
8
(interleave block)
0
(filename_template)
./f32_3d_2fields_zip/%04x.bin
(missing_blocks)
0
(arco)
0
)";

const char* kPidx = R"((version)
6.1
(io mode)
idx
(box)
0 15 0 7 0 0 0 0 0 0
(physical box)
0 16.000000 0 8.000000 0 1.000000 0 0 0 0
(endian)
little
(fields)
data 1*uint8
(bits)
V0101010
(bitsperblock)
4
(blocksperfile)
2
(filename_template)
./name/%04x.bin
(time)
0 0 time%09d/)";

TEST(IdxFile, ParsesTheOpenVisusTwoFieldFile) {
  IdxFile f = IdxFile::parse(kOpenVisus2Fields, "/d/f32_3d_2fields_zip.idx").value();
  EXPECT_EQ(f.ndim, 3);
  EXPECT_EQ(f.box.hi, (Point{32, 32, 32}));
  ASSERT_EQ(f.fields.size(), 2u);
  EXPECT_EQ(f.fields[1].name, "b");
  EXPECT_EQ(f.fields[0].compression, "zip");
  EXPECT_EQ(f.fields[0].layout, Layout::kHzOrder);
  EXPECT_EQ(f.bits_per_block, 12);
  EXPECT_EQ(f.blocks_per_file, 8);
  EXPECT_EQ(f.total_blocks(), 8);
}

TEST(IdxFile, WritesWhatItReadsAndReadsWhatItWrites) {
  IdxFile f = IdxFile::parse(kOpenVisus2Fields, "x.idx").value();
  EXPECT_EQ(f.to_text(), kOpenVisus2Fields);
}

TEST(IdxFile, AcceptsPidxFilesAndKeepsTheirExtraKeys) {
  IdxFile f = IdxFile::parse(kPidx, "name.idx").value();
  EXPECT_EQ(f.version, 6);
  EXPECT_EQ(f.ndim, 2);
  EXPECT_EQ(f.box.hi, (Point{16, 8, 1}));
  EXPECT_EQ(f.fields[0].dtype, (DType{Scalar::kUint8, 1}));
  EXPECT_EQ(f.fields[0].layout, Layout::kRowMajor);  // no layout option: row-major for new blocks
  EXPECT_EQ(f.time.template_text, "time%09d/");
  EXPECT_EQ(f.time.list(), (std::vector<int64_t>{0}));
  ASSERT_NE(f.find_extra("io mode"), nullptr);
  EXPECT_EQ(*f.find_extra("endian"), "little");
  IdxFile again = IdxFile::parse(f.to_text(), "name.idx").value();
  EXPECT_EQ(*again.find_extra("physical box"), "0 16.000000 0 8.000000 0 1.000000 0 0 0 0");
}

TEST(IdxFile, FillsOpenVisusDefaultsForAMinimalFile) {
  IdxFile f = IdxFile::parse(
                  "(version)\n6\n(box)\n0 99 0 49 0 9\n(fields)\nfoo float64 + bar 3*uint8 compressed\n"
                  "(bits)\nV01201201201201010\n",
                  "/data/min.idx")
                  .value();
  EXPECT_EQ(f.bits_per_block, 16);
  EXPECT_EQ(f.filename_template, "./min/%04x.bin");
  EXPECT_EQ(f.fields[1].compression, "zip");
  EXPECT_EQ(f.fields[1].dtype.components, 3);
  EXPECT_EQ(f.blocks_per_file, 2);  // both blocks fit in 128 MiB
}

TEST(IdxFile, TextMustBeUtf8SoThatNamesAndPathsAre) {
  const auto with_field = [](const std::string& name) {
    return "(version)\n6\n(box)\n0 9 0 9\n(fields)\n" + name + " float32\n(bits)\nV01010101\n";
  };
  for (const char* good : {"temp\xC3\xA9rature", "\xE4\xB8\xAD", "\xF0\x9F\x8C\x8A"})  // é, a CJK sign, an emoji
    EXPECT_TRUE(IdxFile::parse(with_field(good), "/d/u.idx").is_ok()) << good;
  // Invalid: a stray byte, an overlong '/', a surrogate, a sequence cut short, beyond U+10FFFF.
  for (const char* bad : {"v\xFF", "v\xC0\xAF", "v\xED\xA0\x80", "v\xE4\xB8", "v\xF4\x90\x80\x80"}) {
    auto r = IdxFile::parse(with_field(bad), "/d/u.idx");
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kFormat);
    EXPECT_NE(r.status().message().find("not UTF-8"), std::string::npos) << r.status().to_string();
  }
}

TEST(IdxFile, ParsesEveryTimeForm) {
  auto t1 = IdxFile::parse(std::string(kPidx) + "\n(time)\n3 5 t_%02d/\n", "a.idx").value().time;
  EXPECT_EQ(t1.list(), (std::vector<int64_t>{3, 4, 5}));
  auto t2 = IdxFile::parse(std::string(kPidx) + "\n(time)\nt%d/ (0,4,2) (7)\n", "a.idx").value().time;
  EXPECT_EQ(t2.list(), (std::vector<int64_t>{0, 2, 4, 7}));
  auto t3 = IdxFile::parse(std::string(kPidx) + "\n(time)\n* * t%d/\n", "a.idx").value().time;
  EXPECT_TRUE(t3.any);
  EXPECT_TRUE(t3.contains(12345));
}

TEST(IdxFile, RejectsBrokenTextWithTheFileNameAndTheReason) {
  auto r = IdxFile::parse("(version)\n6\n(box)\n0 15 0 7\n(fields)\na float32\n", "/d/bad.idx");
  EXPECT_EQ(r.status().code(), ErrorCode::kFormat);
  EXPECT_NE(r.status().message().find("bad.idx"), std::string::npos);
  EXPECT_NE(r.status().message().find("(bits)"), std::string::npos);
  auto short_bits = IdxFile::parse("(version)\n6\n(box)\n0 15 0 7\n(fields)\na float32\n(bits)\nV01010\n", "s.idx");
  EXPECT_EQ(short_bits.status().code(), ErrorCode::kFormat);
  auto bad_dtype = IdxFile::parse("(version)\n6\n(box)\n0 15 0 7\n(fields)\na float33\n(bits)\nV0101010\n", "d.idx");
  EXPECT_NE(bad_dtype.status().message().find("float33"), std::string::npos);
  auto bad_box = IdxFile::parse("(version)\n6\n(box)\n0 15\n(fields)\na float32\n(bits)\nV0101010\n", "b.idx");
  EXPECT_EQ(bad_box.status().code(), ErrorCode::kFormat);
  EXPECT_EQ(IdxFile::parse("(version)\n7\n", "v.idx").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(IdxFile::parse("hello", "v.idx").status().code(), ErrorCode::kFormat);
}

TEST(IdxFile, RefusesToWriteBackWhatWouldNotReadTheSame) {
  const std::string head = "(version)\n6\n(box)\n0 15 0 7\n(bits)\nV0101010\n(fields)\n";
  // Parsed as two fields, a's min text "[" would swallow b when written back: refused for writing.
  auto lossy = IdxFile::parse(head + "a float32 min([) ] + b int16\n", "l.idx").value();
  ASSERT_EQ(lossy.fields.size(), 2u);
  const Status s = lossy.check_writes_back("l.idx");
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("(fields)"), std::string::npos) << s.to_string();
  // Balanced options and odd but faithful names are written back.
  EXPECT_TRUE(IdxFile::parse(head + "a) float32 description(x (y)) + b int16 min(-1) max(2.5)\n", "o.idx")
                  .value()
                  .check_writes_back("o.idx")
                  .is_ok());
  for (const char* name : {"o.idx", "o.IDX", "o"}) {
    EXPECT_TRUE(IdxFile::parse(head + "a float32\n", name).value().check_writes_back(name).is_ok()) << name;
  }
}

TEST(IdxFile, DefaultDataFolderIsTheNameWithoutItsExtension) {
  EXPECT_EQ(default_data_folder("/d/run.idx"), "run");
  EXPECT_EQ(default_data_folder("/d/run.IDX"), "run");
  EXPECT_EQ(default_data_folder("a.b.idx"), "a.b");
  EXPECT_EQ(default_data_folder("/d/run"), "run");
  EXPECT_EQ(default_data_folder("/d/.hidden"), ".hidden");
}

TEST(IdxFile, DefaultValuesMustFitTheirDtype) {
  EXPECT_TRUE(holds_value({Scalar::kUint8, 1}, 255, true));
  EXPECT_FALSE(holds_value({Scalar::kUint8, 1}, 256, false));
  EXPECT_FALSE(holds_value({Scalar::kUint8, 1}, -1, false));
  EXPECT_FALSE(holds_value({Scalar::kInt16, 1}, 1.5, true));
  EXPECT_TRUE(holds_value({Scalar::kInt16, 1}, 1.5, false));
  EXPECT_FALSE(holds_value({Scalar::kFloat32, 1}, 1e39, false));
  EXPECT_FALSE(holds_value({Scalar::kFloat64, 1}, std::numeric_limits<double>::infinity(), false));
  EXPECT_TRUE(holds_value({Scalar::kInt64, 1}, -9223372036854775808.0, true));
  EXPECT_FALSE(holds_value({Scalar::kInt64, 1}, 9223372036854775808.0, true));
  auto wide =
      IdxFile::parse("(version)\n6\n(box)\n0 3 0 3\n(fields)\na uint8 default_value(300)\n(bits)\nV0101\n", "w.idx");
  ASSERT_TRUE(wide.is_ok()) << wide.status().to_string();  // read-only opens take it (reads clamp it)
  const Status write = wide->check_writes_back("w.idx");
  EXPECT_EQ(write.code(), ErrorCode::kUnsupported);
  EXPECT_NE(write.message().find("default_value(300)"), std::string::npos) << write.to_string();
}

TEST(IdxFile, StatsGrainKeyReadsAsDocumentedAndWritesBack) {
  const std::string head =
      "(version)\n6\n(box)\n0 15 0 15\n(fields)\na float32\n(bits)\nV01010101\n(bitsperblock)\n6\n";
  EXPECT_FALSE(sub_block_bits_of(IdxFile::parse(head, "a.idx").value()).has_value());
  for (const auto& [value, bits] : std::vector<std::pair<std::string, int>>{
           {"v1 sub_block_bits=3", 3}, {"v2 sub_block_bits=99 more", 6}, {"v1 sub_block_bits=-2", 0}, {"v1", 0}}) {
    IdxFile f = IdxFile::parse(head + "(hzio stats)\n" + value + "\n", "a.idx").value();
    EXPECT_EQ(sub_block_bits_of(f), bits) << value;
  }
  IdxFile f = IdxFile::parse(head, "a.idx").value();
  set_sub_block_bits(f, 2);
  EXPECT_EQ(sub_block_bits_of(IdxFile::parse(f.to_text(), "a.idx").value()), 2);
}

}  // namespace
}  // namespace hzio::format

namespace hzio::format {
namespace {

// The OpenVisus two-field text with `from` replaced by `to` (each pair in turn), plus `more` at the end.
std::string edited(std::vector<std::pair<std::string, std::string>> changes, const std::string& more = "") {
  std::string text = kOpenVisus2Fields;
  for (const auto& [from, to] : changes) text.replace(text.find(from), from.size(), to);
  return text + more;
}

std::string with(const std::string& more) { return edited({}, more); }

TEST(IdxFile, ATemplateNamingOneFileMustHoldEveryBlock) {
  // 32^3 samples in blocks of 2^12: 8 blocks, which one file without a field holds only with bpf 8.
  auto one_file = [](const std::string& bpf) {
    return IdxFile::parse(
        edited({{"./f32_3d_2fields_zip/%04x.bin", "./one.bin"}, {"(blocksperfile)\n8", "(blocksperfile)\n" + bpf}}),
        "o.idx");
  };
  EXPECT_TRUE(one_file("8").is_ok());
  EXPECT_EQ(one_file("2").status().code(), ErrorCode::kFormat);
  EXPECT_NE(one_file("2").status().message().find("names one file"), std::string::npos);
}

TEST(IdxFile, DeclaredSizesStayWithinTheDocumentedLimits) {
  // Blocks: 2^bpb samples of the widest field, at most kMaxBlockBytes (1 GiB).
  const std::string long_mask = "V" + std::string(40, '0');
  const std::string box1d = "0 1099511627775 0 0 0 0";
  auto bpb = [&](int b) {
    return IdxFile::parse(edited({{"(bitsperblock)\n12", "(bitsperblock)\n" + std::to_string(b)},
                                  {"0 31 0 31 0 31", box1d},
                                  {"V012012012012012", long_mask}}),
                          "b.idx");
  };
  EXPECT_TRUE(bpb(28).is_ok()) << bpb(28).status().message();  // 2^28 float32 = 1 GiB
  EXPECT_EQ(bpb(29).status().code(), ErrorCode::kFormat);
  EXPECT_NE(bpb(29).status().message().find("bytes per block"), std::string::npos);
  // Timesteps: at most kMaxTimesteps listed, summed over the ranges; at most kMaxTimeRanges ranges.
  EXPECT_TRUE(IdxFile::parse(with("(time)\n0 1048575 t%d/\n"), "t.idx").is_ok());
  EXPECT_EQ(IdxFile::parse(with("(time)\n0 1048576 t%d/\n"), "t.idx").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(IdxFile::parse(with("(time)\n-9000000000000000000 9000000000000000000 t%d/\n"), "t.idx").status().code(),
            ErrorCode::kFormat);
  EXPECT_EQ(IdxFile::parse(with("(time)\nt%d/ (0,1048575,1) (2000000,2000000,1)\n"), "t.idx").status().code(),
            ErrorCode::kFormat);
  auto stepped = IdxFile::parse(with("(time)\nt%d/ (0,9223372036854775807,8796093022208)\n"), "t.idx");
  ASSERT_TRUE(stepped.is_ok()) << stepped.status().message();
  EXPECT_EQ(stepped->time.count(), 1048576);  // 2^63 / 2^43 steps: exactly at the limit
  EXPECT_EQ(stepped->time.list().size(), 1048576u);
  std::string ranges = "(time)\nt%d/";
  for (int i = 0; i <= 65536; ++i) ranges += " (" + std::to_string(i) + "," + std::to_string(i) + ",1)";
  EXPECT_EQ(IdxFile::parse(with(ranges + "\n"), "t.idx").status().code(), ErrorCode::kFormat);
  // Fields: at most kMaxFields.
  auto fields = [&](int n) {
    std::string f = "a float32";
    for (int i = 1; i < n; ++i) f += "\n+ f" + std::to_string(i) + " uint8";
    std::string text = kOpenVisus2Fields;
    const size_t at = text.find("(fields)\n") + 9, end = text.find("(bits)");
    return IdxFile::parse(text.replace(at, end - at, f + "\n"), "f.idx");
  };
  EXPECT_TRUE(fields(65536).is_ok());
  EXPECT_EQ(fields(65537).status().code(), ErrorCode::kFormat);
}

}  // namespace
}  // namespace hzio::format
