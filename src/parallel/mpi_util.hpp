// Small MPI helpers: waiting without spinning, agreeing on a Status across ranks, and int64 all-gathers. Layer:
// parallel.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "hzio/status.hpp"

namespace hzio::parallel {

// Local. Completes `request` (a nonblocking collective or point-to-point operation) by testing it
// between short sleeps that grow to 100 microseconds. Blocking MPI calls spin, and Open MPI yields the
// core in a loop when ranks outnumber cores: the waiting ranks then take turns with the working ones and
// most of a collective write goes into context switches. A sleeping rank leaves its core to them.
void wait(MPI_Request& request);
// Local. Completes every request of `requests` (MPI_REQUEST_NULL entries included), waiting as wait() does.
void wait_all(std::vector<MPI_Request>& requests);

// Collective. Every rank returns the error of the lowest failing rank (or OK if none failed).
Status agree(MPI_Comm comm, const Status& local);

// Collective. MPI_Allreduce, waiting as wait() does.
void allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);

// Collective. Concatenates every rank's values, in rank order; `counts` receives each rank's count.
std::vector<int64_t> allgather_int64(MPI_Comm comm, const std::vector<int64_t>& mine, std::vector<int>& counts);

// How a wait sleeps between its tests. kShort: as wait() does, short sleeps, since this rank's own transfers
// (the copies of its large messages) move only while it tests. kLong: for waits on a small message that may
// be long in coming while this rank moves no data through MPI (a compute rank waiting for its I/O rank to
// make a timestep durable, an I/O rank waiting for its next command): the sleeps then grow with the time
// already waited, so that such a wait wakes far less often (each wake-up costs CPU time that the working
// ranks on the same cores lack) and ends late by a small fraction of its length (mpi_util.cpp).
enum class Patience { kShort, kLong };

// Local. Waits (as wait() does, or with `patience`) for a message with `tag` from `source` of `comm`
// (MPI_ANY_SOURCE: any rank) and matches it: receive it with MPI_Mrecv; `status` gives its source and size.
MPI_Message probe(MPI_Comm comm, int source, int tag, MPI_Status& status, Patience patience = Patience::kShort);

// Collective. Concatenates every rank's values, in rank order, on `root` (empty elsewhere).
std::vector<int64_t> gather_int64(MPI_Comm comm, const std::vector<int64_t>& mine, int root);

// Collective. The ranks of `comm` on this rank's node (MPI_Comm_split_type SHARED), or in its group of
// $HZIO_RANKS_PER_NODE consecutive ranks when that is set (tests emulate several nodes on one machine).
// The caller frees it.
MPI_Comm node_comm(MPI_Comm comm);

// Collective. `values` of `root` on every rank.
void bcast_int64(MPI_Comm comm, std::vector<int64_t>& values, int root);

}  // namespace hzio::parallel
