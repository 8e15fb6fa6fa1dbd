// NodeMemory: one POSIX shared-memory object per node, a region of it per rank (docs/guide/parallel-io.md
// "Node memory"), and the process's list of them that collective writes look boxes up in.

#include "parallel/node_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "hzio/parallel.hpp"
#include "parallel/mpi_util.hpp"
#include "util/fork_guard.hpp"

namespace hzio {

struct NodeMemory::Impl {
  std::byte* base = nullptr;    // the whole object, as this process maps it
  size_t bytes = 0;             // the whole object
  size_t offset = 0, size = 0;  // this rank's region
  int64_t token[2] = {0, 0};
};

namespace {

// Process-wide, so held across fork() (ARCHITECTURE.md): a child never inherits it locked.
std::mutex& registry_mutex() {
  static std::mutex m;
  static const bool registered = (util::hold_across_fork(m), true);
  (void)registered;
  return m;
}

std::vector<const NodeMemory::Impl*>& registry() {
  static std::vector<const NodeMemory::Impl*> r;
  return r;
}

// A rank's region at most (2^52 bytes, 4 PiB): sums of a node's regions cannot overflow.
constexpr size_t kMaxRegion = size_t{1} << 52;

}  // namespace

Result<std::unique_ptr<NodeMemory>> NodeMemory::create(MPI_Comm comm, size_t bytes) {
  // Every rank hears of a request no node can hold before any waits for it in the node's calls.
  HZIO_RETURN_IF_ERROR(parallel::agree(
      comm, bytes > kMaxRegion ? invalid_argument("node memory of " + std::to_string(bytes) +
                                                  " bytes for one rank: more than 2^52 (or an invalid request)")
                               : Status::ok()));
  const auto page = static_cast<size_t>(std::max(4096L, ::sysconf(_SC_PAGESIZE)));
  MPI_Comm node = parallel::node_comm(comm);
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  auto impl = std::make_unique<Impl>();
  // The regions, each rounded up to whole pages, one after the other in node-rank order.
  const auto mine = static_cast<int64_t>((bytes + page - 1) / page * page);
  std::vector<int64_t> sizes(static_cast<size_t>(node_size));
  MPI_Allgather(&mine, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, node);
  for (int r = 0; r < node_size; ++r) {
    if (r == node_rank) impl->offset = impl->bytes;
    impl->bytes += static_cast<size_t>(sizes[static_cast<size_t>(r)]);
  }
  impl->size = bytes;
  // The node's first rank names the object after its process and the time, and owns it.
  impl->token[0] = ::getpid();
  impl->token[1] = std::chrono::steady_clock::now().time_since_epoch().count();
  MPI_Bcast(impl->token, 2, MPI_INT64_T, 0, node);
  const std::string name = "/hzio-node-" + std::to_string(impl->token[0]) + "-" + std::to_string(impl->token[1]);
  const size_t total = std::max(impl->bytes, page);
  Status made;
  if (node_rank == 0) {
    const Result<int> fd = parallel::make_shared_object(name, total, "node memory");
    made = fd.status();
    if (fd.is_ok()) ::close(fd.value());
  }
  made = parallel::agree(comm, made);
  Status mapped;
  if (made.is_ok()) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    void* p = fd < 0 ? MAP_FAILED : mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      mapped = io_error("cannot map the node memory " + name + ": " + std::strerror(errno));
    else
      impl->base = static_cast<std::byte*>(p);
    if (fd >= 0) ::close(fd);
    mapped = parallel::agree(comm, mapped);
  }
  // Mapped by every rank of the node (or failed): the name goes; the memory lives until the last unmap.
  if (node_rank == 0) shm_unlink(name.c_str());
  MPI_Comm_free(&node);
  if (!made.is_ok()) return made;
  if (!mapped.is_ok()) {
    if (impl->base) munmap(impl->base, total);
    return mapped;
  }
  impl->bytes = total;
  {
    std::lock_guard lock(registry_mutex());
    registry().push_back(impl.get());
  }
  return std::unique_ptr<NodeMemory>(new NodeMemory(std::move(impl)));
}

NodeMemory::NodeMemory(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NodeMemory::~NodeMemory() {
  {
    std::lock_guard lock(registry_mutex());
    std::erase(registry(), impl_.get());
  }
  if (impl_->base) munmap(impl_->base, impl_->bytes);
}

void* NodeMemory::data() const { return impl_->base + impl_->offset; }

size_t NodeMemory::size() const { return impl_->size; }

namespace parallel {

Result<int> make_shared_object(const std::string& name, size_t bytes, const std::string& what,
                               const std::string& hint) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const Status s = io_error("cannot make the " + what + " " + name + " of " + std::to_string(bytes) +
                              " bytes: " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return s;
  }
  if (const int reserved = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); reserved != 0) {
    ::close(fd);
    return io_error("cannot reserve the " + std::to_string(bytes) + " bytes of the " + what + " " + name +
                    " in the node's shared memory (/dev/shm): " + std::strerror(reserved) + hint);
  }
  return fd;
}

std::optional<NodePlace> find_node_place(const void* data, size_t bytes) {
  const auto* p = static_cast<const std::byte*>(data);
  std::lock_guard lock(registry_mutex());
  for (const NodeMemory::Impl* m : registry()) {
    const std::byte* region = m->base + m->offset;
    if (p >= region && p <= region + m->size && bytes <= static_cast<size_t>(region + m->size - p)) {
      NodePlace place;
      place.token[0] = m->token[0];
      place.token[1] = m->token[1];
      place.offset = static_cast<int64_t>(p - m->base);
      return place;
    }
  }
  return std::nullopt;
}

const std::byte* node_address(const NodePlace& place, size_t bytes) {
  std::lock_guard lock(registry_mutex());
  for (const NodeMemory::Impl* m : registry())
    if (m->token[0] == place.token[0] && m->token[1] == place.token[1] && place.offset >= 0 &&
        static_cast<size_t>(place.offset) <= m->bytes && bytes <= m->bytes - static_cast<size_t>(place.offset))
      return m->base + place.offset;
  return nullptr;
}

}  // namespace parallel
}  // namespace hzio
