// MPI helpers (mpi_util.hpp).
#include "parallel/mpi_util.hpp"

#include <string>

namespace hzio::parallel {

Status agree(MPI_Comm comm, const Status& local) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = local.is_ok() ? size : rank;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
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

std::vector<int64_t> allgather_int64(MPI_Comm comm, const std::vector<int64_t>& mine, std::vector<int>& counts) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int n = static_cast<int>(mine.size());
  counts.assign(static_cast<size_t>(size), 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<int64_t> all(static_cast<size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, comm);
  return all;
}

}  // namespace hzio::parallel
