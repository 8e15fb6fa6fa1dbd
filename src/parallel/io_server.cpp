// The I/O side of dedicated I/O ranks (hzio/io_ranks.hpp): IoRanks::serve takes each command of its compute
// ranks, agrees on it with the other I/O ranks and runs it with ParallelDataset over the I/O ranks'
// communicator, copying staged bytes out of the node's shared buffer or writing lent ones where they lie.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hzio/io_ranks.hpp"
#include "parallel/io_ranks_impl.hpp"
#include "parallel/io_wire.hpp"
#include "parallel/mpi_util.hpp"

namespace hzio {

using namespace parallel::io_wire;  // NOLINT: the message format this file reads and answers

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
    // A dataset that failed is never flushed again (its error answers its later flushes and its close):
    // its later pieces are released without being staged, so that they do not pile up until the close.
    for (const Piece& p : pieces) {
      if (!s.is_ok() || it == open_.end() || !it->second.ds || !it->second.error.is_ok()) break;
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
