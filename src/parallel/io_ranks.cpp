// Dedicated I/O ranks (hzio/io_ranks.hpp): the node split, the shared buffers, the compute side's hand-off
// and the I/O side's loop, which runs ParallelDataset over the I/O ranks' communicator.
//
// Messages go over the node communicator: commands from a compute rank to its I/O rank (tag kCommand),
// replies back (tag kReply). A command is its op, the dataset's key and the op's payload; a reply is its
// kind, an error (code and message) and, for kReady, the dataset's dims and fields. Every compute rank
// issues the same commands in the same order (they are Collective over the compute ranks), so the I/O
// ranks take one command of each of their clients and agree on it before running it collectively.
#include "hzio/io_ranks.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "parallel/mpi_util.hpp"
#include "util/clock.hpp"
#include "util/large_buffer.hpp"

namespace hzio {
namespace {

constexpr int kCommand = 7301;
constexpr int kReply = 7302;
constexpr const char* kRanksPerNodeEnv = "HZIO_RANKS_PER_NODE";  // emulate nodes of this many ranks

enum Op : int64_t { kCreate = 1, kOpen = 2, kStage = 3, kFlush = 4, kClose = 5, kDone = 6 };
enum Kind : int64_t { kReleased = 1, kDurable = 2, kReady = 3 };

// The bytes of a message, written and read field by field; reads past the end set `bad`.
class Wire {
 public:
  Wire() = default;
  explicit Wire(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}

  void i64(int64_t v) { put(&v, sizeof v); }
  void f64(double v) { put(&v, sizeof v); }
  void str(std::string_view s) {
    i64(static_cast<int64_t>(s.size()));
    put(s.data(), s.size());
  }
  void ints(const std::vector<int64_t>& v) {
    i64(static_cast<int64_t>(v.size()));
    for (int64_t x : v) i64(x);
  }

