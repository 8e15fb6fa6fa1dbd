// Dedicated I/O ranks: compute ranks hand their boxes to an I/O rank of their node through node-local
// shared memory and compute on, while the I/O ranks run the collective write (ParallelDataset) among
// themselves. The files are byte-identical to the synchronous collective write of the same boxes.
// docs/guide/parallel-io.md "I/O ranks".
//
//   auto io = hzio::IoRanks::start(MPI_COMM_WORLD, {.per_node = 1, .buffer_bytes = 64 << 20}).value();
//   if (io->is_io_rank()) {
//     io->serve();                                   // until every compute rank has closed
//   } else {
//     auto ds = io->create("out.idx", options).value();   // Collective over io->compute_comm()
//     for (...) { ds->write_box(box, "t", step, data, bytes); ds->flush(); }   // flush: into the buffer
//     ds->close();                                   // waits until every timestep is durable
//     io->close();
//   }
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hzio/parallel.hpp"

namespace hzio {

struct IoRanksOptions {
  int per_node = 1;                         // I/O ranks per node: its last ranks; each needs a compute rank
  size_t buffer_bytes = size_t{256} << 20;  // each I/O rank's shared buffer, cut into one region per client
  int in_flight = 2;                        // flushes of a compute rank that may await the disk at once
};

// What a compute rank's IoDataset::flush() did.
struct HandOffReport {
  double seconds = 0;    // the whole call
  double waited = 0;     // of which waiting for the I/O side
  std::string reason;    // why it waited first: "timesteps in flight", "buffer full", "in-place arrays in flight" or ""
  int64_t copied = 0;    // bytes copied into the node's buffer
  int64_t in_place = 0;  // bytes handed over where they lay (borrowed from IoRanks::shared_memory)
  int64_t pieces = 0;    // slabs they went in (more than the boxes when a box exceeds the rank's region)

  // Local. The report as a JSON object.
  std::string to_json() const;
};

class IoDataset;

class IoRanks {
 public:
  // Collective over `comm`. Splits each node's ranks (MPI_Comm_split_type SHARED, or groups of
  // $HZIO_RANKS_PER_NODE consecutive ranks when that is set) into compute ranks and `per_node` I/O ranks
  // (the node's last ones); each I/O rank owns a POSIX shared-memory buffer of `buffer_bytes`, cut into
  // equal regions, one per compute rank it serves. The buffer's memory is reserved here (a node whose
  // /dev/shm cannot hold it fails now, not at a later copy) and each compute rank maps its region.
  // Errors (kInvalidArgument: per_node or the buffer too small for the node; kIo: shared memory refused
  // or too small) agree on every rank.
  static Result<std::unique_ptr<IoRanks>> start(MPI_Comm comm, const IoRanksOptions& options = {});
  // Local. A compute rank that did not close() tells its I/O rank it is done (the datasets it did not
  // close keep their last commit); while other compute ranks still make calls, that breaks their order and
  // stops the job (see serve()). The communicators and the shared memory go with the last IoDataset.
  ~IoRanks();
  IoRanks(const IoRanks&) = delete;
  IoRanks& operator=(const IoRanks&) = delete;

  // Local.
  bool is_io_rank() const;
  // Local. The compute ranks' communicator (MPI_COMM_NULL on I/O ranks); owned by this object.
  MPI_Comm compute_comm() const;
  // Local. The I/O ranks' communicator across nodes (MPI_COMM_NULL on compute ranks); owned by this object.
  MPI_Comm io_comm() const;
  // Local. The options start() was given, and the bytes of this compute rank's region (0 on I/O ranks).
  const IoRanksOptions& options() const;
  size_t region_bytes() const;

