// The small committed dataset the dataset fuzz targets start from: 16^3 samples, a raw float32 field
// "r" and a zip int16 field "z", 4 blocks of 1024 samples per field in 2 data files with sidecars
// (sub-block bits 2). Header-only, for fuzz/*_fuzz.cpp.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/data_files.hpp"
#include "hzio/dataset.hpp"

namespace fuzz_dataset {

constexpr int64_t kN = 16;
inline const char* const kFields[2] = {"r", "z"};

inline hzio::Box whole() { return hzio::Box{{0, 0, 0}, {kN, kN, kN}}; }

// Waits until the header read-ahead threads of the datasets just closed are done: they are detached, and
// libFuzzer's leak check after an input would count what a still running one holds as leaked.
inline void settle_read_ahead() {
  while (hzio::core::DataFiles::read_ahead_threads() > 0) usleep(100);
}

// Writes the dataset at `idx` (its folder must exist) and returns the arrays written; aborts on error.
inline void write(const std::string& idx, std::vector<float>& r, std::vector<int16_t>& z) {
  hzio::CreateOptions o;
  o.dims = {kN, kN, kN};
  o.fields = {{"r", hzio::DType::parse("float32").value(), "raw"}, {"z", hzio::DType::parse("int16").value(), "zip"}};
  o.bits_per_block = 10;
  o.blocks_per_file = 2;
  o.sub_block_bits = 2;
  r.resize(kN * kN * kN);
  z.resize(kN * kN * kN);
  for (size_t i = 0; i < r.size(); ++i) {
    r[i] = static_cast<float>(i % 977) * 0.5f - 100;
    z[i] = static_cast<int16_t>(i * 7919 % 60000 - 30000);
  }
  auto ds = hzio::Dataset::create(idx, o, {.durable = false, .threads = 1});
  if (!ds.is_ok()) std::abort();
  if (!(*ds)->write_box(whole(), "r", 0, r.data(), r.size() * 4).is_ok()) std::abort();
  if (!(*ds)->write_box(whole(), "z", 0, z.data(), z.size() * 2).is_ok()) std::abort();
  if (!(*ds)->close().is_ok()) std::abort();
}

// Reads field `field` whole (aborting if the read succeeds with other samples than `written` while
// `must_match`), at level 0, and a sub-box one level coarser than full resolution.
template <class T>
void read_field(hzio::Dataset& ds, int field, const std::vector<T>& written, bool must_match) {
  std::vector<T> back(written.size());
  const hzio::Status s = ds.read_box(whole(), -1, kFields[field], 0, back.data(), back.size() * sizeof(T));
  if (s.is_ok() && must_match && std::memcmp(back.data(), written.data(), back.size() * sizeof(T)) != 0)
    std::abort();  // a successful read returned data the input could not have changed
  std::vector<T> coarse(1);
  (void)ds.read_box(whole(), 0, kFields[field], 0, coarse.data(), sizeof(T));
  const hzio::Box part{{1, 2, 3}, {9, 16, 11}};
  std::vector<T> sub(8 * 14 * 8);
  (void)ds.read_box(part, ds.max_level() - 1, kFields[field], 0, sub.data(), sub.size() * sizeof(T));
}

}  // namespace fuzz_dataset