  int64_t i64() {
    int64_t v = 0;
    get(&v, sizeof v);
    return v;
  }
  double f64() {
    double v = 0;
    get(&v, sizeof v);
    return v;
  }
  std::string str() {
    const int64_t n = i64();
    if (n < 0 || static_cast<size_t>(n) > bytes_.size() - at_) {
      bad = true;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return s;
  }
  std::vector<int64_t> ints() {
    const int64_t n = i64();
    std::vector<int64_t> v;
    if (n < 0 || static_cast<size_t>(n) > (bytes_.size() - at_) / sizeof(int64_t)) {
      bad = true;
      return v;
    }
    for (int64_t i = 0; i < n; ++i) v.push_back(i64());
    return v;
  }

  const std::vector<std::byte>& bytes() const { return bytes_; }
  bool bad = false;

 private:
  void put(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void get(void* p, size_t n) {
    if (n > bytes_.size() - at_) {
      bad = true;
      std::memset(p, 0, n);
      return;
    }
    std::memcpy(p, bytes_.data() + at_, n);
    at_ += n;
  }
  std::vector<std::byte> bytes_;
  size_t at_ = 0;
};

void put_status(Wire& w, const Status& s) {
  w.i64(static_cast<int64_t>(s.code()));
  w.str(s.message());
}

Status get_status(Wire& w) {
  const auto code = static_cast<ErrorCode>(w.i64());
  std::string message = w.str();
  return code == ErrorCode::kOk ? Status::ok() : Status(code, std::move(message));
}

void put_parallel(Wire& w, const ParallelOptions& p) {
  w.i64(p.placement == AggregatorPlacement::kUniform ? 1 : 0);
  w.i64(p.aggregator_count);
  w.i64(static_cast<int64_t>(p.aggregator_bytes));
  w.i64(p.durable ? 1 : 0);
  w.i64(p.threads);
  w.i64(p.verify_checksums ? 1 : 0);
  w.i64(p.allow_outside_folder ? 1 : 0);
  w.i64(p.partitions);
  w.i64(p.index_space == IndexSpace::kLocal ? 1 : 0);
}

ParallelOptions get_parallel(Wire& w) {
  ParallelOptions p;
  p.placement = w.i64() == 1 ? AggregatorPlacement::kUniform : AggregatorPlacement::kLocalized;
  p.aggregator_count = static_cast<int>(w.i64());
  p.aggregator_bytes = static_cast<size_t>(w.i64());
  p.durable = w.i64() != 0;
  p.threads = static_cast<int>(w.i64());
  p.verify_checksums = w.i64() != 0;
  p.allow_outside_folder = w.i64() != 0;
  p.partitions = static_cast<int>(w.i64());
  p.index_space = w.i64() == 1 ? IndexSpace::kLocal : IndexSpace::kGlobal;
  return p;
}

void put_create(Wire& w, const CreateOptions& o) {
  w.ints(o.dims);
  w.i64(static_cast<int64_t>(o.fields.size()));
  for (const FieldSpec& f : o.fields) {
    w.str(f.name);
    w.str(f.dtype.to_string());
    w.str(f.codec);
    w.i64(f.layout == Layout::kRowMajor ? 1 : 0);
    w.f64(f.default_value);
  }
  w.str(o.bitmask);
  w.i64(o.bits_per_block);
  w.i64(o.blocks_per_file);
  w.ints(o.times);
  w.str(o.time_template);
  w.i64(o.overwrite ? 1 : 0);
  w.i64(o.sub_block_bits);
}

Result<CreateOptions> get_create(Wire& w) {
  CreateOptions o;
  o.dims = w.ints();
  const int64_t n = w.i64();
  for (int64_t i = 0; i < n && !w.bad; ++i) {
    FieldSpec f;
    f.name = w.str();
    HZIO_ASSIGN_OR_RETURN(f.dtype, DType::parse(w.str()));
    f.codec = w.str();
    f.layout = w.i64() == 1 ? Layout::kRowMajor : Layout::kHzOrder;
    f.default_value = w.f64();
    o.fields.push_back(std::move(f));
  }
  o.bitmask = w.str();
  o.bits_per_block = static_cast<int>(w.i64());
  o.blocks_per_file = w.i64();
  o.times = w.ints();
  o.time_template = w.str();
  o.overwrite = w.i64() != 0;
  o.sub_block_bits = static_cast<int>(w.i64());
  return o;
}

// One slab of a staged box in a compute rank's region of the buffer.
struct Piece {
  std::string field;
  int64_t time = 0;
  Box box;
  int64_t at = 0;  // offset in the buffer
  int64_t bytes = 0;
  // Lent: the I/O rank writes straight from the buffer, and the compute rank leaves these bytes alone
  // until the flush is durable. Otherwise the I/O rank copies them out before it answers kReleased.
  bool lent = false;
};

void put_pieces(Wire& w, const std::vector<Piece>& pieces) {
  w.i64(static_cast<int64_t>(pieces.size()));
  for (const Piece& p : pieces) {
    w.str(p.field);
    w.i64(p.time);
    for (int a = 0; a < 3; ++a) w.i64(p.box.lo[a]);
    for (int a = 0; a < 3; ++a) w.i64(p.box.hi[a]);
    w.i64(p.at);
    w.i64(p.bytes);
    w.i64(p.lent ? 1 : 0);
  }
}

std::vector<Piece> get_pieces(Wire& w) {
  std::vector<Piece> pieces;
  const int64_t n = w.i64();
  for (int64_t i = 0; i < n && !w.bad; ++i) {
    Piece p;
    p.field = w.str();
    p.time = w.i64();
    for (int a = 0; a < 3; ++a) p.box.lo[a] = w.i64();
    for (int a = 0; a < 3; ++a) p.box.hi[a] = w.i64();
    p.at = w.i64();
    p.bytes = w.i64();
    p.lent = w.i64() != 0;
    pieces.push_back(std::move(p));
  }
  return pieces;
}

void send(MPI_Comm comm, int dest, int tag, const Wire& w) {
  MPI_Request request;
  MPI_Isend(w.bytes().data(), static_cast<int>(w.bytes().size()), MPI_BYTE, dest, tag, comm, &request);
  parallel::wait(request);
}

// Local. The next message from `source` with `tag`, waiting without spinning (parallel::wait).
Wire receive(MPI_Comm comm, int source, int tag) {
  MPI_Status status;
  MPI_Message message = parallel::probe(comm, source, tag, status);
  int n = 0;
  MPI_Get_count(&status, MPI_BYTE, &n);
  std::vector<std::byte> bytes(static_cast<size_t>(n));
  MPI_Mrecv(bytes.data(), n, MPI_BYTE, &message, MPI_STATUS_IGNORE);
  return Wire(std::move(bytes));
}

bool has_message(MPI_Comm comm, int source, int tag) {
  int found = 0;
  MPI_Iprobe(source, tag, comm, &found, MPI_STATUS_IGNORE);
  return found != 0;
}

// What the compute side knows of a dataset: enough to check the boxes it stages.
struct Shape {
  int ndim = 3;
  Box whole;
  std::vector<std::pair<std::string, DType>> fields;
  std::vector<int64_t> times;
};

void put_shape(Wire& w, const Dataset& d) {
  w.i64(d.ndim());
  for (int a = 0; a < 3; ++a) w.i64(d.box().lo[a]);
  for (int a = 0; a < 3; ++a) w.i64(d.box().hi[a]);
  w.i64(static_cast<int64_t>(d.fields().size()));
  for (const auto& f : d.fields()) {
    w.str(f.name);
    w.str(f.dtype.to_string());
  }
  w.ints(d.times());
}

Shape get_shape(Wire& w) {
  Shape s;
  s.ndim = static_cast<int>(w.i64());
  for (int a = 0; a < 3; ++a) s.whole.lo[a] = w.i64();
  for (int a = 0; a < 3; ++a) s.whole.hi[a] = w.i64();
  const int64_t n = w.i64();
  for (int64_t i = 0; i < n && !w.bad; ++i) {
    std::string name = w.str();
    auto dtype = DType::parse(w.str());
    if (!dtype.is_ok()) w.bad = true;
    s.fields.emplace_back(std::move(name), dtype.is_ok() ? dtype.value() : DType{});
  }
  s.times = w.ints();
  return s;
}

MPI_Comm node_comm(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node = MPI_COMM_NULL;
  const char* per_node = std::getenv(kRanksPerNodeEnv);
  if (per_node && std::atoi(per_node) > 0) {
    MPI_Comm_split(comm, rank / std::atoi(per_node), rank, &node);
  } else {
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  }
  return node;
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

void free_comm(MPI_Comm& c) {
  if (c != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&c);
  c = MPI_COMM_NULL;
}

}  // namespace

std::string HandOffReport::to_json() const {
  std::string reason_text;
  for (char c : reason) reason_text += (c == '"' || c == '\\') ? ' ' : c;
  return "{\"seconds\": " + std::to_string(seconds) + ", \"waited\": " + std::to_string(waited) + ", \"reason\": \"" +
         reason_text + "\", \"copied\": " + std::to_string(copied) + ", \"in_place\": " + std::to_string(in_place) +
         ", \"pieces\": " + std::to_string(pieces) + "}";
}

// ------------------------------------------------------------------------------------- the split
struct IoRanks::Impl {
  IoRanksOptions options;
  MPI_Comm node = MPI_COMM_NULL, compute = MPI_COMM_NULL, io = MPI_COMM_NULL;
  bool is_io = false;
  int io_rank = -1;          // compute ranks: their I/O rank in `node`
  std::vector<int> clients;  // I/O ranks: their compute ranks in `node`, in order
  std::byte* buffer = nullptr;
  size_t region_offset = 0, region_bytes = 0;
  size_t shared_bytes = 0;  // compute ranks: the top of the region given out by shared_memory()

  // The bytes of each region of a buffer shared by `peers` compute ranks: equal, on page boundaries when
  // they are that large.
  size_t region_of(size_t peers) const {
    size_t region = options.buffer_bytes / std::max<size_t>(peers, 1);
    return region >= 4096 ? region & ~size_t{4095} : region;
  }
  bool closed = false;
  // Compute ranks: the I/O side's state as far as this rank knows.
  int pending_durable = 0;       // flushes and closes not yet durable
  std::deque<int> pending_slot;  // per pending flush or close, in order: the slot it lent, or -1
  int64_t flushes_lent = 0;      // lent flushes so far: the next one takes slot flushes_lent % in_flight
  // Copies write_box made straight into the next slot, ahead of their flush: their bytes, and the dataset
  // that made them (one at a time). `evict` moves them to private memory when something else needs the
  // room (another dataset's flush, shared_memory()).
  size_t slot_fill = 0;
  const void* slot_owner = nullptr;
  std::function<Status()> evict;
  bool awaiting_release = false;  // the region's last batch is still being copied out
  Status error;                   // the first error the I/O side reported, until returned
  int64_t next_key = 0;

  ~Impl() {
    if (buffer) munmap(buffer, options.buffer_bytes);  // Local
    free_comm(compute);
    free_comm(io);
    free_comm(node);
  }

  void send_command(const Wire& w) const { send(node, io_rank, kCommand, w); }

  // Compute ranks: one reply of the I/O rank, booked; returns its kind (and `shape` of a kReady).
  Kind take_reply(Shape* shape = nullptr, Status* ready_error = nullptr) {
    Wire w = receive(node, io_rank, kReply);
    const auto kind = static_cast<Kind>(w.i64());
    Status s = get_status(w);
    if (kind == kReleased) awaiting_release = false;
    if (kind == kDurable) {
      --pending_durable;
      if (!pending_slot.empty()) pending_slot.pop_front();
    }
    if (kind == kReady) {
      if (shape && s.is_ok()) *shape = get_shape(w);
      if (ready_error) *ready_error = s;
    } else if (!s.is_ok() && error.is_ok()) {
      error = s;
    }
    if (w.bad) error = internal_error("a malformed reply from the I/O rank");
    return kind;
  }

  void drain() {
    while (has_message(node, io_rank, kReply)) take_reply();
  }
  void wait_release() {
    while (awaiting_release) take_reply();
  }
  void wait_durable(int at_most) {
    while (pending_durable > at_most) take_reply();
  }
  // A flush's copies lent to the I/O rank go to one of in_flight equal slots of the room below the
  // shared_memory() arrays, in turn.
  size_t slot_bytes() const {
    return ((region_bytes - shared_bytes) / static_cast<size_t>(options.in_flight)) & ~size_t{4095};
  }
  int next_slot() const { return static_cast<int>(flushes_lent % options.in_flight); }
  std::byte* slot_start(int k) const { return buffer + region_offset + static_cast<size_t>(k) * slot_bytes(); }
  bool slot_free(int k) const { return std::find(pending_slot.begin(), pending_slot.end(), k) == pending_slot.end(); }
  bool any_slot_lent() const {
    return std::any_of(pending_slot.begin(), pending_slot.end(), [](int k) { return k >= 0; });
  }
  // Room for `size` bytes of `owner`'s next flush in the next slot, or null: the slot holds copies of
  // another dataset, is still lent to a pending flush, lies under a batch being copied out, or is full.
  std::byte* slot_room(const void* owner, size_t size) {
    if (slot_owner && slot_owner != owner) return nullptr;
    drain();  // the I/O rank's answers so far: releases, durable flushes
    const int k = next_slot();
    if (awaiting_release || !slot_free(k) || size > slot_bytes() || slot_fill > slot_bytes() - size) return nullptr;
    std::byte* at = slot_start(k) + slot_fill;
    slot_fill += size;
    slot_owner = owner;
    return at;
  }
  // Moves copies made ahead into the slot out to their dataset's private memory. On an error (no memory)
  // some stay in the slot, which then stays theirs.
  Status evict_slot() {
    if (evict) HZIO_RETURN_IF_ERROR(evict());
    forget_slot();
    return Status::ok();
  }
  void forget_slot() {
    slot_fill = 0;
    slot_owner = nullptr;
    evict = nullptr;
  }
  Status pending_error() {
    if (error.is_ok()) return Status::ok();
    Status e = io_error("the I/O ranks failed: " + error.message());
    error = Status::ok();
    return e;
  }
  Status require_compute(const char* what) const {
    if (is_io) return invalid_argument(std::string(what) + " is a call of compute ranks; I/O ranks run serve()");
    if (closed) return invalid_argument(std::string(what) + " after IoRanks::close()");
    return Status::ok();
  }
  // Sends a create or open and waits for the I/O side's answer: the compute side's dataset, or the error.
  static Result<std::unique_ptr<IoDataset>> attach(const std::shared_ptr<Impl>& self, const Wire& command, int64_t key,
                                                   const std::string& path, const char* verb);
};

IoRanks::IoRanks(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

IoRanks::~IoRanks() {
  if (impl_ && !impl_->is_io && !impl_->closed && !mpi_finalized()) {
    Wire done;
    done.i64(kDone);
    done.i64(-1);
    impl_->send_command(done);
  }
}

bool IoRanks::is_io_rank() const { return impl_->is_io; }
MPI_Comm IoRanks::compute_comm() const { return impl_->compute; }
MPI_Comm IoRanks::io_comm() const { return impl_->io; }
const IoRanksOptions& IoRanks::options() const { return impl_->options; }
size_t IoRanks::region_bytes() const { return impl_->region_bytes; }

Result<void*> IoRanks::shared_memory(size_t bytes) {
  Impl& s = *impl_;
  HZIO_RETURN_IF_ERROR(s.require_compute("IoRanks::shared_memory"));
  const size_t rounded = (bytes + 63) & ~size_t{63};
  if (bytes == 0 || rounded > s.region_bytes - s.shared_bytes) {
    return invalid_argument("shared_memory(" + std::to_string(bytes) + "): this rank's region of " +
                            std::to_string(s.region_bytes) + " bytes has " +
                            std::to_string(s.region_bytes - s.shared_bytes) +
                            " left: give IoRanks::start a larger buffer_bytes");
  }
  s.wait_release();  // the region's last batch may lie where the new memory starts
  // The slots move with the room below the new memory: copies made ahead go to private memory, and lent
  // slots must be durable first.
  HZIO_RETURN_IF_ERROR(s.evict_slot());
  if (s.any_slot_lent()) s.wait_durable(0);
  s.shared_bytes += rounded;
  return static_cast<void*>(s.buffer + s.region_offset + s.region_bytes - s.shared_bytes);
}

Result<std::unique_ptr<IoRanks>> IoRanks::start(MPI_Comm comm, const IoRanksOptions& options) {
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  int world_rank = 0;
  MPI_Comm_rank(comm, &world_rank);
  impl->node = node_comm(comm);
  int n = 1, me = 0;
  MPI_Comm_size(impl->node, &n);
  MPI_Comm_rank(impl->node, &me);
  const int per_node = options.per_node;
  Status mine;
  if (per_node < 1 || n - per_node < per_node) {
    mine = invalid_argument("per_node=" + std::to_string(per_node) + " I/O ranks need a node of at least " +
                            std::to_string(2 * std::max(per_node, 1)) +
                            " ranks (one compute rank each); this node has " + std::to_string(n));
  } else if (options.buffer_bytes < 4096 || options.in_flight < 1) {
    mine = invalid_argument("buffer_bytes must be at least 4096 and in_flight at least 1");
  }
  HZIO_RETURN_IF_ERROR(parallel::agree(comm, mine));

  impl->is_io = me >= n - per_node;
  const int computes = n - per_node;
  auto io_of = [&](int r) { return computes + r % per_node; };
  std::vector<int> peers;  // the compute ranks served by this rank's I/O rank
  const int server = impl->is_io ? me : io_of(me);
  for (int r = 0; r < computes; ++r)
    if (io_of(r) == server) peers.push_back(r);
  if (impl->is_io) {
    impl->clients = peers;
  } else {
    impl->io_rank = server;
  }
  MPI_Comm_split(comm, impl->is_io ? MPI_UNDEFINED : 0, world_rank, &impl->compute);
  MPI_Comm_split(comm, impl->is_io ? 0 : MPI_UNDEFINED, world_rank, &impl->io);

  // Each I/O rank owns a POSIX shared-memory object, named after a token of rank 0 and its world rank.
  int64_t token[2] = {static_cast<int64_t>(getpid()), std::chrono::steady_clock::now().time_since_epoch().count()};
  MPI_Bcast(token, 2, MPI_INT64_T, 0, comm);
  std::vector<int> world_of(static_cast<size_t>(n));
  MPI_Allgather(&world_rank, 1, MPI_INT, world_of.data(), 1, MPI_INT, impl->node);
  auto name_of = [&](int node_rank) {
    return "/hzio-io-" + std::to_string(token[0]) + "-" + std::to_string(token[1]) + "-" +
           std::to_string(world_of[static_cast<size_t>(node_rank)]);
  };
  const std::string name = name_of(server);
  const size_t bytes = options.buffer_bytes;
  mine = Status::ok();
  if (impl->is_io) {
    // The object's memory is taken now, not on the first write into it: a shared-memory file system
    // (/dev/shm) too small for the buffer is an error here rather than a SIGBUS in a compute rank's copy
    // later, and the first timestep does not pay for allocating the pages.
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    int reserved = 0;
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      mine = io_error("cannot make the shared buffer " + name + " of " + std::to_string(bytes) +
                      " bytes: " + std::strerror(errno));
    } else if ((reserved = posix_fallocate(fd, 0, static_cast<off_t>(bytes))) != 0) {
      mine = io_error("cannot reserve the " + std::to_string(bytes) + " bytes of the shared buffer " + name +
                      " in the node's shared memory (/dev/shm): " + std::strerror(reserved) +
                      "; give IoRanks::start a smaller buffer_bytes, or the node a larger /dev/shm");
    } else {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) {
        mine = io_error("cannot map the shared buffer " + name + ": " + std::strerror(errno));
      } else {
        impl->buffer = static_cast<std::byte*>(p);
      }
    }
    if (fd >= 0) ::close(fd);
  }
  if (const Status made = parallel::agree(comm, mine); !made.is_ok()) {
    if (impl->is_io) shm_unlink(name.c_str());
    return made;
  }
  if (!impl->is_io) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    void* p = fd < 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      mine = io_error("cannot map the shared buffer " + name + " of this node's I/O rank: " + std::strerror(errno));
    } else {
      impl->buffer = static_cast<std::byte*>(p);
    }
    if (fd >= 0) ::close(fd);
    const auto at = std::find(peers.begin(), peers.end(), me) - peers.begin();
    impl->region_bytes = impl->region_of(peers.size());
    impl->region_offset = static_cast<size_t>(at) * impl->region_bytes;
#ifdef MADV_POPULATE_WRITE
    // Map this rank's region now (its pages exist already): the first flush copies without page faults.
    if (impl->buffer && impl->region_bytes >= 4096)
      ::madvise(impl->buffer + impl->region_offset, impl->region_bytes, MADV_POPULATE_WRITE);
#endif
  }
  const Status mapped = parallel::agree(comm, mine);
  // Mapped by every rank of the node (or failed): the name goes; the memory lives until the last unmap.
  if (impl->is_io) shm_unlink(name.c_str());
  HZIO_RETURN_IF_ERROR(mapped);
  return std::unique_ptr<IoRanks>(new IoRanks(std::move(impl)));
}

Status IoRanks::wait() {
  Impl& s = *impl_;
  HZIO_RETURN_IF_ERROR(s.require_compute("IoRanks::wait"));
  s.wait_release();
  s.wait_durable(0);
  return s.pending_error();
}

Status IoRanks::close() {
  Impl& s = *impl_;
  if (s.is_io || s.closed) return Status::ok();
  const Status waited = wait();
  Wire done;
  done.i64(kDone);
  done.i64(-1);
  s.send_command(done);
  s.closed = true;
  return waited;
}

// ------------------------------------------------------------------------------------- the compute side
struct IoDataset::Impl {
  std::shared_ptr<IoRanks::Impl> io;  // shared: a dataset outliving its IoRanks fails its calls, safely
  int64_t key = 0;
  Shape shape;
  struct Staged {
    std::string field;
    int64_t time = 0;
    Box box;
    const std::byte* data = nullptr;
    size_t bytes = 0;
    util::LargeBuffer copy{util::Pages::kSmall};  // owns `data` when copied to private memory
    bool borrowed = false;
    bool ahead = false;  // copied into the next slot of the node's buffer (IoRanks::Impl::slot_room)
  };
  // Whether a borrowed box lies in this rank's shared memory (IoRanks::shared_memory): then it is handed
  // over where it lies.
  bool in_place(const Staged& b) const {
    const std::byte* top = io->buffer + io->region_offset + io->region_bytes;
    return b.borrowed && b.data >= top - io->shared_bytes && b.data + b.bytes <= top;
  }
  std::vector<Staged> staged;
  HandOffReport last;
  bool closed = false;

