// Fuzz target for the commit's reading of existing data files and sidecars, on a real folder: one of
// the data files or sidecars of a small committed dataset (in /dev/shm, so in memory) is replaced by the
// input, the dataset is read once through the local file system's mappings, and a partial rewrite is
// committed, which reads the existing data file and sidecar. Nothing may crash, and a read that succeeds
// must return the written data wherever the input cannot have changed it. The rest of the read path
// (queries, listing, verification, progressive reads) is fuzzed in memory by dataset_read_fuzz.cpp.
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
#include <string>
#include <vector>

#include "hzio/dataset.hpp"
#include "small_dataset.hpp"

namespace {

namespace fs = std::filesystem;
using fuzz_dataset::kFields;
using fuzz_dataset::kN;
using fuzz_dataset::read_field;
using fuzz_dataset::whole;

struct Fixture {
  std::string dir, idx;
  std::vector<std::string> files;        // data files and sidecars, the inputs' targets
  std::vector<std::vector<char>> bytes;  // their committed bytes
  std::vector<float> r;                  // the written arrays
  std::vector<int16_t> z;
};

std::vector<char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spill(const std::string& path, const char* data, size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(data, static_cast<std::streamsize>(size));
}

Fixture make_fixture() {
  Fixture f;
  f.dir = (fs::exists("/dev/shm") ? std::string("/dev/shm") : fs::temp_directory_path().string()) +
          "/hzio_dataset_fuzz." + std::to_string(::getpid());
  fs::remove_all(f.dir);
  fs::create_directories(f.dir);
  static std::string made;  // removed when the process exits
  made = f.dir;
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(made, ignored);
  });
  f.idx = f.dir + "/d.idx";
  fuzz_dataset::write(f.idx, f.r, f.z);
  for (const auto& e : fs::recursive_directory_iterator(f.dir)) {
    if (e.is_regular_file() && e.path().string() != f.idx) f.files.push_back(e.path().string());
  }
  std::sort(f.files.begin(), f.files.end());
  if (f.files.size() != 4) std::abort();  // 2 data files and their sidecars
  for (const auto& p : f.files) f.bytes.push_back(slurp(p));
  if (const char* seeds = std::getenv("HZIO_FUZZ_WRITE_SEEDS")) {
    for (size_t i = 0; i < f.files.size(); ++i) {
      std::vector<char> seed(1, static_cast<char>(i));
      seed.insert(seed.end(), f.bytes[i].begin(), f.bytes[i].end());
      spill(std::string(seeds) + "/" + fs::path(f.files[i]).filename().string(), seed.data(), seed.size());
    }
  }
  return f;
}

// Puts every file back as committed and removes anything a commit left (logs, temporary files).
void restore(const Fixture& f) {
  for (const auto& e : fs::recursive_directory_iterator(f.dir)) {
    const std::string p = e.path().string();
    if (e.is_regular_file() && p != f.idx && std::find(f.files.begin(), f.files.end(), p) == f.files.end())
      fs::remove(p);
  }
  for (size_t i = 0; i < f.files.size(); ++i) spill(f.files[i], f.bytes[i].data(), f.bytes[i].size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Fixture f = make_fixture();
  if (size < 1 || size > (1u << 20)) return 0;
  const size_t target = data[0] % f.files.size();
  const bool verify = (data[0] & 0x80) == 0;
  spill(f.files[target], reinterpret_cast<const char*>(data + 1), size - 1);
  const bool sidecar = f.files[target].ends_with(".hzstats");
  // A field's samples are the written ones whenever the input left its bytes alone: it replaced a
  // sidecar, or it replaced a data file with a same-sized one and reads check checksums (a file of
  // another size makes its sidecar stale, and is then read unchecked: docs/format.md "Checksums").
  const bool same_size = size - 1 == f.bytes[target].size();
  const bool must_match = sidecar || (verify && same_size);
  {
    auto ds = hzio::Dataset::open(f.idx, {.threads = 1, .verify_checksums = verify});
    if (ds.is_ok()) {
      read_field(**ds, 0, f.r, must_match);
      read_field(**ds, 1, f.z, must_match);
    }
  }
  {
    // A partial rewrite merges with the stored blocks: the commit reads the existing files and sidecars.
    auto ds =
        hzio::Dataset::open(f.idx, {.writable = true, .durable = false, .threads = 1, .verify_checksums = verify});
    if (ds.is_ok()) {
      std::vector<float> box(3 * 5 * 7, 1.5f);
      if ((*ds)->write_box(hzio::Box{{2, 3, 4}, {9, 8, 7}}, "r", 0, box.data(), box.size() * 4).is_ok())
        (void)(*ds)->flush();
      (*ds)->abandon();
    }
  }
  fuzz_dataset::settle_read_ahead();  // before libFuzzer's leak check
  restore(f);
  return 0;
}
