// hzio::ParallelDataset: every MPI rank hands over its own boxes; flush() restructures, HZ-orders,
// aggregates to one rank per data file and writes. Public C++ API; needs MPI (include only in MPI codes).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "hzio/dataset.hpp"
#include "hzio/write_report.hpp"

namespace hzio {

enum class AggregatorPlacement { kLocalized, kUniform };

// Where partitions index their samples (ParallelOptions::partitions > 1).
enum class IndexSpace {
  kGlobal,  // one dataset; its files are those of an unpartitioned write
  kLocal,   // one dataset per partition, with the bitmask's characters after the partition template, and
            // an OpenVisus .midx mosaic placing them (docs/guide/parallel-io.md "Partitions")
};

struct ParallelOptions {
  // kLocalized: a file's aggregator is one of the ranks holding its samples, balanced over ranks;
  // kUniform: aggregators spread evenly over the rank space regardless of data (for comparison).
  AggregatorPlacement placement = AggregatorPlacement::kLocalized;
  int aggregator_count = 0;                     // at most this many distinct aggregators; 0 = no cap
  size_t aggregator_bytes = size_t{256} << 20;  // memory an aggregator may take per round
  bool durable = true;                          // fsync data files and the .idx
  int threads = 1;                              // worker threads per rank (ranks usually fill the cores)
  bool verify_checksums = true;                 // as OpenOptions::verify_checksums
  bool allow_outside_folder = false;            // as OpenOptions::allow_outside_folder
  // Domain partitioning in global index space: a power of two R. The bitmask's first log2(R) characters
  // cut the domain into R partitions; the ranks whose samples lie mostly in one form a group that
  // aggregates and writes that partition's data files within its own communicator, and the shared (coarse)
  // files are merged by one rank each. The files are byte-identical to an unpartitioned write
  // (docs/guide/parallel-io.md "Partitions"). 1: one group of every rank.
  int partitions = 1;
  // kLocal: create() writes the .midx next to `path` ("sim.idx" gives "sim.midx", "sim_p0.idx", ...) and
  // no .idx at `path` (it refuses when one exists there: it would hide the mosaic from readers); open()
  // takes the .midx (or that path). Collective reads are refused: read the mosaic with Python's
  // hzio.open, or each part's dataset.
  IndexSpace index_space = IndexSpace::kGlobal;
};

// Memory shared by the ranks of each node: each rank gets a region of one POSIX shared-memory object of its
// node (MPI_Comm_split_type SHARED, or groups of $HZIO_RANKS_PER_NODE consecutive ranks when that is set).
// A box a ParallelDataset stages from such a region without a copy (write_box_borrowed) is read where it
// lies by its data file's aggregator when that rank is on the same node and maps the same memory: its
// blocks are then neither made by the staging rank nor sent (docs/guide/parallel-io.md "Node memory").
class NodeMemory {
 public:
  // Collective over `comm`. `bytes`: this rank's region (ranks may ask for different sizes). The memory
  // is taken now: a node whose shared memory (/dev/shm) is too small fails here, on every rank.
  // Errors: kIo.
  static Result<std::unique_ptr<NodeMemory>> create(MPI_Comm comm, size_t bytes);
  // Local. Unmaps the memory: arrays in it must not be used afterwards, nor be staged and not yet flushed.
  ~NodeMemory();
  NodeMemory(const NodeMemory&) = delete;
  NodeMemory& operator=(const NodeMemory&) = delete;

  // Local. This rank's region (page-aligned) and its size.
  void* data() const;
  size_t size() const;

  struct Impl;

 private:
  explicit NodeMemory(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class ParallelDataset {
 public:
  // Collective over `comm`. Creates the dataset (rank 0 writes the .idx); errors agree on every rank.
  static Result<std::unique_ptr<ParallelDataset>> create(MPI_Comm comm, const std::string& path,
                                                         const CreateOptions& options,
                                                         const ParallelOptions& parallel = {});
  // Collective. Opens an existing dataset read-only, or for writing when asked (`writable`).
  static Result<std::unique_ptr<ParallelDataset>> open(MPI_Comm comm, const std::string& path,
                                                       const ParallelOptions& parallel = {}, bool writable = false);

  // Collective. Every rank reads its own box at its own level, field and timestep (an empty box asks
  // for nothing; out_bytes 0), into `out` as Dataset::read_box. `report` says which method was used and
  // what this rank read from disk. Errors agree on every rank.
  Status read_box(const Box& box, int level, std::string_view field, int64_t time, void* out, size_t out_bytes,
                  ReadReport* report = nullptr, ReadMethod method = ReadMethod::kAuto);
  // Collective. This rank's part of a read_box that it cannot make (a binding found its arguments wrong
  // before calling read_box): the other ranks' read_box, and this call, return `error` (kInvalidArgument
  // if it is ok), so that no rank waits for this one.
  Status fail_read(const Status& error);
  // Local: no hzio communication, so a rank may unwind alone (its communicator is released with
  // MPI_Comm_free, which MPI implementations complete locally). Writes staged since the last flush() are
  // dropped; call close() first.
  ~ParallelDataset();

  // Local. Stages a box of this rank; copies `data` (the buffer may be reused at once). Boxes of different
  // ranks must not overlap. Errors: kInvalidArgument (box, size, field, time), as Dataset::write_box.
  Status write_box(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes);
  // Local. As write_box, without the copy: `data` must stay valid and unchanged until the next flush()
  // or close() returns (or the dataset is destroyed). Saves a pass over the data and its memory, as
  // deferred writes do in other HPC I/O libraries.
  Status write_box_borrowed(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes);

  // Collective. Writes every staged box: the data files become durable, then the .idx is replaced.
  // The files are byte-identical to a one-process write of the same data. Errors agree on every rank.
  // Returns the write report of this flush (also kept as last_write_report()).
  Result<WriteReport> flush();
  // Collective. flush() then close. Errors agree on every rank.
  Status close();

  // Local. The dataset as this rank sees it: metadata, and Local reads of committed data through
  // Dataset's own (Local) calls; collective reads only through read_box above. Writes go through this
  // object only: never call write_box, flush, close or abandon of the returned Dataset. In local index
  // space: the dataset of the first partition the domain reaches (its fields and timesteps are the
  // mosaic's; its box is its own).
  Dataset& dataset();
  // Local. The communicator the dataset's Collective calls run over (a duplicate of the one given).
  MPI_Comm comm() const;
  // Local. The write report of the last flush() or close() (identical on every rank); one with nothing to
  // write reports nothing.
  const WriteReport& last_write_report() const;

  class Impl;

 private:
  explicit ParallelDataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hzio