  ~Impl() {
    if (io && io->slot_owner == this) io->forget_slot();  // staged copies dropped unflushed
  }

  Status stage(const Box& box, std::string_view field, int64_t time, const void* data, size_t size, bool borrow) {
    if (closed) return invalid_argument("write_box on a closed dataset");
    auto f = std::find_if(shape.fields.begin(), shape.fields.end(), [&](const auto& p) { return p.first == field; });
    if (f == shape.fields.end()) return invalid_argument("no field '" + std::string(field) + "' in the dataset");
    if (box.empty() || !shape.whole.contains(box)) {
      return invalid_argument("box " + box.to_string() + " is empty or not inside the dataset " +
                              shape.whole.to_string());
    }
    const auto want = static_cast<size_t>(box.sample_count()) * f->second.bytes();
    if (size != want) {
      return invalid_argument("box " + box.to_string() + " of field '" + f->first + "' needs " + std::to_string(want) +
                              " bytes, got " + std::to_string(size));
    }
    if (!data) return invalid_argument("write_box: data is NULL");
    Staged s{.field = f->first,
             .time = time,
             .box = box,
             .data = static_cast<const std::byte*>(data),
             .bytes = size,
             .borrowed = borrow};
    if (!borrow) {
      // Straight into the node's buffer when the next flush's slot has room: the flush then hands the
      // bytes over without copying them again. Otherwise into private memory, copied at the flush.
      if (std::byte* at = io->slot_room(this, size)) {
        std::memcpy(at, data, size);
        s.data = at;
        s.ahead = true;
        if (!io->evict) io->evict = [this] { return move_out_of_slot(); };
      } else {
        HZIO_RETURN_IF_ERROR(copy_privately(s));
      }
    }
    staged.push_back(std::move(s));
    return Status::ok();
  }

