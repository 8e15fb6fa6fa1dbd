// Collective reads (ParallelDataset::read_box): every rank reads its own box, independently or
// two-phase (docs/guide/parallel-io.md "Reads"). Plan: parallel/read_plan.hpp; here the exchange of
// requests and blocks, and the assembly of the received blocks. Layer: parallel.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hzio/dataset.hpp"

namespace hzio::parallel {

// What one rank reads, as Dataset::read_box takes it. An empty box asks for nothing (out_bytes 0).
struct ReadTarget {
  Box box;
  int level = -1;  // -1: the finest
  std::string_view field;
  int64_t time = 0;
  void* out = nullptr;
  size_t out_bytes = 0;
};

// Collective over `comm`. Reads every rank's target; `one_node`: every rank shares this node's page
// cache; `budget`: the block bytes a two-phase reader sends per round. `report` gets the method and what
// this rank read from disk. Errors agree on every rank.
Status parallel_read(Dataset& dataset, MPI_Comm comm, bool one_node, size_t budget, const ReadTarget& target,
                     ReadMethod method, ReadReport& report);

}  // namespace hzio::parallel
