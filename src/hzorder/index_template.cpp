// Indexing templates: the rank-conforming bitmask of a decomposition and its check
// (include/hzio/index_template.hpp; docs/guide/parallel-io.md "Indexing templates"). Layer: hzorder.
#include "hzio/index_template.hpp"

#include <algorithm>
#include <bit>
#include <map>

#include "format/bitmask.hpp"

namespace hzio {
namespace {

constexpr char kAxisDigit[kMaxDims] = {'0', '1', '2'};

bool power_of_two(int64_t v) { return v > 0 && std::has_single_bit(static_cast<uint64_t>(v)); }
int log2_of(int64_t v) { return std::countr_zero(static_cast<uint64_t>(v)); }

std::string show(const Box& b) { return b.to_string(); }

// Rank r's position in the grid of boxes, per axis, after checking the box's size and alignment.
Result<Point> grid_position(const Box& b, const Point& extent, int ndim, size_t r) {
  Point g{0, 0, 0};
  for (int a = 0; a < ndim; ++a) {
    if (b.extent(a) != extent[a] || b.lo[a] % extent[a] != 0) {
      return invalid_argument("rank " + std::to_string(r) + "'s box " + show(b) +
                              " is not a box of the same size as rank 0's, aligned to it; restructure the "
                              "decomposition into equal power-of-two boxes first");
    }
    g[a] = b.lo[a] / extent[a];
  }
  return g;
}

// The axis and coordinate bit that each bit of a rank number stands for, learnt from the ranks that are
// powers of two, then checked on every rank.
Result<std::vector<std::pair<int, int>>> rank_bit_map(const std::vector<Point>& pos, int ndim, const Point& grid) {
  const int k = log2_of(static_cast<int64_t>(pos.size()));
  std::vector<std::pair<int, int>> map;
  for (int b = 0; b < k; ++b) {
    const Point& p = pos[size_t{1} << b];
    int axis = -1;
    for (int a = 0; a < ndim; ++a) {
      if (p[a] == 0) continue;
      if (axis >= 0 || !power_of_two(p[a])) axis = -2;
      if (axis == -1) axis = a;
    }
    if (axis < 0) {
      return invalid_argument("rank " + std::to_string(size_t{1} << b) +
                              " does not sit one power of two from rank 0 along one axis: no bitmask prefix "
                              "numbers these ranks (row-major, column-major and Morton orders do)");
    }
    map.emplace_back(axis, log2_of(p[axis]));
  }
  for (size_t r = 0; r < pos.size(); ++r) {
    Point want{0, 0, 0};
    for (int b = 0; b < k; ++b) {
      if ((r >> b) & 1) want[map[static_cast<size_t>(b)].first] |= int64_t{1} << map[static_cast<size_t>(b)].second;
    }
    if (want != pos[r]) {
      return invalid_argument("rank " + std::to_string(r) +
                              "'s box is not where the bits of its number put it: no bitmask prefix numbers "
                              "these ranks (row-major, column-major and Morton orders do)");
    }
  }
  for (int a = 0; a < ndim; ++a) {
    const auto n = std::count_if(map.begin(), map.end(), [a](const auto& m) { return m.first == a; });
    if (n != log2_of(grid[a])) return internal_error("rank bits do not cover the grid");
  }
  return map;
}

}  // namespace

Result<std::string> rank_conforming_bitmask(int ndim, const Point& dims, const std::vector<Box>& rank_boxes) {
  if (ndim < 1 || ndim > kMaxDims) return invalid_argument("ndim must be 1, 2 or 3");
  if (rank_boxes.empty() || !power_of_two(static_cast<int64_t>(rank_boxes.size()))) {
    return invalid_argument(std::to_string(rank_boxes.size()) +
                            " ranks: a bitmask prefix numbers a power of two of ranks; restructure onto 2^k ranks");
  }
  const Box& first = rank_boxes[0];
  Point extent{1, 1, 1}, grid{1, 1, 1};
  for (int a = 0; a < ndim; ++a) {
    extent[a] = first.extent(a);
    if (!power_of_two(extent[a])) {
      return invalid_argument("rank 0's box " + show(first) + " has a side that is not a power of two");
    }
    if (dims[a] % extent[a] != 0 || !power_of_two(dims[a] / extent[a])) {
      return invalid_argument("the boxes (" + std::to_string(extent[a]) + " samples along axis " + std::to_string(a) +
                              ") do not tile the domain's " + std::to_string(dims[a]) +
                              " samples in a power-of-two number of boxes");
    }
    grid[a] = dims[a] / extent[a];
  }
  if (grid[0] * grid[1] * grid[2] != static_cast<int64_t>(rank_boxes.size())) {
    return invalid_argument(std::to_string(rank_boxes.size()) + " boxes cannot tile a domain of " +
                            std::to_string(grid[0] * grid[1] * grid[2]) + " boxes of rank 0's size");
  }
  std::vector<Point> pos;
  for (size_t r = 0; r < rank_boxes.size(); ++r) {
    HZIO_ASSIGN_OR_RETURN(Point g, grid_position(rank_boxes[r], extent, ndim, r));
    pos.push_back(g);
  }
  HZIO_ASSIGN_OR_RETURN(auto map, rank_bit_map(pos, ndim, grid));
  // The prefix names the axis of each rank bit from the most significant; per axis those bits must come
  // most significant first, as a bitmask consumes an axis's coordinate bits.
  std::string prefix;
  std::map<int, int> last_bit;
  for (int b = static_cast<int>(map.size()) - 1; b >= 0; --b) {
    const auto [axis, bit] = map[static_cast<size_t>(b)];
    if (last_bit.count(axis) && last_bit[axis] < bit) {
      return invalid_argument("the ranks number the boxes along axis " + std::to_string(axis) +
                              " with their low bits first: no bitmask prefix does that");
    }
    last_bit[axis] = bit;
    prefix += kAxisDigit[axis];
  }
  std::string suffix;  // built from the finest level up: x, y, z in turn while an axis has bits left
  std::array<int, kMaxDims> left{};
  for (int a = 0; a < ndim; ++a) left[static_cast<size_t>(a)] = log2_of(extent[a]);
  while (std::any_of(left.begin(), left.end(), [](int n) { return n > 0; })) {
    for (int a = 0; a < ndim; ++a) {
      if (left[static_cast<size_t>(a)]-- > 0) suffix.insert(suffix.begin(), kAxisDigit[a]);
    }
  }
  std::string text = "V" + prefix + suffix;
  if (text.size() == 1) text += '0';  // one sample on one rank: a bitmask needs one level
  return text;
}

Status check_rank_box(std::string_view text, int64_t ranks, int64_t r, const Box& b) {
  HZIO_ASSIGN_OR_RETURN(format::Bitmask bitmask, format::Bitmask::parse(text));
  if (!power_of_two(ranks)) {
    return invalid_argument(std::to_string(ranks) + " ranks: only a power of two of ranks can be rank-conforming");
  }
  const int maxh = bitmask.max_level();
  const int k = log2_of(ranks);
  if (k > maxh) return invalid_argument("the bitmask has fewer levels than the ranks' numbers have bits");
  const int p = maxh - k;
  // Per level: which coordinate bit of which axis it names (an axis's first digit is its top bit).
  std::array<int, kMaxDims> seen{}, total{};
  for (int i = 1; i <= maxh; ++i) ++total[static_cast<size_t>(bitmask.axis_at(i))];
  std::vector<std::pair<int, int>> level_bit(static_cast<size_t>(maxh) + 1);
  Point extent{1, 1, 1};
  for (int i = 1; i <= maxh; ++i) {
    const auto a = static_cast<size_t>(bitmask.axis_at(i));
    level_bit[static_cast<size_t>(i)] = {static_cast<int>(a), total[a] - 1 - seen[a]++};
    if (i > k) extent[a] *= 2;
  }
  for (int a = 0; a < kMaxDims; ++a) {
    if (b.lo[a] < 0 || b.hi[a] > bitmask.pow2_dims()[a]) {
      return invalid_argument("rank " + std::to_string(r) + "'s box " + show(b) + " is outside the bitmask's box");
    }
    if (b.extent(a) != extent[a]) {
      return invalid_argument("rank " + std::to_string(r) + "'s box " + show(b) + " is not the " +
                              std::to_string(extent[0]) + "x" + std::to_string(extent[1]) + "x" +
                              std::to_string(extent[2]) + " (x first) box the bitmask's last " + std::to_string(p) +
                              " levels index");
    }
  }
  uint64_t z = 0;
  for (int i = 1; i <= maxh; ++i) {
    const auto [a, bit] = level_bit[static_cast<size_t>(i)];
    z |= ((static_cast<uint64_t>(b.lo[static_cast<size_t>(a)]) >> bit) & 1) << (maxh - i);
  }
  if (z != static_cast<uint64_t>(r) << p) {
    return invalid_argument("rank " + std::to_string(r) + "'s box " + show(b) + " starts at Z address " +
                            std::to_string(z) + ", not at " + std::to_string(static_cast<uint64_t>(r) << p) +
                            ": the bitmask's Z curve does not visit the ranks in rank order");
  }
  return Status::ok();
}

Status check_rank_conforming(std::string_view text, const std::vector<Box>& rank_boxes) {
  const auto ranks = static_cast<int64_t>(rank_boxes.size());
  if (ranks == 0) return check_rank_box(text, 0, 0, Box{});
  for (int64_t r = 0; r < ranks; ++r)
    HZIO_RETURN_IF_ERROR(check_rank_box(text, ranks, r, rank_boxes[static_cast<size_t>(r)]));
  return Status::ok();
}

}  // namespace hzio