  Status copy_privately(Staged& b) {
    try {
      b.copy.reset(b.bytes);
    } catch (const std::bad_alloc&) {
      return io_error("out of memory staging a write of " + std::to_string(b.bytes) + " bytes");
    }
    std::memcpy(b.copy.data(), b.data, b.bytes);
    b.data = b.copy.data();
    b.ahead = false;
    return Status::ok();
  }
  // The boxes copied ahead into the slot, moved to private memory (IoRanks::Impl::evict_slot).
  Status move_out_of_slot() {
    for (Staged& b : staged)
      if (b.ahead) HZIO_RETURN_IF_ERROR(copy_privately(b));
    return Status::ok();
  }

  Result<HandOffReport> flush();
};

IoDataset::IoDataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IoDataset::~IoDataset() = default;

Status IoDataset::write_box(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes) {
  return impl_->stage(box, field, time, data, size_bytes, false);
}

Status IoDataset::write_box_borrowed(const Box& box, std::string_view field, int64_t time, const void* data,
                                     size_t size_bytes) {
  return impl_->stage(box, field, time, data, size_bytes, true);
}

const HandOffReport& IoDataset::last_flush_report() const { return impl_->last; }
int IoDataset::ndim() const { return impl_->shape.ndim; }
Box IoDataset::box() const { return impl_->shape.whole; }
const std::vector<std::pair<std::string, DType>>& IoDataset::fields() const { return impl_->shape.fields; }
const std::vector<int64_t>& IoDataset::times() const { return impl_->shape.times; }

Result<HandOffReport> IoDataset::flush() {
  if (impl_->closed) return invalid_argument("flush on a closed dataset");
  return impl_->flush();
}

Result<HandOffReport> IoDataset::Impl::flush() {
  IoRanks::Impl& s = *io;
  HZIO_RETURN_IF_ERROR(s.require_compute("flush"));
  HandOffReport report;
  const double t0 = util::now_seconds();
  auto waiting = [&](const char* reason, auto wait) {
    const double w0 = util::now_seconds();
    wait();
    const double w = util::now_seconds() - w0;
    if (w > 1e-4) {
      report.waited += w;
      if (report.reason.empty()) report.reason = reason;
    }
  };
  s.drain();
  waiting("timesteps in flight", [&] { s.wait_durable(s.options.in_flight - 1); });
  waiting("buffer full", [&] { s.wait_release(); });
  // Every box in slabs along its last axis, as many planes as fit what is left of the region.
  const int axis = std::clamp(shape.ndim, 1, 3) - 1;
  const size_t room = s.region_bytes - s.shared_bytes;  // for copies
  // Whether this flush can go: an error the I/O side reported, or a plane larger than the room, on any
  // compute rank stops it on every one before anything is sent (a rank sending alone would wait forever).
  Status mine = s.error.is_ok() ? Status::ok() : io_error("the I/O ranks failed: " + s.error.message());
  // Copies another dataset made ahead into the slot move out of this flush's way.
  if (s.slot_owner && s.slot_owner != this) {
    const Status moved = s.evict_slot();
    if (mine.is_ok()) mine = moved;
  }
  for (const Staged& b : staged) {
    const auto planes = b.box.extent(axis);
    const size_t plane = b.bytes / static_cast<size_t>(planes);
    if (mine.is_ok() && !in_place(b) && !b.ahead && plane > room) {
      mine =
          invalid_argument("one plane of " + std::to_string(plane) + " bytes does not fit the " + std::to_string(room) +
                           " bytes of this rank's region left for copies: give "
                           "IoRanks::start a larger buffer_bytes");
    }
  }
  s.error = Status::ok();
  HZIO_RETURN_IF_ERROR(parallel::agree(s.compute, mine));
  // When this flush's copies fit one of in_flight equal slots of the room, they go to the next slot in
  // turn (write_box put some there already: `ahead`) and are lent: the I/O rank writes from them without
  // copying them out. Waiting above for all but in_flight - 1 earlier flushes left that slot free (the
  // pending ones hold the other slots). Larger flushes are copied out batch by batch from the start of the
  // room, once no lent bytes are pending.
  size_t ahead = 0, copies = 0;
  for (const Staged& b : staged) {
    if (b.ahead)
      ahead += b.bytes;
    else if (!in_place(b))
      copies += b.bytes;
  }
  const int slot = s.next_slot();
  const bool lend = ahead + copies > 0 && ahead + copies <= s.slot_bytes();
  std::vector<Piece> batch;
  size_t at = 0;
  auto hand_over = [&](Op op) {
    Wire w;
    w.i64(op);
    w.i64(key);
    put_pieces(w, batch);
    s.send_command(w);
    s.awaiting_release = true;
    batch.clear();
    at = 0;
  };
  const auto hand_where_it_lies = [&](const Staged& b, bool lent) {
    batch.push_back(Piece{b.field, b.time, b.box, b.data - s.buffer, static_cast<int64_t>(b.bytes), lent});
    (in_place(b) ? report.in_place : report.copied) += static_cast<int64_t>(b.bytes);
    ++report.pieces;
  };
  if (lend) {
    at = static_cast<size_t>(slot) * s.slot_bytes() + ahead;
    ++s.flushes_lent;
  } else {
    if (ahead > 0) {  // too much for the slot after all: what write_box put there is copied out first
      for (const Staged& b : staged)
        if (b.ahead) hand_where_it_lies(b, false);
      hand_over(kStage);
      waiting("buffer full", [&] { s.wait_release(); });
    }
    if (s.any_slot_lent()) waiting("timesteps in flight", [&] { s.wait_durable(0); });
  }
  if (s.slot_owner == this) s.forget_slot();
  for (const Staged& b : staged) {
    if (in_place(b) || b.ahead) {
      if (in_place(b) || lend) hand_where_it_lies(b, !in_place(b));
      continue;
    }
    const int64_t planes = b.box.extent(axis);
    const size_t plane = b.bytes / static_cast<size_t>(planes);
    for (int64_t z = 0; z < planes;) {
      if (at + plane > room) {
        hand_over(kStage);
        waiting("buffer full", [&] { s.wait_release(); });
      }
      const int64_t n = std::min<int64_t>(planes - z, static_cast<int64_t>((room - at) / plane));
      Piece p{b.field, b.time, b.box, static_cast<int64_t>(s.region_offset + at), n * static_cast<int64_t>(plane),
              lend};
      p.box.lo[axis] = b.box.lo[axis] + z;
      p.box.hi[axis] = p.box.lo[axis] + n;
      std::memcpy(s.buffer + p.at, b.data + static_cast<size_t>(z) * plane, static_cast<size_t>(p.bytes));
      at += static_cast<size_t>(p.bytes);
      report.copied += p.bytes;
      ++report.pieces;
      batch.push_back(std::move(p));
      z += n;
    }
  }
  staged.clear();
  hand_over(kFlush);
  ++s.pending_durable;
  s.pending_slot.push_back(lend ? slot : -1);
  MPI_Request request;
  MPI_Ibarrier(s.compute, &request);  // Collective: every rank's boxes are in its node's buffer
  parallel::wait(request);
  report.seconds = util::now_seconds() - t0;
  last = report;
  return report;
}

Status IoDataset::close() {
  Impl& d = *impl_;
  if (d.closed) return Status::ok();
  HZIO_RETURN_IF_ERROR(d.io->require_compute("close"));
  const auto flushed = d.flush();
  Wire w;
  w.i64(kClose);
  w.i64(d.key);
  d.io->send_command(w);
  ++d.io->pending_durable;
  d.io->pending_slot.push_back(-1);
  d.closed = true;
  d.io->wait_release();
  d.io->wait_durable(0);
  const Status e = d.io->pending_error();
  if (!flushed.is_ok()) return flushed.status();
  return e;
}

Result<std::unique_ptr<IoDataset>> IoRanks::Impl::attach(const std::shared_ptr<Impl>& self, const Wire& command,
                                                         int64_t key, const std::string& path, const char* verb) {
  self->send_command(command);
  Shape shape;
  Status ready;
  while (self->take_reply(&shape, &ready) != kReady) {
  }
  if (!ready.is_ok())
    return io_error("the I/O ranks could not " + std::string(verb) + " " + path + ": " + ready.message());
  auto d = std::make_unique<IoDataset::Impl>();
  d->io = self;
  d->key = key;
  d->shape = std::move(shape);
  return std::unique_ptr<IoDataset>(new IoDataset(std::move(d)));
}

Result<std::unique_ptr<IoDataset>> IoRanks::create(const std::string& path, const CreateOptions& options,
                                                   const ParallelOptions& parallel) {
  Impl& s = *impl_;
  HZIO_RETURN_IF_ERROR(s.require_compute("IoRanks::create"));
  if (parallel.index_space == IndexSpace::kLocal && parallel.partitions > 1)
    return unsupported("a local index space through I/O ranks is not supported");
  const int64_t key = s.next_key++;
  Wire w;
  w.i64(kCreate);
  w.i64(key);
  w.str(path);
  put_create(w, options);
  put_parallel(w, parallel);
  return Impl::attach(impl_, w, key, path, "create");
}

Result<std::unique_ptr<IoDataset>> IoRanks::open(const std::string& path, const ParallelOptions& parallel) {
  Impl& s = *impl_;
  HZIO_RETURN_IF_ERROR(s.require_compute("IoRanks::open"));
  if (parallel.index_space == IndexSpace::kLocal) return unsupported("a mosaic through I/O ranks is not supported");
  const int64_t key = s.next_key++;
  Wire w;
  w.i64(kOpen);
  w.i64(key);
  w.str(path);
  put_parallel(w, parallel);
  return Impl::attach(impl_, w, key, path, "open");
}

// ------------------------------------------------------------------------------------- the I/O side
namespace {

struct Command {
  int client = 0;
  Op op = kDone;
  int64_t key = 0;
  Wire wire;  // the rest of the message
};

class Server {
 public:
  explicit Server(IoRanks::Impl& io) : io_(io) {}

