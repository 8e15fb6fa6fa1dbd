// Tests for the path rules of create and overwrite (dataset_path.hpp) and for a data folder that
// becomes a file under an open dataset.
#include "core/dataset_path.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "hzio/dataset.hpp"

namespace hzio::core {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("hzio_path_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

CreateOptions small() {
  CreateOptions o;
  o.dims = {16, 16};
  o.fields = {{"v", {Scalar::kFloat32, 1}}};
  o.bits_per_block = 4;
  return o;
}

TEST(DatasetPath, DataFolderIsTheNameWithoutExtensionOrTheNamePlusData) {
  EXPECT_EQ(data_folder_name("/d/run.idx").value(), "run");
  EXPECT_EQ(data_folder_name("/d/run.IDX").value(), "run");
  EXPECT_EQ(data_folder_name("/d/a.b.c").value(), "a.b");
  EXPECT_EQ(data_folder_name("/d/run").value(), "run.data");
  EXPECT_EQ(data_folder_name("/d/.hidden").value(), ".hidden.data");
  EXPECT_EQ(data_folder_name("/d/my data ü.idx").value(), "my data ü");
  for (const char* bad : {"/d/", "/d/..", "/d/...idx", "/d/p%d.idx", "/d/$(x).idx", "/d/a\nb.idx"}) {
    EXPECT_EQ(data_folder_name(bad).status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(DatasetPath, AWholeBlockWriteIntoABlockedDataFolderIsAnErrorNotACrash) {
  const std::string dir = fresh_dir("blocked");
  auto ds = Dataset::create(dir + "/b.idx", small()).value();
  std::ofstream(dir + "/b") << "in the way";
  std::vector<float> data(256, 1.0f);
  Status s = ds->write_box({{0, 0, 0}, {16, 16, 1}}, "v", 0, data.data(), data.size() * 4);
  if (s.is_ok()) s = ds->flush();
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_NE(s.message().find("in the way"), std::string::npos) << s.to_string();
  ds->abandon();  // nothing committed: the dataset this object created is removed again
  EXPECT_FALSE(fs::exists(dir + "/b.idx"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/b"));
  fs::remove_all(dir);
}

// The metadata create writes for small() at <dir>/o.idx with one block per file.
format::IdxFile metadata_of_o(const std::string& dir) {
  format::IdxFile f;
  f.filename_template = "./o/%04x.bin";
  f.bitmask = format::Bitmask::parse("V01010101").value();
  f.ndim = 2;
  f.box.hi = {16, 16, 1};
  f.fields = {{"v", {Scalar::kFloat32, 1}}};
  f.bits_per_block = 4;
  f.blocks_per_file = 1;
  EXPECT_TRUE(f.validate(dir + "/o.idx").is_ok());
  return f;
}

TEST(DatasetPath, OverwriteListsOnlyTheOldDatasetsFilesAndRefusesForeignDataFiles) {
  const std::string dir = fresh_dir("overwrite");
  CreateOptions o = small();
  o.blocks_per_file = 1;
  std::vector<float> data(256, 2.0f);
  {
    auto ds = Dataset::create(dir + "/o.idx", o).value();
    ASSERT_TRUE(ds->write_box({{0, 0, 0}, {16, 16, 1}}, "v", 0, data.data(), data.size() * 4).is_ok());
    ASSERT_TRUE(ds->close().is_ok());
  }
  std::ofstream(dir + "/o/readme.txt") << "mine";
  auto plan = plan_create(dir + "/o.idx", metadata_of_o(dir), true);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->remove.size(), 32u);  // 16 data files and their sidecars; not readme.txt
  for (const auto& f : plan->remove) EXPECT_EQ(f.find("readme"), std::string::npos) << f;
  EXPECT_EQ(plan->data_root, dir + "/o");
  EXPECT_EQ(plan_create(dir + "/o.idx", metadata_of_o(dir), false).status().code(), ErrorCode::kInvalidArgument);
  fs::rename(dir + "/o.idx", dir + "/other.idx");  // o/ is now the data folder of other.idx
  auto taken = plan_create(dir + "/o.idx", metadata_of_o(dir), true);
  EXPECT_EQ(taken.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(taken.status().message().find("of the dataset " + dir + "/other.idx"), std::string::npos)
      << taken.status().to_string();
  fs::remove(dir + "/other.idx");  // o/ now holds files of no dataset
  auto refused = plan_create(dir + "/o.idx", metadata_of_o(dir), true);
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("belongs to no dataset"), std::string::npos)
      << refused.status().to_string();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hzio::core
