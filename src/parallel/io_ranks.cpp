// Dedicated I/O ranks (hzio/io_ranks.hpp): the node split, the shared buffers and the compute side's
// hand-off. The I/O side's loop is io_server.cpp; the messages between the two, io_wire.hpp.
//
// Messages go over the node communicator. Every compute rank issues the same commands in the same order
// (they are Collective over the compute ranks), so the I/O ranks take one command of each of their
// clients and agree on it before running it collectively.
#include "hzio/io_ranks.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "parallel/io_ranks_impl.hpp"
#include "parallel/io_wire.hpp"
#include "parallel/mpi_util.hpp"
#include "parallel/node_memory.hpp"
#include "util/clock.hpp"
#include "util/large_buffer.hpp"

namespace hzio {

using namespace parallel::io_wire;  // NOLINT: the message format of this file and io_server.cpp

namespace {

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
IoRanks::Impl::~Impl() {
  if (buffer) munmap(buffer, options.buffer_bytes);  // Local
  free_comm(compute);
  free_comm(io);
  free_comm(node);
}

void IoRanks::Impl::send_command(const Wire& w) const { send(node, io_rank, kCommand, w); }

Kind IoRanks::Impl::take_reply(Shape* shape, Status* ready_error) {
  Wire w = receive(node, io_rank, kReply);
  const auto kind = static_cast<Kind>(w.i64());
  Status s = get_status(w);
  if (kind == kReleased) awaiting_release = false;
  if (kind == kDurable) {
    --pending_durable;
    if (!pending.empty()) pending.pop_front();
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

void IoRanks::Impl::drain() {
  while (has_message(node, io_rank, kReply)) take_reply();
}

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
  impl->node = parallel::node_comm(comm);
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
    const Result<int> fd = parallel::make_shared_object(
        name, bytes, "shared buffer", "; give IoRanks::start a smaller buffer_bytes, or the node a larger /dev/shm");
    mine = fd.status();
    if (fd.is_ok()) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.value(), 0);
      if (p == MAP_FAILED) {
        mine = io_error("cannot map the shared buffer " + name + ": " + std::strerror(errno));
      } else {
        impl->buffer = static_cast<std::byte*>(p);
      }
      ::close(fd.value());
    }
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
    HZIO_RETURN_IF_ERROR(util::copy_staged(b.copy, b.data, b.bytes));
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
  if (Status agreed = parallel::agree(s.compute, mine); !agreed.is_ok()) {
    // A refused flush returns too, and arrays an earlier flush lent in place may change after it.
    waiting("in-place arrays in flight", [&] { s.wait_in_place_durable(0); });
    return agreed;
  }
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
    // Copies fill the room from its start, over any lent slot; a flush of in-place arrays alone copies nothing.
    if (copies > 0 && s.any_slot_lent()) waiting("timesteps in flight", [&] { s.wait_durable(0); });
  }
  if (s.slot_owner == this) s.forget_slot();
  for (const Staged& b : staged) {
    if (in_place(b) || b.ahead) {
      if (in_place(b) || lend) hand_where_it_lies(b, true);
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
  s.pending.push_back({lend ? slot : -1, report.in_place > 0});
  // Arrays an earlier flush lent in place may change once this flush returns: they must be written.
  waiting("in-place arrays in flight", [&] { s.wait_in_place_durable(1); });
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
  d.io->pending.push_back({});
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

}  // namespace hzio