  Status run() {
    for (;;) {
      std::vector<Command> got = next_commands();
      // Every client of every I/O rank issued the same op on the same key, and a create or an open with
      // the same path and options (the calls are Collective over the compute ranks). Anything else is a
      // program that broke that rule, or a malformed message: no answer can be right, and compute ranks
      // waiting for one would wait forever, so the job stops with the reason.
      int64_t mine[6];
      for (size_t i = 0; i < got.size(); ++i) {
        const Command& c = got[i];
        const bool named = c.op == kCreate || c.op == kOpen;
        const std::string_view bytes(reinterpret_cast<const char*>(c.wire.bytes().data()), c.wire.bytes().size());
        const int64_t v[3] = {c.op >= kCreate && c.op <= kDone ? static_cast<int64_t>(c.op) : -1, c.key,
                              named ? static_cast<int64_t>(std::hash<std::string_view>{}(bytes) >> 1) : 0};
        for (int k = 0; k < 3; ++k) {
          mine[2 * k] = i == 0 ? v[k] : std::max(mine[2 * k], v[k]);
          mine[2 * k + 1] = i == 0 ? -v[k] : std::max(mine[2 * k + 1], -v[k]);
        }
      }
      int64_t all[6];
      parallel::allreduce(mine, all, 6, MPI_INT64_T, MPI_MAX, io_.io);
      if (all[0] != -all[1] || all[2] != -all[3] || all[4] != -all[5] || all[0] < 0) {
        std::fprintf(stderr,
                     "hzio: the compute ranks disagree on their next I/O call (create, open, flush, close or "
                     "IoRanks::close, which every compute rank makes in the same order, with the same path and "
                     "options), or sent a malformed one: stopping the job\n");
        MPI_Abort(MPI_COMM_WORLD, 70);
      }
      if (got[0].op == kDone) break;
      if (got[0].op == kCreate || got[0].op == kOpen) {
        attach(got);
      } else if (got[0].op == kFlush) {
        commit(got, false);
      } else {
        commit(got, true);
      }
    }
    open_.clear();  // datasets the compute ranks did not close: dropped, their last commit stays
    return Status::ok();
  }

