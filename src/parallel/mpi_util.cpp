// MPI helpers (mpi_util.hpp).
#include "parallel/mpi_util.hpp"

#include <time.h>

#include <algorithm>
#include <string>

namespace hzio::parallel {

void wait(MPI_Request& request) {
  long sleep_ns = 1000;
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (polls < 16) continue;  // short operations finish without sleeping
    const timespec pause{0, sleep_ns};
    nanosleep(&pause, nullptr);
    sleep_ns = std::min(sleep_ns * 2, 100'000L);
  }
}

Status agree(MPI_Comm comm, const Status& local) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = local.is_ok() ? size : rank;
  int first = size;
  MPI_Request request;
  MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm, &request);
  wait(request);
  if (first == size) return Status::ok();
  int code = static_cast<int>(local.code());
  MPI_Bcast(&code, 1, MPI_INT, first, comm);
  std::string msg = rank == first ? local.message() : std::string();
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  msg.resize(static_cast<size_t>(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, comm);
  return Status(static_cast<ErrorCode>(code), "rank " + std::to_string(first) + ": " + msg);
}

void allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  MPI_Request request;
  MPI_Iallreduce(in, out, count, type, op, comm, &request);
  wait(request);
}

std::vector<int64_t> allgather_int64(MPI_Comm comm, const std::vector<int64_t>& mine, std::vector<int>& counts) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int n = static_cast<int>(mine.size());
  counts.assign(static_cast<size_t>(size), 0);
  MPI_Request request;
  MPI_Iallgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm, &request);
  wait(request);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<int64_t> all(static_cast<size_t>(displs.back() + counts.back()));
  MPI_Iallgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, comm, &request);
  wait(request);
  return all;
}

}  // namespace hzio::parallel