  // Local, compute ranks. `bytes` of this rank's region of the node's buffer, for the caller's arrays
  // (taken from the region's end, which leaves less room for copies; held until this object goes). A box
  // staged with IoDataset::write_box_borrowed from such memory is handed over where it lies, without a
  // copy: flush() returns at once. It must then stay unchanged until the next flush() or wait() returns
  // (the I/O rank writes it from where it lies, and the next flush() returns once that is durable), as
  // with two arrays that a stencil code swaps each step.
  // Waits until the I/O rank has copied out the rank's last batch, which may lie in that memory.
  // Errors: kInvalidArgument (no room left).
  Result<void*> shared_memory(size_t bytes);

  // Collective over the I/O ranks. Runs the creates, writes and commits the compute ranks hand over,
  // until every compute rank has closed. Errors of a dataset go to the compute ranks. Compute ranks that
  // disagree on their next call (create, open, flush, close, which each makes in the same order with the
  // same path and options) stop the job with MPI_Abort and the reason on stderr: no answer could be
  // right, and ranks waiting for one would wait forever.
  Status serve();

  // Collective over the compute ranks. The I/O ranks create the dataset (ParallelDataset::create over
  // io_comm() with these options; parallel.threads 0: the node's cores shared by its I/O ranks).
  // Errors: the I/O side's (kIo, with its message), on every compute rank.
  Result<std::unique_ptr<IoDataset>> create(const std::string& path, const CreateOptions& options,
                                            const ParallelOptions& parallel = {});
  // Collective over the compute ranks. The I/O ranks open an existing dataset for writing.
  Result<std::unique_ptr<IoDataset>> open(const std::string& path, const ParallelOptions& parallel = {});

  // Local, compute ranks. Waits until every flush of this rank so far is durable; returns the first
  // error the I/O side reported (kIo, with its message) and forgets it.
  Status wait();
  // Local, compute ranks: each calls it once, after its last dataset call. wait(), then tells the I/O
  // rank this rank is done.
  Status close();

  struct Impl;

 private:
  explicit IoRanks(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
  friend class IoDataset;
};

// A dataset written through I/O ranks, on a compute rank. Compute ranks never open its files.
class IoDataset {
 public:
  // Local. Staged boxes not flushed are dropped; the I/O side keeps the dataset open until close() or
  // the end of serve().
  ~IoDataset();
  IoDataset(const IoDataset&) = delete;
  IoDataset& operator=(const IoDataset&) = delete;

  // Local. Stages a box of this rank, as ParallelDataset::write_box (copies `data`).
  Status write_box(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes);
  // Local. As write_box without the copy: `data` must stay valid and unchanged until flush() returns
  // (it is copied into the node's buffer then), and, for memory from IoRanks::shared_memory (handed over
  // where it lies), until the following flush() or IoRanks::wait() returns.
  Status write_box_borrowed(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes);
  // Collective over the compute ranks. Copies every staged box into this rank's region of its node's
  // buffer and returns once every compute rank's boxes are there: the I/O ranks write and commit them
  // while the caller computes on. Waits while `in_flight` earlier flushes are not durable, and while
  // the region is full (a box larger than the region goes in slabs along its last axis), and before it
  // returns (errors too) until earlier flushes' arrays of IoRanks::shared_memory are durable. An error the
  // I/O side reported for an earlier flush (kIo), or a plane larger than a rank's room for copies
  // (kInvalidArgument), on any compute rank is every compute rank's answer, and nothing is handed over.
  Result<HandOffReport> flush();
  // Collective over the compute ranks. flush(), then waits until the dataset is committed and closed
  // on the I/O side.
  Status close();
  // Local.
  const HandOffReport& last_flush_report() const;
  // Local. The dataset's dimensions, logical box, fields (name and sample type) and timesteps, as the I/O
  // side had them at create() or open().
  int ndim() const;
  Box box() const;
  const std::vector<std::pair<std::string, DType>>& fields() const;
  const std::vector<int64_t>& times() const;

  struct Impl;

 private:
  explicit IoDataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class IoRanks;
};

}  // namespace hzio