 private:
  struct Served {
    std::unique_ptr<ParallelDataset> ds;
    Status error;  // the first error of a stage, reported at the next flush or close
  };

  void reply(int client, Kind kind, const Status& s, const Dataset* shape = nullptr) {
    Wire w;
    w.i64(kind);
    put_status(w, s);
    if (shape) put_shape(w, *shape);
    send(io_.node, client, kReply, w);
  }

  // The next command of every client, copying out (and releasing) the batches staged before it.
  std::vector<Command> next_commands() {
    std::vector<Command> got;
    for (int client : io_.clients) {
      for (;;) {
        Command c;
        c.client = client;
        c.wire = receive(io_.node, client, kCommand);
        c.op = static_cast<Op>(c.wire.i64());
        c.key = c.wire.i64();
        if (c.op == kStage || c.op == kFlush) stage(c);
        if (c.op != kStage) {
          got.push_back(std::move(c));
          break;
        }
      }
    }
    return got;
  }

  void stage(Command& c) {
    std::vector<Piece> pieces = get_pieces(c.wire);
    auto it = open_.find(c.key);
    Status s = c.wire.bad ? internal_error("a malformed batch from a compute rank") : Status::ok();
    // The sending rank's region of the buffer: a piece must lie in it.
    const size_t region = io_.region_of(io_.clients.size());
    const auto index =
        static_cast<size_t>(std::find(io_.clients.begin(), io_.clients.end(), c.client) - io_.clients.begin());
    const auto first = static_cast<int64_t>(index * region), end = first + static_cast<int64_t>(region);
    for (const Piece& p : pieces) {
      if (!s.is_ok() || it == open_.end() || !it->second.ds) break;
      if (p.at < first || p.bytes < 0 || p.at > end || p.bytes > end - p.at) {
        s = internal_error("a batch names bytes outside the sending rank's region of the shared buffer");
        break;
      }
      const auto bytes = static_cast<size_t>(p.bytes);
      // Lent bytes stay put until this dataset's next flush has made them durable (the compute rank waits
      // for that answer before it writes there again); the others are copied out now.
      s = p.lent ? it->second.ds->write_box_borrowed(p.box, p.field, p.time, io_.buffer + p.at, bytes)
                 : it->second.ds->write_box(p.box, p.field, p.time, io_.buffer + p.at, bytes);
    }
    if (it != open_.end() && !s.is_ok() && it->second.error.is_ok()) it->second.error = s;
    reply(c.client, kReleased, Status::ok());
  }

