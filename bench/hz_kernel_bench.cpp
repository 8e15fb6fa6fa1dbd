// Benchmark: HZ encode and decode throughput (samples/s on one core) of the block kernel over a 256^3
// box, float32 and float64, HZ and row-major blocks, against a plain memcpy of the same bytes.
// Prints one JSON object per case with medians over repetitions. Usage: hz_kernel_bench [edge] [reps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sys/mman.h>

#include "format/bitmask.hpp"
#include "hzorder/block_copy.hpp"
#include "hzorder/hz_space.hpp"

using namespace hzio;

namespace {

// Page-aligned, transparent-huge-page backed bytes (NumPy arrays of this size get huge pages too).
struct HugeBuffer {
  std::byte* ptr = nullptr;
  size_t n = 0;
  explicit HugeBuffer(size_t bytes) : n(bytes) {
    ptr = static_cast<std::byte*>(
        std::aligned_alloc(size_t{2} << 20, (bytes + (size_t{2} << 20) - 1) & ~((size_t{2} << 20) - 1)));
    madvise(ptr, n, MADV_HUGEPAGE);
    std::memset(ptr, 0, n);
  }
  ~HugeBuffer() { std::free(ptr); }
  std::byte* data() { return ptr; }
  size_t size() const { return n; }
  std::byte& operator[](size_t i) { return ptr[i]; }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_it(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t edge = argc > 1 ? std::atoll(argv[1]) : 256;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  const Point dims{edge, edge, edge};
  const format::Bitmask bits = format::Bitmask::default_for(dims, 3);
  const int bpb = 16;
  hzorder::HzSpace space(bits, bpb);
  const int64_t n = edge * edge * edge;
  std::vector<uint64_t> blocks;
  const Box all{{0, 0, 0}, dims};
  space.blocks_in_box(all, bpb, blocks);
  for (int h = bpb + 1; h <= space.max_level(); ++h) space.blocks_in_box(all, h, blocks);
  std::printf("[\n");
  bool first = true;
  for (size_t sb : {size_t{4}, size_t{8}}) {
    HugeBuffer src(static_cast<size_t>(n) * sb), dst(src.size()), copy(src.size());
    for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 131 + 7);
    std::vector<double> t_memcpy;
    for (int r = 0; r < reps; ++r)
      t_memcpy.push_back(time_it([&] { std::memcpy(copy.data(), src.data(), src.size()); }));
    for (Layout layout : {Layout::kHzOrder, Layout::kRowMajor}) {
      hzorder::ArrayView view{src.data(), {{0, 0, 0}, {1, 1, 1}, dims}, sb};
      hzorder::ArrayView out{copy.data(), {{0, 0, 0}, {1, 1, 1}, dims}, sb};
      const size_t block_bytes = (size_t{1} << bpb) * sb;
      std::vector<double> t_enc, t_dec;
      for (int r = 0; r < reps; ++r) {
        t_enc.push_back(time_it([&] {
          for (size_t i = 0; i < blocks.size(); ++i)
            for (const auto& run : space.block_runs(blocks[i], layout))
              hzorder::copy_run(run, all, dst.data() + i * block_bytes, view, hzorder::Direction::kArrayToBlock);
        }));
        t_dec.push_back(time_it([&] {
          for (size_t i = 0; i < blocks.size(); ++i)
            for (const auto& run : space.block_runs(blocks[i], layout))
              hzorder::copy_run(run, all, dst.data() + i * block_bytes, out, hzorder::Direction::kBlockToArray);
        }));
      }
      if (std::memcmp(copy.data(), src.data(), src.size()) != 0) {
        std::fprintf(stderr, "decode(encode(x)) != x\n");
        return 1;
      }
      const double enc = median(t_enc), dec = median(t_dec), mc = median(t_memcpy);
      std::printf(
          "%s  {\"case\": \"%s float%zu %lld^3\", \"encode_msamples_per_s\": %.1f, \"decode_msamples_per_s\": %.1f, "
          "\"memcpy_msamples_per_s\": %.1f, \"encode_vs_memcpy\": %.3f, \"decode_vs_memcpy\": %.3f, \"reps\": %d}",
          first ? "" : ",\n", layout == Layout::kHzOrder ? "hzorder" : "rowmajor", sb * 8, static_cast<long long>(edge),
          n / enc / 1e6, n / dec / 1e6, n / mc / 1e6, mc / enc, mc / dec, reps);
      first = false;
    }
  }
  std::printf("\n]\n");
  return 0;
}
