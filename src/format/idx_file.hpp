// The .idx text metadata: parse, validate (fill OpenVisus defaults) and write (docs/format.md "The .idx file").
// Layer: format. Pure text <-> struct; the caller reads and writes the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/bitmask.hpp"
#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio::format {

// One entry of (fields). hzio keeps compression, layout, default_value, filter, min, max and
// description; other per-field options are dropped when the .idx is rewritten.
struct FieldDesc {
  std::string name;
  DType dtype;
  std::string compression;            // default_compression(...) spec; "" = raw
  Layout layout = Layout::kRowMajor;  // layout of newly written blocks; reads trust block flags
  double default_value = 0;
  std::string filter;  // "" or "identity"; anything else is rejected when read
  std::string min_text = "0";
  std::string max_text = "0";
  std::string description;
};

// (time): a template and the set of timesteps, as ranges (first, last, step) or "any".
struct TimeSpec {
  std::string template_text;  // e.g. "time_%04d/"; empty = no time component in file names
  bool any = false;           // "* * template": timesteps not known in advance
  std::vector<std::array<int64_t, 3>> ranges;
  bool declared = false;  // the key was present

  bool contains(int64_t t) const;
  std::vector<int64_t> list() const;  // every timestep, ascending (empty when any)
  // The number of timesteps the ranges list, counting overlaps twice (saturates at INT64_MAX).
  int64_t count() const;
  // Replaces the ranges by the shortest list of step-1 ranges covering `steps`.
  void set(std::vector<int64_t> steps);
};

// Limits on what a .idx may declare (docs/format.md "Limits"), so that no .idx of a few bytes makes hzio
// allocate or loop beyond what its data can justify. Every .idx OpenVisus writes with its defaults lies
// far inside them.
inline constexpr size_t kMaxFields = 65536;
inline constexpr int64_t kMaxBlockBytes = int64_t{1} << 30;  // 2^bitsperblock samples of the widest field
inline constexpr int64_t kMaxTimesteps = int64_t{1} << 20;   // listed timesteps, summed over the ranges
inline constexpr size_t kMaxTimeRanges = 65536;

struct IdxFile {
  int version = 6;
  Bitmask bitmask;
  Box box;       // logical box, exclusive upper bounds, x first
  int ndim = 0;  // = bitmask.pdim()
  std::vector<FieldDesc> fields;
  int bits_per_block = 0;  // 0 until validate()
  int64_t blocks_per_file = 0;
  int64_t interleave = 0;
  std::string filename_template;
  TimeSpec time;
  std::string axis;
  std::string physic_box;
  std::string logic_to_physic;
  int missing_blocks = 0;
  std::vector<std::pair<std::string, std::string>> extra;  // unknown key lines (verbatim) and values, in file order

  // Local. Parses the text form; `idx_name` (the .idx path) names errors and the default template.
  // Applies validate(). Errors: kFormat naming the file, the key and the reason; kUnsupported for
  // valid IDX that hzio cannot read (versions < 6, ARCO, F masks, filters). A bitmask naming more
  // than 3 axes is kFormat.
  static Result<IdxFile> parse(std::string_view text, std::string_view idx_name);
  // Local. Fills the OpenVisus defaults (bits per block, blocks per file, template) and checks the
  // whole. Errors: kFormat.
  Status validate(std::string_view idx_name);
  // Local. The text form, keys in the OpenVisus writer's order, unknown keys last.
  std::string to_text() const;
  // Local. Checks what a writable open needs: every default value within its dtype's range, and
  // to_text() parsing back to this same metadata, so that a commit that rewrites the .idx loses
  // nothing. Errors: kUnsupported naming the field or the first key that would not read back.
  Status check_writes_back(std::string_view idx_name) const;

  int64_t total_blocks() const { return int64_t{1} << (bitmask.max_level() - bits_per_block); }
  int64_t samples_per_block() const { return int64_t{1} << bits_per_block; }
  const std::string* find_extra(std::string_view key) const;
  // Sets "(key)"; set_extra_line keeps a key line exactly as read.
  void set_extra(std::string key, std::string value);
  void set_extra_line(std::string line, std::string value);
};

// hzio's extension key "(hzio stats)" (docs/format.md "The (hzio stats) key"): the sub-block bits of the
// statistics hzio's writers keep. Local. The sub-block bits the key gives, clamped to [0, min(bpb, 16)] (0 for a
// key without "sub_block_bits="), or nullopt when the .idx has no key.
std::optional<int> sub_block_bits_of(const IdxFile& idx);
// Local. Sets the key to `sub_block_bits`.
void set_sub_block_bits(IdxFile& idx, int sub_block_bits);

// Local. Whether every sample of `dtype` can take `value`: finite and within the scalar's range; with
// `exact`, also representable without rounding to a whole number for integer scalars.
bool holds_value(const DType& dtype, double value, bool exact);
// Local. The value of `dtype` nearest to `value` (0 for NaN): what samples of a default value outside
// the dtype's range read as.
double clamp_value(const DType& dtype, double value);

// Local. The data folder OpenVisus assumes when a .idx has no (filename_template): the .idx file name
// without its extension (docs/format.md "File names").
std::string default_data_folder(std::string_view idx_name);
// Local. The default (filename_template) for a data folder name (relative to the .idx) and a
// block-number bit count.
std::string default_filename_template(std::string_view folder, int block_bits);

}  // namespace hzio::format
