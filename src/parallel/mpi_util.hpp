// Small MPI helpers: agreeing on a Status across ranks, and int64 all-gathers. Layer: parallel.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "hzio/status.hpp"

namespace hzio::parallel {

// Collective. Every rank returns the error of the lowest failing rank (or OK if none failed).
Status agree(MPI_Comm comm, const Status& local);

// Collective. Concatenates every rank's values, in rank order; `counts` receives each rank's count.
std::vector<int64_t> allgather_int64(MPI_Comm comm, const std::vector<int64_t>& mine, std::vector<int>& counts);

}  // namespace hzio::parallel
