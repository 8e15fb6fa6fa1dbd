// Runs a fuzz target without libFuzzer: every file of the given corpus folders as is, then a fixed
// number of deterministic mutations of each (bit flips, truncations, insertions, splices), so that
// ctest exercises every untrusted-input decoder on each run. Usage: replay <iterations> <corpus>...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> mutate(std::vector<uint8_t> v, std::mt19937_64& rng,
                            const std::vector<std::vector<uint8_t>>& all) {
  const int kind = static_cast<int>(rng() % 5);
  if (v.empty()) kind == 0 ? v.push_back(static_cast<uint8_t>(rng())) : (void)0;
  if (v.empty()) return v;
  const size_t at = rng() % v.size();
  switch (kind) {
    case 0:
      v[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1:
      v.resize(at);
      break;
    case 2:
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng()));
      break;
    case 3:
      v[at] = static_cast<uint8_t>("0123456789 +()\n%x*[]V-"[rng() % 22]);
      break;
    default: {
      const auto& other = all[rng() % all.size()];
      if (!other.empty())
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), other.begin(),
                 other.begin() + static_cast<std::ptrdiff_t>(rng() % other.size()));
    }
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <iterations> <corpus dir>...\n", argv[0]);
    return 2;
  }
  const long iterations = std::atol(argv[1]);
  std::vector<std::vector<uint8_t>> corpus;
  for (int i = 2; i < argc; ++i) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(argv[i])) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "no corpus files\n");
    return 2;
  }
  std::mt19937_64 rng(20261122);
  long runs = 0;
  // HZIO_FUZZ_LAST=path keeps the input being run, to reproduce a crash.
  const char* last = std::getenv("HZIO_FUZZ_LAST");
  auto keep = [&](const std::vector<uint8_t>& v) {
    if (!last) return;
    std::ofstream out(last, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
  };
  for (const auto& c : corpus) {
    keep(c);
    LLVMFuzzerTestOneInput(c.data(), c.size());
    ++runs;
    std::vector<uint8_t> v = c;
    for (long k = 0; k < iterations; ++k, ++runs) {
      v = (k % 8 == 0) ? c : mutate(std::move(v), rng, corpus);
      keep(v);
      LLVMFuzzerTestOneInput(v.data(), v.size());
    }
  }
  std::printf("%ld passed, 0 failed\n", runs);
  return 0;
}
