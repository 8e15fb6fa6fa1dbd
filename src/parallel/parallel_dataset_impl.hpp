// The state of a ParallelDataset and the steps of its collective flush, shared by parallel_dataset.cpp
// (the unpartitioned flush and the commit) and partitioned_flush.cpp (docs/guide/parallel-io.md
// "Partitions"). Layer: parallel.
#pragma once

#include <map>
#include <span>
#include <utility>
#include <memory>
#include <optional>
#include <vector>

#include "core/dataset_parts.hpp"
#include "core/write_tally.hpp"
#include "hzio/mosaic.hpp"
#include "hzio/parallel.hpp"
#include "hzorder/partition.hpp"
#include "parallel/node_memory.hpp"
#include "parallel/partition_plan.hpp"
#include "parallel/round_plan.hpp"
#include "parallel/write_plan.hpp"
#include "util/large_buffer.hpp"

namespace hzio {

class ParallelDataset::Impl {
 public:
  struct Staged {
    int field = 0;
    int64_t time = 0;
    Box box;
    util::LargeBuffer copy{util::Pages::kSmall};  // the caller's samples, unless borrowed
    const std::byte* data = nullptr;              // the samples: copy.data() or the caller's buffer
  };

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool one_node_ = false;     // every rank shares this node's memory (and page cache)
  std::vector<int> node_of_;  // per rank of comm_: its node (parallel::node_comm), as its first rank there
  // Per box of the flush being written (FlushPlan::boxes): what this rank makes records from, its own
  // staged boxes and those it adopts (NodeMemory); null for the others.
  struct Source {
    int field = 0;
    int64_t time = 0;
    Box box;
    const std::byte* data = nullptr;
  };
  std::vector<Source> sources_;
  ParallelOptions options_;
  std::unique_ptr<Dataset> dataset_;
  std::vector<Staged> staged_;
  double stage_seconds_ = 0;  // in stage() since the last flush: the report's `stage`
  WriteReport last_write_report_;
  bool closed_ = false;
  // Exchange buffers, reused by every round and flush.
  util::LargeBuffer send_buffer_{util::Pages::kSmall}, recv_buffer_{util::Pages::kSmall};
  // The ranks a flush exchanges records among: every rank (comm_), or in a partitioned flush the ranks
  // of this rank's group.
  MPI_Comm xcomm_ = MPI_COMM_NULL;
  int xrank_ = 0, xsize_ = 1;
  int64_t sent_messages_ = 0, sent_bytes_ = 0;  // this flush's record messages to other ranks
  int64_t aggregated_ = 0;                      // chunks this rank aggregated in this flush
  // Timesteps the next flush commits even where nothing was staged (every part of a mosaic lists each
  // timestep any part gets); the same on every rank.
  std::vector<int64_t> extra_times_;

  // A partitioned flush (ParallelOptions::partitions > 1): the partitions, the groups and this rank's
  // part in the merge of the shared files. Lives for one flush.
  struct Partitioned {
    hzorder::Partitions parts;
    parallel::PartitionGroups groups;
    int group = 0;                                    // this rank's group (the partition naming it)
    bool leader = false;                              // this rank is its group's leader
    MPI_Comm group_comm = MPI_COMM_NULL;              // the group's ranks, the leader first
    MPI_Comm leaders_comm = MPI_COMM_NULL;            // the leaders (MPI_COMM_NULL elsewhere)
    std::map<int, std::vector<std::byte>> forward;    // merger (rank) -> records of shared files
    std::vector<std::pair<int64_t, int64_t>> merged;  // (time, first block) of the files merged here
    int64_t moved_messages = 0, moved_bytes = 0;      // parts of boxes sent to another group
    int64_t forward_messages = 0, forward_bytes = 0;  // records sent to mergers
    util::LargeBuffer arena{util::Pages::kSmall};     // parts of boxes received from other groups
    bool writes_idx = false;                          // the lowest leader writes the .idx
    bool rank_conforming = false;
    int64_t group_files = 0;   // data files the group writes itself
    double merge_seconds = 0;  // this rank's time in merge_shared
    ~Partitioned();
  };
  std::unique_ptr<Partitioned> part_;

  // Local index space: the mosaic and each partition's dataset.
  struct MosaicState {
    std::string midx;                     // the .midx path
    hzio::Mosaic file;                    // its contents
    MosaicGeometry geometry;              // its parts' boxes and bitmask (check_mosaic)
    std::vector<std::string> part_paths;  // per partition: its dataset's path, "" where the domain misses it
    Box box;                              // the whole domain
  };
  std::unique_ptr<MosaicState> mosaic_;
  // Collective. create()/open() in local index space.
  static Result<std::unique_ptr<ParallelDataset>> create_mosaic(MPI_Comm comm, const std::string& path,
                                                                const CreateOptions& options,
                                                                const ParallelOptions& parallel);
  static Result<std::unique_ptr<ParallelDataset>> open_mosaic(MPI_Comm comm, const std::string& midx,
                                                              const ParallelOptions& parallel);
  // Collective. flush() in local index space: after the partitions and groups (partition_staged), each
  // group writes its partitions' datasets, one collective write each over the group.
  Result<WriteReport> flush_mosaic();
  // Collective, after partition_staged. The timesteps of every rank's staged boxes, ascending: gathered
  // in each group, then among the leaders.
  std::vector<int64_t> staged_times();
  // The partitions of this dataset: of the mosaic in local index space, else of the dataset's bitmask.
  Result<hzorder::Partitions> partitions();