  void attach(std::vector<Command>& got) {
    Command& c = got[0];
    const std::string path = c.wire.str();
    Served served;
    Status made;
    if (c.op == kCreate) {
      auto options = get_create(c.wire);
      ParallelOptions parallel = get_parallel(c.wire);
      threads(parallel);
      if (c.wire.bad || !options.is_ok()) {
        made = parallel::agree(io_.io, c.wire.bad ? internal_error("a malformed create") : options.status());
      } else {
        made = parallel::agree(io_.io, Status::ok());
        if (made.is_ok()) {
          auto ds = ParallelDataset::create(io_.io, path, options.value(), parallel);
          made = ds.status();
          if (ds.is_ok()) served.ds = std::move(ds).value();
        }
      }
    } else {
      ParallelOptions parallel = get_parallel(c.wire);
      threads(parallel);
      made = parallel::agree(io_.io, c.wire.bad ? internal_error("a malformed open") : Status::ok());
      if (made.is_ok()) {
        auto ds = ParallelDataset::open(io_.io, path, parallel, true);
        made = ds.status();
        if (ds.is_ok()) served.ds = std::move(ds).value();
      }
    }
    if (!made.is_ok()) served.error = made;
    for (const Command& each : got) reply(each.client, kReady, made, served.ds ? &served.ds->dataset() : nullptr);
    if (!made.is_ok()) served.ds.reset();  // nothing committed: dropped
    open_[c.key] = std::move(served);
  }

