// Indexing templates (docs/glossary.md "bitmask"): the bitmask that makes a decomposition of the domain
// among ranks rank-conforming, and the test for it. Boxes are x first, as everywhere in the C++ API.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hzio/status.hpp"
#include "hzio/types.hpp"

namespace hzio {

// Local, pure. The bitmask whose first log2(R) characters number the R ranks' boxes in rank order and
// whose remaining characters interleave the samples inside one box (rotating x, y, z from the finest
// level up), so that every level's Z curve visits the ranks in increasing order. rank_boxes[r] is rank
// r's box; together the boxes must tile [0, dims) as a grid of equal boxes whose sides and counts per
// axis are powers of two, in an order that some prefix expresses (row-major gives zz..yy..xx..,
// column-major xx..yy..zz.., Morton zyxzyx..). `ndim` axes (1 to 3) are used.
// Errors: kInvalidArgument naming the rule the decomposition breaks.
Result<std::string> rank_conforming_bitmask(int ndim, const Point& dims, const std::vector<Box>& rank_boxes);

// Local, pure. OK if `bitmask` is rank-conforming for rank_boxes: their count R is a power of two, and
// rank r's box is exactly the aligned range of 2^p consecutive Z addresses that starts at r * 2^p, where
// p = max_level - log2(R) (the last p characters index the samples inside a box), as the restructuring
// of seed 002 makes it. Then every level's curve visits the ranks in increasing order. Otherwise
// kInvalidArgument saying which rank breaks it and how; kFormat for a bitmask that does not parse.
Status check_rank_conforming(std::string_view bitmask, const std::vector<Box>& rank_boxes);
// Local, pure. The same check for rank r's box alone, among `ranks` ranks: what each rank of a collective
// write tests of its own box (check_rank_conforming passes when it passes for every rank).
Status check_rank_box(std::string_view bitmask, int64_t ranks, int64_t r, const Box& box);

}  // namespace hzio
