// Fuzz target for statistics sidecars and their checksums (docs/format.md "Statistics sidecar", "Checksums").
// Input: 4 bytes that pick the dataset's layout (fields, components, blocks per file), a flag that re-seals
// the sidecar's own checksum and the sub-block bits of the payload check, then the sidecar bytes; the seeds
// come from scripts/fuzz/sidecar_seeds.py. What is accepted must have the spec's sizes and write back.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "stats/stats_file.hpp"

namespace {

using hzio::stats::StatsTable;

struct Layout {
  std::vector<int> components;
  int64_t blocks_per_file = 1;
  bool reseal = false;   // so that mutated version 2 bytes pass the sidecar's own checksum and reach the entries
  int payload_bits = 0;  // sub-block bits of the payload_checksums check
};

// Small on purpose: up to 4 fields of 1 to 4 components and 16 blocks per file keep the sidecars short enough
// that mutations reach every record.
Layout layout_of(const uint8_t* p) {
  Layout l;
  for (int f = 0; f <= (p[0] & 3); ++f) l.components.push_back(1 + ((p[1] >> (2 * f)) & 3));
  l.blocks_per_file = 1 + ((p[0] >> 2) & 15);
  l.reseal = p[2] & 1;
  l.payload_bits = p[3] % 11;
  return l;
}

// The size docs/format.md "Bytes" gives for a sidecar of `version`, computed apart from the parser.
size_t expected_bytes(uint32_t version, const Layout& l, int bits) {
  const size_t fields = l.components.size(), parts = bits > 0 ? size_t{1} << bits : 0;
  size_t n = 48 + 8 * ((fields + 1) / 2) + (version == 2 ? 8 : 0);
  for (int c : l.components) {
    const size_t record = 8 + 16 * static_cast<size_t>(c), sums = version == 2 ? size_t{1} << bits : 0;
    n += static_cast<size_t>(l.blocks_per_file) * (8 * sums + (1 + parts) * record);
  }
  return n;
}

uint64_t bits_of(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

// Min and max are stored only for known, non-zero counts: the writer puts 0 (+0.0) elsewhere.
bool same_range(const hzio::stats::RangeStats& read, const hzio::stats::RangeStats& again) {
  if (read.count != again.count || read.min.size() != again.min.size() || read.max.size() != again.max.size())
    return false;
  const bool kept = read.count != 0 && read.count != hzio::stats::kUnknown;
  for (size_t c = 0; c < read.min.size(); ++c) {
    if (bits_of(again.min[c]) != (kept ? bits_of(read.min[c]) : 0)) return false;
    if (bits_of(again.max[c]) != (kept ? bits_of(read.max[c]) : 0)) return false;
  }
  return true;
}

// Whether the writer stores `r` as it is: min and max are zero bits unless its count is known and non-zero.
bool written_as_read(const hzio::stats::RangeStats& r) { return same_range(r, r); }

// Whether serializing `t` drops nothing of `bytes`: the reserved word, the field padding, and min / max of
// ranges without a known count are all zero bits.
bool lossless(const StatsTable& t, std::span<const std::byte> bytes) {
  auto zero_word = [&](size_t at) { return std::memcmp(bytes.data() + at, "\0\0\0\0", 4) == 0; };
  if (!zero_word(44) || (t.components.size() % 2 && !zero_word(48 + 4 * t.components.size()))) return false;
  for (const auto& e : t.entries) {
    if (!written_as_read(e.block)) return false;
    for (const auto& p : e.parts) {
      if (!written_as_read(p)) return false;
    }
  }
  return true;
}

void check_payload_checksums(std::span<const std::byte> payload, int bits) {
  const uint64_t parts = uint64_t{1} << bits, size = payload.size();
  const uint64_t part_bytes = size / parts + (size % parts != 0);  // ceil(size / 2^N), the spec's c
  if (hzio::stats::checksum_part_bytes(size, bits) != part_bytes) std::abort();
  std::vector<uint64_t> sums(parts);
  hzio::stats::payload_checksums(payload, bits, sums.data());
  for (uint64_t k = 0; k < parts; ++k) {
    const uint64_t begin = std::min(k * part_bytes, size), end = std::min((k + 1) * part_bytes, size);
    if (sums[k] != hzio::stats::checksum_of(payload.subspan(begin, end - begin))) std::abort();
  }
}

void check_binding(const StatsTable& t) {
  using hzio::stats::Binding;
  if (binding_of(t, t.data_file_size, t.header_crc) != Binding::kCurrent) std::abort();
  if (binding_of(t, t.data_file_size + 1, t.header_crc) != Binding::kStale) std::abort();
  const Binding other_table = t.version == 2 ? Binding::kHeaderMismatch : Binding::kStale;
  if (binding_of(t, t.data_file_size, t.header_crc ^ 1) != other_table) std::abort();
}

// An accepted sidecar writes back as version 2 to bytes that read as the same table (a version 1 one with
// zero checksums), and to the very same bytes when it was version 2 and nothing was dropped.
void check_writes_back(const StatsTable& t, const Layout& l, std::span<const std::byte> bytes) {
  const std::vector<std::byte> out = hzio::stats::serialize_stats_file(t);
  if (out.size() != expected_bytes(2, l, t.sub_block_bits)) std::abort();
  auto again = hzio::stats::parse_stats_file(out, l.components, l.blocks_per_file, "again.hzstats");
  if (!again.is_ok() || again->version != 2 || again->sub_block_bits != t.sub_block_bits ||
      again->data_file_size != t.data_file_size || again->header_crc != t.header_crc ||
      again->entries.size() != t.entries.size())
    std::abort();
  const std::vector<uint64_t> zeros(t.entries.size() * hzio::stats::checksum_parts(t.sub_block_bits), 0);
  if (again->checksums != (t.version == 2 ? t.checksums : zeros)) std::abort();
  for (size_t i = 0; i < t.entries.size(); ++i) {
    const auto &read = t.entries[i], &back = again->entries[i];
    if (!same_range(read.block, back.block) || read.parts.size() != back.parts.size()) std::abort();
    for (size_t k = 0; k < read.parts.size(); ++k) {
      if (!same_range(read.parts[k], back.parts[k])) std::abort();
    }
  }
  if (hzio::stats::serialize_stats_file(*again) != out) std::abort();
  if (t.version == 2 && lossless(t, bytes) && !std::equal(out.begin(), out.end(), bytes.begin(), bytes.end()))
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const Layout l = layout_of(data);
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data + 4),
                               reinterpret_cast<const std::byte*>(data + size));
  check_payload_checksums(bytes, l.payload_bits);
  if (l.reseal && bytes.size() >= 8) {
    const uint64_t sum = hzio::stats::checksum_of(std::span(bytes).first(bytes.size() - 8));
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  }
  auto table = hzio::stats::parse_stats_file(bytes, l.components, l.blocks_per_file, "fuzz.hzstats");
  if (!table.is_ok()) {
    if (table.status().code() != hzio::ErrorCode::kCorrupt) std::abort();
    return 0;
  }
  const StatsTable& t = table.value();
  const size_t sums = t.version == 2 ? hzio::stats::checksum_parts(t.sub_block_bits) : 0;
  const size_t parts = t.sub_block_bits > 0 ? size_t{1} << t.sub_block_bits : 0;
  if ((t.version != 1 && t.version != 2) || t.sub_block_bits < 0 || t.sub_block_bits > 24 ||
      t.components != l.components || t.blocks_per_file != l.blocks_per_file ||
      t.entries.size() != l.components.size() * static_cast<size_t>(l.blocks_per_file) ||
      t.checksums.size() != t.entries.size() * sums || bytes.size() != expected_bytes(t.version, l, t.sub_block_bits))
    std::abort();
  for (size_t i = 0; i < t.entries.size(); ++i) {
    const size_t comps = static_cast<size_t>(l.components[i / static_cast<size_t>(l.blocks_per_file)]);
    if (t.entries[i].parts.size() != parts) std::abort();
    auto sized = [&](const hzio::stats::RangeStats& r) { return r.min.size() == comps && r.max.size() == comps; };
    if (!sized(t.entries[i].block)) std::abort();
    for (const auto& r : t.entries[i].parts) {
      if (!sized(r)) std::abort();
    }
  }
  check_binding(t);
  check_writes_back(t, l, bytes);
  return 0;
}
