// Fuzz target for the whole open-and-read path over a dataset folder held in memory, through the io
// seam (io::MemoryStorage): no file system call per input. One file of a small committed dataset (its
// .idx, a data file or a sidecar) is replaced by the input, then the dataset is opened, read at full
// and coarse resolution (with or without checksum checks), read progressively, queried, listed and
// verified block by block. Nothing may crash, and a read that succeeds must return the written data
// wherever the input cannot have changed it. The first input byte picks the file (low bits) and
// whether reads check checksums (bit 7 clear); the rest is the file's new content.
// HZIO_FUZZ_WRITE_SEEDS=DIR writes the seed inputs (each file as it is) to DIR.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/dataset_parts.hpp"
#include "hzio/dataset.hpp"
#include "small_dataset.hpp"
#include "io/storage.hpp"

namespace {

namespace fs = std::filesystem;
using fuzz_dataset::kFields;
using fuzz_dataset::kN;
using fuzz_dataset::read_field;
using fuzz_dataset::whole;

const std::string kRoot = "/hzio-fuzz-memory";  // where the dataset lies in memory, never on disk

struct Fixture {
  std::shared_ptr<hzio::io::MemoryStorage> storage;
  std::vector<std::string> files;             // the .idx first, then data files and sidecars
  std::vector<std::vector<std::byte>> bytes;  // their committed bytes
  std::vector<float> r;                       // the written arrays
  std::vector<int16_t> z;
};

std::vector<std::byte> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c{std::istreambuf_iterator<char>(in), {}};
  const auto* p = reinterpret_cast<const std::byte*>(c.data());
  return {p, p + c.size()};
}

// Writes the dataset on disk once (the writer works on the local file system), then holds it in memory.
Fixture make_fixture() {
  Fixture f;
  const std::string dir = fs::temp_directory_path().string() + "/hzio_dataset_read_fuzz." + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  fuzz_dataset::write(dir + "/d.idx", f.r, f.z);
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) found.push_back(fs::relative(e.path(), dir).string());
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(a != "d.idx", a) < std::make_pair(b != "d.idx", b);
  });
  if (found.size() != 5 || found[0] != "d.idx") std::abort();  // the .idx, 2 data files and their sidecars
  f.storage = std::make_shared<hzio::io::MemoryStorage>();
  for (const auto& name : found) {
    f.files.push_back(kRoot + "/" + name);
    f.bytes.push_back(slurp(dir + "/" + name));
    f.storage->put(f.files.back(), f.bytes.back());
  }
  if (const char* seeds = std::getenv("HZIO_FUZZ_WRITE_SEEDS")) {
    for (size_t i = 0; i < f.files.size(); ++i) {
      std::vector<char> seed(1, static_cast<char>(i));
      const auto* p = reinterpret_cast<const char*>(f.bytes[i].data());
      seed.insert(seed.end(), p, p + f.bytes[i].size());
      std::ofstream(std::string(seeds) + "/" + fs::path(f.files[i]).filename().string(), std::ios::binary)
          .write(seed.data(), static_cast<std::streamsize>(seed.size()));
    }
  }
  fs::remove_all(dir);
  return f;
}

void read_progressively(hzio::Dataset& ds) {
  auto p = hzio::ProgressiveRead::start(ds, whole(), "r", 0, {0, 4, ds.max_level()});
  if (!p.is_ok()) return;
  std::vector<float> out(kN * kN * kN);
  while (!(*p)->done()) {
    auto grid = (*p)->next_grid();
    if (!grid.is_ok() || static_cast<size_t>(grid->sample_count()) > out.size()) return;
    if (!(*p)->next(out.data(), static_cast<size_t>(grid->sample_count()) * 4).is_ok()) return;
  }
}

int restore(const Fixture& f, size_t target) {
  fuzz_dataset::settle_read_ahead();
  f.storage->put(f.files[target], f.bytes[target]);
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Fixture f = make_fixture();
  if (size < 1 || size > (1u << 20)) return 0;
  const size_t target = (data[0] & 0x7f) % f.files.size();
  const bool verify = (data[0] & 0x80) == 0;
  const auto* content = reinterpret_cast<const std::byte*>(data + 1);
  f.storage->put(f.files[target], std::vector<std::byte>(content, content + size - 1));
  const bool same =
      size - 1 == f.bytes[target].size() && std::equal(content, content + size - 1, f.bytes[target].begin());
  const bool sidecar = f.files[target].ends_with(".hzstats");
  const bool idx = target == 0;
  // A field's samples are the written ones whenever the input left its bytes alone: it is the file as
  // committed, it replaced a sidecar, or it replaced a data file with a same-sized one and reads check
  // checksums (a file of another size makes its sidecar stale, and is then read unchecked:
  // docs/format.md "Checksums"). A changed .idx may describe any other dataset.
  const bool must_match = same || (!idx && (sidecar || (verify && size - 1 == f.bytes[target].size())));
  {
    auto ds =
        hzio::core::DatasetParts::open_in(f.storage, kRoot + "/d.idx", {.threads = 1, .verify_checksums = verify});
    if (ds.is_ok() && (*ds)->dims() == hzio::Point{kN, kN, kN} && (*ds)->fields().size() == 2) {
      read_field(**ds, 0, f.r, must_match && (*ds)->fields()[0].dtype.bytes() == 4);
      read_field(**ds, 1, f.z, must_match && (*ds)->fields()[1].dtype.bytes() == 2);
      read_progressively(**ds);
      hzio::QueryResult q;
      (void)(*ds)->query(whole(), -1, "r", 0, 0, 50, 0, false, &q);
      // Listing costs a path per data file: only for layouts of this dataset's order of size (a changed
      // .idx may declare a longer bitmask, whose padding makes millions of files of 16^3 samples).
      if ((*ds)->block_count() > 4096) return restore(f, target);
      (void)(*ds)->file_census(0, 4);
      for (const char* field : kFields) {
        auto infos = (*ds)->block_infos(field, 0);
        for (int64_t b = 0; b < std::min<int64_t>((*ds)->block_count(), 64); ++b)
          (void)(*ds)->verify_block(field, 0, b);
      }
    }
  }
  return restore(f, target);
}
