// MPI helpers (mpi_util.hpp).
#include "parallel/mpi_util.hpp"

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace hzio::parallel {

namespace {

// The longest sleep between two tests of a wait: short, because a rank's own large messages move only
// while it tests MPI; a rank that slept longer between tests slowed every exchange of a collective write.
constexpr long kShortSleepCapNs = 100'000;
// Patience::kLong: past kShortSleepCapNs a sleep may last this fraction of the time already waited (so the
// wait ends at most that fraction late), up to kLongSleepCapNs. Chosen so that a compute rank waiting in
// close() for its I/O rank takes little CPU time from the I/O rank's threads (bench/README.md,
// first_write_bench.py, "Longer sleeps in the I/O ranks' long waits").
constexpr long kLongSleepDivisor = 100;
constexpr long kLongSleepCapNs = 2'000'000;

// Calls done() until it returns true: 16 times at once (short operations finish without sleeping), then
// between sleeps doubling up to kShortSleepCapNs, or with Patience::kLong up to the longer cap above.
template <class Done>
void poll(Done done, Patience patience = Patience::kShort) {
  long sleep_ns = 1000;
  timespec start{};
  for (int polls = 0; !done(); ++polls) {
    if (polls < 16) continue;
    if (polls == 16 && patience == Patience::kLong) clock_gettime(CLOCK_MONOTONIC, &start);
    const timespec pause{0, sleep_ns};
    nanosleep(&pause, nullptr);
    long cap = kShortSleepCapNs;
    if (patience == Patience::kLong) {
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      const long waited_ns = (now.tv_sec - start.tv_sec) * 1'000'000'000L + (now.tv_nsec - start.tv_nsec);
      cap = std::clamp(waited_ns / kLongSleepDivisor, kShortSleepCapNs, kLongSleepCapNs);
    }
    sleep_ns = std::min(sleep_ns * 2, cap);
  }
}

}  // namespace

void wait(MPI_Request& request) {
  poll([&] {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

void wait_all(std::vector<MPI_Request>& requests) {
  poll([&] {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    return done != 0;
  });
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

MPI_Message probe(MPI_Comm comm, int source, int tag, MPI_Status& status, Patience patience) {
  MPI_Message message = MPI_MESSAGE_NULL;
  poll(
      [&] {
        int found = 0;
        MPI_Improbe(source, tag, comm, &found, &message, &status);
        return found != 0;
      },
      patience);
  return message;
}

std::vector<int64_t> gather_int64(MPI_Comm comm, const std::vector<int64_t>& mine, int root) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(rank == root ? static_cast<size_t>(size) : 0);
  MPI_Request request;
  MPI_Igather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm, &request);
  wait(request);
  std::vector<int> displs(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<int64_t> all(counts.empty() ? 0 : static_cast<size_t>(displs.back() + counts.back()));
  MPI_Igatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, root, comm,
               &request);
  wait(request);
  return all;
}

void bcast_int64(MPI_Comm comm, std::vector<int64_t>& values, int root) {
  int64_t n = static_cast<int64_t>(values.size());
  MPI_Request request;
  MPI_Ibcast(&n, 1, MPI_INT64_T, root, comm, &request);
  wait(request);
  values.resize(static_cast<size_t>(n));
  MPI_Ibcast(values.data(), static_cast<int>(n), MPI_INT64_T, root, comm, &request);
  wait(request);
}

MPI_Comm node_comm(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node = MPI_COMM_NULL;
  const char* per_node = std::getenv("HZIO_RANKS_PER_NODE");
  if (per_node && std::atoi(per_node) > 0) {
    MPI_Comm_split(comm, rank / std::atoi(per_node), rank, &node);
  } else {
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  }
  return node;
}

}  // namespace hzio::parallel