  core::DatasetParts ds() { return core::DatasetParts(*dataset_); }
  Status stage(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes, bool borrow);
  Result<WriteReport> flush();
  // What a flush moves: every rank's boxes, the timesteps they write, the write plan and this rank's
  // plan of each round.
  struct FlushPlan {
    std::vector<parallel::BoxInfo> boxes;
    std::vector<int64_t> times;  // ascending, distinct
    parallel::WritePlan plan;
    std::vector<parallel::RoundPlan> rounds;
    int64_t bytes = 0;  // sample bytes this rank staged
  };
  // Collective. Plans the flush and sizes the exchange buffers; errors agree on every rank.
  Status plan_flush(FlushPlan& fp);
  // Collective. The partitions and groups of this flush, the parts of boxes that straddle into another
  // group's partitions sent to that group's leader (and those of others staged here), and the group's
  // communicator as xcomm_; errors agree on every rank.
  Status partition_staged(core::WriteTally& t);
  // Local. Keeps the records of a shared file's chunk (partitioned flushes) for the file's merger.
  Status forward_chunk(const parallel::Chunk& chunk, const std::vector<parallel::Record>& records);
  // Local. forward_chunk's segment (header and attached records) appended to `out`; may throw bad_alloc.
  void append_segment(const parallel::Chunk& chunk, const std::vector<parallel::Record>& records,
                      std::vector<std::byte>& out);
  // Local. The merger's part of merge_shared: the shared files built from the received records and
  // written; may throw bad_alloc.
  Status write_merged(const std::vector<std::span<const std::byte>>& messages, core::WriteTally& t);
  // Collective over every rank. Sends the kept records of shared files to their mergers, which write
  // those files. Local status, as exchange_round.
  Status merge_shared(core::WriteTally& t);
  // Collective. The files of each new timestep this flush writes (on the rank that writes the .idx) and
  // the timesteps (on every rank), gathered through the group leaders.
  Status gather_written(const parallel::WritePlan& plan, std::vector<int64_t>& times,
                        std::map<int64_t, std::vector<int64_t>>& files);
  // Collective. Every group's `row` (its leader's; the same length on every rank), on every rank.
  std::vector<std::vector<int64_t>> group_rows(const std::vector<int64_t>& row);
  // Local. A group's report from its row: partition, ranks, aggregators, files, messages, bytes.
  PartitionGroupReport group_report(const std::vector<int64_t>& row) const;
  // Collective. The partitioned parts of the report: groups, moves, merge (identical on every rank).
  void reduce_partitioned(WriteReport& r, int rounds);
  // Collective. Plans, exchanges, writes and commits the staged boxes; errors agree on every rank.
  Status write_staged(FlushPlan& fp, core::WriteTally& t);
  // Local. Makes this rank's records of a round (parallel::write_record) into the send buffer, with a
  // detached block's samples at `samples` of its item; on the dataset's pool when it has several threads.
  void make_records(const parallel::RoundPlan& io, const std::vector<std::byte*>& samples, core::WriteTally& t);
  // Collective over comm_ when a staged box lies in node memory (else Local). Which boxes the aggregators
  // of their node read where they lie (NodeMemory); fills sources_ for those this rank can read.
  std::optional<parallel::Adoption> adopt(const std::vector<parallel::BoxInfo>& boxes,
                                          const std::vector<parallel::NodePlace>& places);
  // Local status: a failing rank still joins every later round, and flush() agrees once at the end.
  Status exchange_round(const parallel::WritePlan& plan, const parallel::RoundPlan& io, core::WriteTally& t);
  // Collective over every rank. `files`: per new timestep, the first blocks of the files written (needed
  // where the .idx is written: `writes_idx`).
  Status commit(const std::vector<int64_t>& times, const std::map<int64_t, std::vector<int64_t>>& files,
                bool writes_idx, core::WriteTally& t);
  WriteReport reduce(const parallel::WritePlan& plan, const core::WriteTally& t, int64_t bytes);
};

// Local. Copies the samples of `part` (inside `box`) of a dense x-fastest array of `sample_bytes`
// samples into `out`, densely.
void copy_box_part(const std::byte* data, const Box& box, const Box& part, size_t sample_bytes, std::byte* out);

// Local. A new ParallelDataset::Impl over a duplicate of `comm`. Errors: partitions not a power of two.
Result<std::unique_ptr<ParallelDataset::Impl>> make_parallel_impl(MPI_Comm comm, const ParallelOptions& options);

}  // namespace hzio