  // A flush, or (`close`) a close: an earlier error of the dataset on any I/O rank is everyone's answer.
  void commit(std::vector<Command>& got, bool close) {
    auto it = open_.find(got[0].key);
    Status before = it == open_.end() ? internal_error("no dataset of that key") : it->second.error;
    if (before.is_ok() && !it->second.ds) before = io_error("the dataset is closed on the I/O side");
    Status s = parallel::agree(io_.io, before);
    if (s.is_ok()) s = close ? it->second.ds->close() : it->second.ds->flush().status();  // errors agree
    if (it != open_.end()) {
      if (!s.is_ok() && it->second.error.is_ok()) it->second.error = s;
      if (close) open_.erase(it);  // closed, or dropped after an error: its last commit stays
    }
    for (const Command& c : got) reply(c.client, kDurable, s);
  }

  // threads 0: the node's cores, shared by its I/O ranks.
  void threads(ParallelOptions& p) const {
    if (p.threads > 0) return;
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    p.threads = std::max(1, cores / io_.options.per_node);
  }

  IoRanks::Impl& io_;
  std::map<int64_t, Served> open_;
};

}  // namespace

Status IoRanks::serve() {
  Impl& s = *impl_;
  if (!s.is_io) return invalid_argument("serve() runs on I/O ranks only (is_io_rank())");
  return Server(s).run();
}

}  // namespace hzio
