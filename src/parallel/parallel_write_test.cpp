// MPI test: random decompositions written collectively must produce files byte-identical to a
// one-process write of the same global arrays. Run under mpiexec with any rank count.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "hzio/parallel.hpp"
#include "hzio/testing.hpp"
#include "io/posix_file.hpp"

namespace hzio {
namespace {

std::string g_dir;
int g_rank = 0, g_size = 1;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits [0, dims) into random non-overlapping boxes (recursive bisection at random planes).
void split(const Box& b, std::mt19937& rng, int depth, std::vector<Box>& out) {
  int axis = static_cast<int>(rng() % 3);
  if (depth == 0 || b.extent(axis) < 2) {
    out.push_back(b);
    return;
  }
  const int64_t cut = b.lo[axis] + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(b.extent(axis) - 1));
  Box l = b, r = b;
  l.hi[axis] = cut;
  r.lo[axis] = cut;
  split(l, rng, depth - 1, out);
  split(r, rng, depth - 1, out);
}

struct Case {
  Point dims;
  std::string codec;
  Layout layout;
  int bpb;
  int64_t bpf;
  size_t budget;
  AggregatorPlacement placement;
  int partitions = 1;
  int threads = 1;
};

template <class T>
std::vector<T> values(const Point& d, int comps, int salt) {
  std::vector<T> v(static_cast<size_t>(d[0] * d[1] * d[2] * comps));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>((i * 2654435761u + salt) % 997);
  return v;
}

template <class T>
std::vector<T> sub(const std::vector<T>& all, const Point& d, const Box& b, int comps) {
  std::vector<T> out;
  for (int64_t z = b.lo[2]; z < b.hi[2]; ++z)
    for (int64_t y = b.lo[1]; y < b.hi[1]; ++y)
      for (int64_t x = b.lo[0]; x < b.hi[0]; ++x)
        for (int c = 0; c < comps; ++c)
          out.push_back(all[static_cast<size_t>(((z * d[1] + y) * d[0] + x) * comps + c)]);
  return out;
}

void run_case(const Case& c, int index) {
  const std::string par = g_dir + "/par" + std::to_string(index) + ".idx";
  const std::string ser = g_dir + "/ser" + std::to_string(index) + ".idx";
  CreateOptions o;
  o.dims = {c.dims[0], c.dims[1], c.dims[2]};
  o.fields = {{"temp", {Scalar::kFloat32, 1}, c.codec, c.layout, 0}, {"vel", {Scalar::kInt16, 3}, "raw", c.layout, 5}};
  o.bits_per_block = c.bpb;
  o.blocks_per_file = c.bpf;
  o.times = {0, 1};
  o.overwrite = true;
  ParallelOptions po;
  po.aggregator_bytes = c.budget;
  po.placement = c.placement;
  po.partitions = c.partitions;
  po.threads = c.threads;
  std::mt19937 rng(1234 + index % 100);  // same on every rank
  std::vector<Box> boxes;
  split({{0, 0, 0}, c.dims}, rng, 4, boxes);
  std::vector<int> owner;
  for (size_t i = 0; i < boxes.size(); ++i)
    owner.push_back(static_cast<int>(rng() % static_cast<unsigned>(g_size + 1)) % g_size);
  auto temp = values<float>(c.dims, 1, index), temp1 = values<float>(c.dims, 1, index + 7);
  auto vel = values<int16_t>(c.dims, 3, index);
  {
    auto ds = ParallelDataset::create(MPI_COMM_WORLD, par, o, po);
    ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
    for (size_t i = 0; i < boxes.size(); ++i) {
      if (owner[i] != g_rank) continue;
      auto t = sub(temp, c.dims, boxes[i], 1), t1 = sub(temp1, c.dims, boxes[i], 1);
      auto v = sub(vel, c.dims, boxes[i], 3);
      ASSERT_TRUE(ds.value()->write_box(boxes[i], "temp", 0, t.data(), t.size() * 4).is_ok());
      ASSERT_TRUE(ds.value()->write_box(boxes[i], "temp", 1, t1.data(), t1.size() * 4).is_ok());
      if (i % 3 != 1) {
        ASSERT_TRUE(ds.value()->write_box(boxes[i], "vel", 0, v.data(), v.size() * 2).is_ok());
      }
    }
    auto report = ds.value()->flush();
    ASSERT_TRUE(report.is_ok()) << report.status().to_string();
    EXPECT_EQ(report->ranks, g_size);
    EXPECT_EQ(report->partitions, c.partitions);
    if (g_rank == 0 && getenv("HZIO_TEST_VERBOSE")) printf("%s\n", report->to_json().c_str());
    if (c.partitions > 1) {
      int ranks = 0;
      std::vector<int> seen;
      for (const auto& g : report->groups) {
        ranks += g.ranks;
        seen.insert(seen.end(), g.partitions.begin(), g.partitions.end());
      }
      EXPECT_EQ(ranks, g_size);
      std::sort(seen.begin(), seen.end());
      EXPECT_TRUE(std::adjacent_find(seen.begin(), seen.end()) == seen.end()) << "a partition in two groups";
      EXPECT_GT(report->merge.files, 0);
      EXPECT_GE(report->merge.mergers, 1);
    }
    ASSERT_TRUE(ds.value()->close().is_ok());
  }
  if (g_rank == 0) {
    auto ds = Dataset::create(ser, o).value();
    for (size_t i = 0; i < boxes.size(); ++i) {
      auto t = sub(temp, c.dims, boxes[i], 1), t1 = sub(temp1, c.dims, boxes[i], 1);
      auto v = sub(vel, c.dims, boxes[i], 3);
      ASSERT_TRUE(ds->write_box(boxes[i], "temp", 0, t.data(), t.size() * 4).is_ok());
      ASSERT_TRUE(ds->write_box(boxes[i], "temp", 1, t1.data(), t1.size() * 4).is_ok());
      if (i % 3 != 1) {
        ASSERT_TRUE(ds->write_box(boxes[i], "vel", 0, v.data(), v.size() * 2).is_ok());
      }
    }
    ASSERT_TRUE(ds->close().is_ok());
    namespace fs = std::filesystem;
    const fs::path pd = g_dir + "/par" + std::to_string(index), sd = g_dir + "/ser" + std::to_string(index);
    int files = 0;
    for (const auto& e : fs::recursive_directory_iterator(sd)) {
      if (!e.is_regular_file()) continue;
      const fs::path rel = fs::relative(e.path(), sd);
      ASSERT_TRUE(fs::exists(pd / rel)) << rel;
      EXPECT_TRUE(slurp(e.path()) == slurp(pd / rel)) << "data file differs: " << rel;
      ++files;
    }
    int par_files = 0;
    for (const auto& e : fs::recursive_directory_iterator(pd)) par_files += e.is_regular_file();
    EXPECT_EQ(files, par_files);
    EXPECT_GT(files, 0);
    std::string a = slurp(par), b = slurp(ser);
    a.replace(a.find("./par"), 5, "./ser");  // the data folders are named after each dataset
    EXPECT_EQ(a, b);
    auto back = Dataset::open(par).value();
    std::vector<float> out(temp.size());
    ASSERT_TRUE(back->read_box({{0, 0, 0}, c.dims}, -1, "temp", 1, out.data(), out.size() * 4).is_ok());
    if (c.codec.rfind("zfp", 0) != 0) {  // zfp at a precision is lossy
      EXPECT_EQ(out, temp1);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(ParallelWrite, ByteIdenticalToOneProcessForRandomDecompositions) {
  const Case cases[] = {
      {{37, 21, 13}, "raw", Layout::kHzOrder, 6, 4, size_t{256} << 20, AggregatorPlacement::kLocalized},
      {{32, 32, 32}, "zip", Layout::kHzOrder, 8, 2, size_t{4} << 10, AggregatorPlacement::kLocalized},
      {{30, 17, 9}, "lz4", Layout::kRowMajor, 5, 8, size_t{2} << 10, AggregatorPlacement::kUniform},
      {{64, 8, 3}, "zip", Layout::kRowMajor, 7, 1, size_t{1} << 20, AggregatorPlacement::kUniform},
  };
  for (size_t i = 0; i < std::size(cases); ++i) run_case(cases[i], static_cast<int>(i));
}

// With several threads per rank (as on I/O ranks), each rank makes its records in batches on its pool,
// whole blocks and pieces alike: the files stay byte-identical to one process's.
TEST(ParallelWrite, ByteIdenticalToOneProcessWithThreadsPerRank) {
  const Case cases[] = {
      {{37, 21, 13}, "raw", Layout::kHzOrder, 6, 4, size_t{256} << 20, AggregatorPlacement::kLocalized},
      {{30, 17, 9}, "lz4", Layout::kRowMajor, 4, 8, size_t{64} << 10, AggregatorPlacement::kUniform},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    Case c = cases[i];
    c.threads = 2;
    run_case(c, 50 + static_cast<int>(i));
  }
}

// Partitions in global index space: boxes straddle the partition planes, some partitions get no rank
// that prefers them, shared files are merged; the files stay byte-identical to one process's.
TEST(ParallelWrite, PartitionedWritesAreByteIdenticalToOneProcess) {
  const Case cases[] = {
      {{37, 21, 13}, "raw", Layout::kHzOrder, 6, 4, size_t{256} << 20, AggregatorPlacement::kLocalized},
      {{32, 32, 32}, "zip", Layout::kHzOrder, 8, 2, size_t{4} << 10, AggregatorPlacement::kLocalized},
      {{30, 17, 9}, "lz4", Layout::kRowMajor, 5, 8, size_t{2} << 10, AggregatorPlacement::kUniform},
      {{64, 8, 3}, "zip", Layout::kRowMajor, 7, 1, size_t{1} << 20, AggregatorPlacement::kUniform},
      {{32, 32, 32},
       "zfp-precision=20-precision=20",
       Layout::kHzOrder,
       6,
       8,
       size_t{256} << 20,
       AggregatorPlacement::kLocalized},
  };
  for (int partitions : {2, 4, 8}) {
    for (size_t i = 0; i < std::size(cases); ++i) {
      Case c = cases[i];
      c.partitions = partitions;
      run_case(c, 100 * partitions + static_cast<int>(i));
    }
  }
}

// Partitions in local index space: one dataset per partition holds exactly the samples of its partition
// box, in its own coordinates, and the mosaic can be reopened to write a second timestep.
TEST(ParallelWrite, LocalIndexSpaceWritesOneDatasetPerPartition) {
  const Point dims{37, 21, 13};
  const std::string path = g_dir + "/local.idx";
  CreateOptions o;
  o.dims = {dims[0], dims[1], dims[2]};
  o.fields = {{"temp", {Scalar::kFloat32, 1}, "zip", Layout::kHzOrder, 0}};
  o.bits_per_block = 6;
  o.blocks_per_file = 4;
  o.times = {0, 1};
  o.overwrite = true;
  for (int partitions : {2, 4, 8}) {
    ParallelOptions po;
    po.partitions = partitions;
    po.index_space = IndexSpace::kLocal;
    std::mt19937 rng(77 + partitions);
    std::vector<Box> boxes;
    split({{0, 0, 0}, dims}, rng, 4, boxes);
    std::vector<int> owner;
    for (size_t i = 0; i < boxes.size(); ++i) owner.push_back(static_cast<int>(rng() % static_cast<unsigned>(g_size)));
    const auto t0 = values<float>(dims, 1, partitions), t1 = values<float>(dims, 1, partitions + 50);
    {
      auto ds = ParallelDataset::create(MPI_COMM_WORLD, path, o, po);
      ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
      for (size_t i = 0; i < boxes.size(); ++i) {
        if (owner[i] != g_rank) continue;
        auto t = sub(t0, dims, boxes[i], 1);
        ASSERT_TRUE(ds.value()->write_box(boxes[i], "temp", 0, t.data(), t.size() * 4).is_ok());
      }
      auto report = ds.value()->flush();
      ASSERT_TRUE(report.is_ok()) << report.status().to_string();
      EXPECT_EQ(report->index_space, "local");
      EXPECT_EQ(report->partitions, partitions);
      EXPECT_GT(report->files, 0);
      std::vector<float> none(1);
      EXPECT_EQ(ds.value()->read_box({{0, 0, 0}, {1, 1, 1}}, -1, "temp", 0, none.data(), 4).code(),
                ErrorCode::kUnsupported);
      ASSERT_TRUE(ds.value()->close().is_ok());
    }
    {
      auto ds = ParallelDataset::open(MPI_COMM_WORLD, g_dir + "/local.midx", {}, true);
      ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
      const Box mine{{0, 0, dims[2] * g_rank / g_size}, {dims[0], dims[1], dims[2] * (g_rank + 1) / g_size}};
      auto t = sub(t1, dims, mine, 1);
      if (!mine.empty()) {
        ASSERT_TRUE(ds.value()->write_box(mine, "temp", 1, t.data(), t.size() * 4).is_ok());
      }
      ASSERT_TRUE(ds.value()->close().is_ok());
    }
    if (g_rank == 0) {
      const std::string midx = slurp(g_dir + "/local.midx");
      int parts = 0;
      for (size_t at = midx.find("hzio_partition=\""); at != std::string::npos;
           at = midx.find("hzio_partition=\"", at + 1)) {
        const int p = std::stoi(midx.substr(at + 16));
        const size_t off = midx.rfind("offset=\"", at);
        std::istringstream in(midx.substr(off + 8));
        Point lo{0, 0, 0};
        in >> lo[0] >> lo[1] >> lo[2];
        auto part = Dataset::open(g_dir + "/local_p" + std::to_string(p) + ".idx");
        ASSERT_TRUE(part.is_ok()) << part.status().to_string();
        const Point pd{part.value()->dims()[0], part.value()->dims()[1], part.value()->dims()[2]};
        const Box global{lo, {lo[0] + pd[0], lo[1] + pd[1], lo[2] + pd[2]}};
        for (int time : {0, 1}) {
          std::vector<float> got(static_cast<size_t>(global.sample_count()));
          ASSERT_TRUE(part.value()->read_box({{0, 0, 0}, pd}, -1, "temp", time, got.data(), got.size() * 4).is_ok());
          EXPECT_EQ(got, sub(time == 0 ? t0 : t1, dims, global, 1)) << "partition " << p << " time " << time;
        }
        ++parts;
      }
      EXPECT_EQ(parts, partitions);  // every partition of 37 x 21 x 13 holds samples
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // An .idx at the path would hide a new mosaic from readers: the create refuses, on every rank.
  {
    ParallelOptions global;
    auto plain = ParallelDataset::create(MPI_COMM_WORLD, g_dir + "/hidden.idx", o, global);
    ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
    ASSERT_TRUE(plain.value()->close().is_ok());
    ParallelOptions local;
    local.partitions = 2;
    local.index_space = IndexSpace::kLocal;
    auto mosaic = ParallelDataset::create(MPI_COMM_WORLD, g_dir + "/hidden.idx", o, local);
    ASSERT_FALSE(mosaic.is_ok());
    EXPECT_EQ(mosaic.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(mosaic.status().message().find("would hide the mosaic"), std::string::npos)
        << mosaic.status().to_string();
  }
}

// A dataset of one float32 field "a" in HZ order, replacing any older one.
CreateOptions float_field(const Point& dims, const std::string& codec, int bpb, int64_t bpf) {
  CreateOptions o;
  o.dims = {dims[0], dims[1], dims[2]};
  o.fields = {{"a", {Scalar::kFloat32, 1}, codec, Layout::kHzOrder, 0}};
  o.bits_per_block = bpb;
  o.blocks_per_file = bpf;
  o.overwrite = true;
  return o;
}

// One aggregator's disk fills up in the middle of a flush: every rank gets the error (no rank hangs in
// a later round, the merge or another group's steps), and the dataset keeps its last commit.
void full_disk_case(int partitions) {
  const std::string path = g_dir + "/full" + std::to_string(partitions) + ".idx";
  const Point dims{32, 32, 64};
  CreateOptions o = float_field(dims, "raw", 6, 4);  // 1024 blocks in 256 files: every rank aggregates some
  o.times = {0, 1};
  ParallelOptions p;
  p.aggregator_bytes = 1024;  // many rounds
  p.partitions = partitions;
  auto ds = ParallelDataset::create(MPI_COMM_WORLD, path, o, p).value();
  const int64_t z0 = dims[2] * g_rank / g_size, z1 = dims[2] * (g_rank + 1) / g_size;
  const Box mine{{0, 0, z0}, {dims[0], dims[1], z1}};
  const auto all = values<float>(dims, 1, 5);
  const auto slab = sub(all, dims, mine, 1);
  ASSERT_TRUE(ds->write_box(mine, "a", 0, slab.data(), slab.size() * 4).is_ok());
  ASSERT_TRUE(ds->flush().is_ok());
  ASSERT_TRUE(ds->write_box(mine, "a", 1, slab.data(), slab.size() * 4).is_ok());
  if (g_rank == g_size - 1) {
    ASSERT_TRUE(testing::inject_fault(ds->dataset(), "write", "", 28, 2000).is_ok());
  }
  auto r = ds->flush();
  testing::clear_fault(ds->dataset());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("disk full"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("rank " + std::to_string(g_size - 1)), std::string::npos)
      << r.status().to_string();
  ASSERT_TRUE(ds->close().is_ok());
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    auto back = Dataset::open(path).value();
    std::vector<float> got(all.size());
    ASSERT_TRUE(back->read_box({{0, 0, 0}, dims}, -1, "a", 0, got.data(), got.size() * 4).is_ok());
    EXPECT_EQ(got, all);
    // Timestep 1 was declared at creation but never committed: it reads as the default value.
    ASSERT_TRUE(back->read_box({{0, 0, 0}, dims}, -1, "a", 1, got.data(), got.size() * 4).is_ok());
    EXPECT_EQ(got, std::vector<float>(all.size(), 0.0f));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(ParallelWrite, AFullDiskOnOneRankFailsTheFlushEverywhereAndKeepsTheLastCommit) {
  for (int partitions : {1, 2, 4}) full_disk_case(partitions);
}

TEST(ParallelRead, IndependentAndTwoPhaseReadsEqualOneProcessReads) {
  const std::string path = g_dir + "/read.idx";
  const Point dims{40, 24, 18};
  const CreateOptions o = float_field(dims, "zip", 7, 4);
  auto all = values<float>(dims, 1, 3);
  if (g_rank == 0) {
    auto ds = Dataset::create(path, o).value();
    ASSERT_TRUE(ds->write_box({{0, 0, 0}, dims}, "a", 0, all.data(), all.size() * 4).is_ok());
    ASSERT_TRUE(ds->close().is_ok());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  auto par = ParallelDataset::open(MPI_COMM_WORLD, path, {}, false).value();
  auto serial = Dataset::open(path).value();
  std::mt19937 rng(77 + g_rank);  // every rank asks for its own boxes
  for (int trial = 0; trial < 6; ++trial) {
    for (ReadMethod method : {ReadMethod::kIndependent, ReadMethod::kTwoPhase, ReadMethod::kAuto}) {
      Box box;
      for (int a = 0; a < 3; ++a) {
        box.lo[a] = static_cast<int64_t>(rng() % static_cast<uint64_t>(dims[a]));
        box.hi[a] = box.lo[a] + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(dims[a] - box.lo[a]));
      }
      if (trial == 5 && g_rank == 1) box = Box{{0, 0, 0}, {0, 0, 0}};  // a rank that asks for nothing
      const int level = static_cast<int>(rng() % static_cast<uint64_t>(serial->max_level() + 1));
      std::vector<float> got, want;
      if (!box.empty()) {
        const SampleGrid g = serial->level_grid(box, level).value();
        got.assign(static_cast<size_t>(g.sample_count()), -1);
        want.assign(got.size(), -2);
        ASSERT_TRUE(serial->read_box(box, level, "a", 0, want.data(), want.size() * 4).is_ok());
      }
      ReadReport r;
      Status s = par->read_box(box, level, "a", 0, got.data(), got.size() * 4, &r, method);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_EQ(got, want) << "rank " << g_rank << " method " << r.method << " trial " << trial;
      if (method == ReadMethod::kTwoPhase) {
        EXPECT_EQ(r.method, "two-phase");
      }
      if (method == ReadMethod::kIndependent) {
        EXPECT_EQ(r.method, "independent");
      }
    }
  }
  ASSERT_TRUE(par->close().is_ok());
}

}  // namespace
}  // namespace hzio

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &hzio::g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &hzio::g_size);
  ::testing::InitGoogleTest(&argc, argv);
  hzio::g_dir = argc > 1 ? argv[1] : "parallel_write_test_data";
  if (hzio::g_rank == 0) std::filesystem::create_directories(hzio::g_dir);
  MPI_Barrier(MPI_COMM_WORLD);
  if (hzio::g_rank != 0) ::testing::GTEST_FLAG(output) = "";
  const int rc = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
