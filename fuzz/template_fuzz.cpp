// Fuzz target for the file and time templates (docs/format.md "File names", "Template expansion", "Time
// component"): the input is .idx text appended to a small fixed .idx, so its (filename_template), (time) and
// layout keys win. Of an accepted .idx, the paths of a few files and timesteps must be absolute, lexically
// normal, recognised as the dataset's own and distinct; the time template must render as printf would.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/file_name.hpp"
#include "format/idx_file.hpp"

namespace {

using hzio::format::IdxFile;

constexpr std::string_view kBase =
    "(version)\n6\n(box)\n0 15 0 7\n(fields)\nv uint8 + w float32[3]\n(bits)\nV0101010\n(bitsperblock)\n2\n"
    "(blocksperfile)\n2\n";

// The first blocks of the files that hold a few blocks at both ends, around the file boundaries and in the
// middle: few enough that one input runs in milliseconds whatever the block count.
std::vector<int64_t> first_blocks(const IdxFile& idx) {
  const int64_t total = idx.total_blocks(), bpf = idx.blocks_per_file;
  const int64_t step = std::max<int64_t>(1, idx.interleave);
  std::vector<int64_t> firsts;
  for (int64_t b : {int64_t{0}, int64_t{1}, int64_t{2}, bpf - 1, bpf, bpf + 1, total / 2 + 1, total - 2, total - 1,
                    step, step * std::min(bpf, total / step)}) {
    if (b < 0 || b >= total) continue;
    const int64_t first = hzio::format::first_block_of_file(idx, b);
    const int64_t slot = hzio::format::slot_in_file(idx, b);
    // docs/format.md "First block of a file": the file is named after a block it holds, at slot 0.
    if (slot < 0 || slot >= bpf || first < 0 || first > b || b - first != step * slot ||
        hzio::format::slot_in_file(idx, first) != 0 || hzio::format::first_block_of_file(idx, first) != first)
      std::abort();
    firsts.push_back(first);
  }
  std::sort(firsts.begin(), firsts.end());
  firsts.erase(std::unique(firsts.begin(), firsts.end()), firsts.end());
  return firsts;
}

// A few declared timesteps: the first, second and last of each of the first ranges, computed without
// overflow, and all of them from TimeSpec::list() when the ranges list few (it may list 2^20).
std::vector<int64_t> timesteps(const IdxFile& idx) {
  if (!idx.time.declared) return {0};
  if (idx.time.any) return {0, 1, -1, 12345, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  std::vector<int64_t> out;
  uint64_t listed = 0;
  for (size_t i = 0; i < idx.time.ranges.size(); ++i) {
    const auto [a, b, s] = idx.time.ranges[i];
    const uint64_t span = static_cast<uint64_t>(b) - static_cast<uint64_t>(a), step = static_cast<uint64_t>(s);
    listed += span / step >= 1000 ? 1000 : span / step + 1;  // span / step + 1 wraps for the widest range
    if (i >= 3) continue;
    out.push_back(a);
    if (span >= step) out.push_back(static_cast<int64_t>(static_cast<uint64_t>(a) + step));
    out.push_back(static_cast<int64_t>(static_cast<uint64_t>(a) + span / step * step));
  }
  if (listed <= 64) {
    const std::vector<int64_t> all = idx.time.list();
    if (!std::is_sorted(all.begin(), all.end()) || std::adjacent_find(all.begin(), all.end()) != all.end())
      std::abort();
    for (int64_t t : out) {
      if (!std::binary_search(all.begin(), all.end(), t)) std::abort();
    }
    out.insert(out.end(), all.begin(), all.end());
  }
  for (int64_t t : out) {
    if (!idx.time.contains(t)) std::abort();
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// format_time against printf: the template is text, one %[0][width]d or %i, text (validate() made sure).
void check_time_template(const std::string& tmpl, int64_t t) {
  auto rendered = hzio::format::format_time(tmpl, t);
  if (!rendered.is_ok()) std::abort();
  const size_t pct = tmpl.find('%'), conv = tmpl.find_first_of("di", pct);
  const bool zero = tmpl[pct + 1] == '0';
  const int width = std::atoi(tmpl.substr(pct + 1, conv - pct - 1).c_str());
  char body[64];
  std::snprintf(body, sizeof body, zero ? "%0*lld" : "%*lld", width, static_cast<long long>(t));
  if (rendered.value() != tmpl.substr(0, pct) + body + tmpl.substr(conv + 1)) std::abort();
}

// The checks of one folder holding the .idx: every path is absolute and lexically normal, lies in the names'
// root within their depth and matches them (with its sidecar); two paths are equal only where the templates
// have no component that tells them apart.
void check_paths(const IdxFile& idx, const std::string& dir, const std::vector<int64_t>& firsts,
                 const std::vector<int64_t>& times) {
  // Only the control characters that stand for the variable parts in its pattern may keep DataFileNames from
  // recognising a readable dataset's files.
  auto names = hzio::format::DataFileNames::of(idx, dir);
  const bool marker_chars =
      (idx.filename_template + idx.time.template_text).find_first_of("\x01\x02\x03") != std::string::npos;
  if (!names.is_ok() && (names.status().code() != hzio::ErrorCode::kFormat || !marker_chars)) std::abort();
  const bool block_part = idx.filename_template.find('%') != std::string::npos;
  const bool time_part = idx.time.declared && !idx.time.template_text.empty();
  std::map<std::string, std::pair<int64_t, int64_t>> seen;
  for (int64_t first : firsts) {
    for (int64_t t : times) {
      auto path = hzio::format::data_file_path(idx, dir, first, t);
      if (!path.is_ok()) {
        if (path.status().code() != hzio::ErrorCode::kFormat) std::abort();
        continue;
      }
      const std::string& p = path.value();
      if (p.empty() || p[0] != '/' || std::filesystem::path(p).lexically_normal().string() != p) std::abort();
      if (names.is_ok()) {
        if (!names->matches(p) || !names->matches(p + ".hzstats")) std::abort();
        // Listings of the root to the names' depth must hold the file, as overwrite and leftover searches need
        // (a name ending in '/', such as that of template "./", is a folder that no read can open anyway).
        const std::string& root = names->root();
        if (root != "/" && (p.compare(0, root.size(), root) != 0 || p.size() <= root.size() || p[root.size()] != '/'))
          std::abort();
        const std::string below = p.substr(root == "/" ? 1 : root.size() + 1);
        if (p.back() != '/' && std::count(below.begin(), below.end(), '/') > names->depth()) std::abort();
      }
      const auto [it, added] = seen.emplace(p, std::make_pair(first, t));
      if (!added && ((it->second.first != first && block_part) || (it->second.second != t && time_part))) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(kBase);
  text.append(reinterpret_cast<const char*>(data), size);
  auto parsed = IdxFile::parse(text, "/fuzz/data.idx");
  if (!parsed.is_ok()) return 0;
  const IdxFile& idx = parsed.value();
  const std::vector<int64_t> firsts = first_blocks(idx), times = timesteps(idx);
  if (idx.time.declared) {
    for (int64_t t : times) check_time_template(idx.time.template_text, t);
  }
  // The root folder too: "./x" there must not become "//x".
  for (const char* dir : {"/fuzz", "/", "/fuzz/run (1)+[x]"}) check_paths(idx, dir, firsts, times);
  return 0;
}
