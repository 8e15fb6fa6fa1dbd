// hzio::ParallelDataset: staging, the collective flush pipeline and the two-phase commit
// (docs/guide/parallel-io.md).
#include "hzio/parallel.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <utility>

#include "core/commit.hpp"
#include "core/write_tally.hpp"
#include "core/dataset_parts.hpp"
#include "format/file_name.hpp"
#include "io/posix_file.hpp"
#include "parallel/mpi_util.hpp"
#include "parallel/node_memory.hpp"
#include "parallel/parallel_dataset_impl.hpp"
#include "parallel/parallel_read.hpp"
#include "parallel/records.hpp"
#include "parallel/round_plan.hpp"
#include "parallel/write_plan.hpp"
#include "util/clock.hpp"
#include "util/large_buffer.hpp"

namespace hzio {

using parallel::agree;

Result<std::unique_ptr<ParallelDataset::Impl>> make_parallel_impl(MPI_Comm comm, const ParallelOptions& options) {
  if (options.partitions < 1 || options.partitions > kMaxPartitions ||
      (options.partitions & (options.partitions - 1)) != 0) {
    return invalid_argument("partitions must be a power of two of at most " + std::to_string(kMaxPartitions) +
                            ", got " + std::to_string(options.partitions));
  }
  auto impl = std::make_unique<ParallelDataset::Impl>();
  MPI_Comm_dup(comm, &impl->comm_);
  MPI_Comm_rank(impl->comm_, &impl->rank_);
  MPI_Comm_size(impl->comm_, &impl->size_);
  MPI_Comm node;
  MPI_Comm_split_type(impl->comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  impl->one_node_ = node_size == impl->size_;
  // Each rank's node (emulated ones too), named by the rank of its first rank.
  MPI_Comm emulated = parallel::node_comm(impl->comm_);
  int first = impl->rank_;
  MPI_Bcast(&first, 1, MPI_INT, 0, emulated);
  MPI_Comm_free(&emulated);
  impl->node_of_.resize(static_cast<size_t>(impl->size_));
  MPI_Allgather(&first, 1, MPI_INT, impl->node_of_.data(), 1, MPI_INT, impl->comm_);
  impl->options_ = options;
  return impl;
}

namespace {

// Whether the dataset's bitmask has the characters the partitions need.
Status check_partitions(ParallelDataset::Impl& impl) {
  if (impl.options_.partitions == 1) return Status::ok();
  const core::DatasetParts d = impl.ds();
  return hzorder::Partitions::make(d.idx.bitmask, d.idx.bits_per_block, d.idx.box, impl.options_.partitions).status();
}

// Grows an exchange buffer; running out of memory is an error every rank must hear of, not an exception.
Status reserve(util::LargeBuffer& buffer, size_t bytes, const char* what) {
  try {
    buffer.reserve(std::max<size_t>(bytes, 1));
  } catch (const std::bad_alloc&) {
    return io_error(std::string("out of memory for a ") + what + " buffer of " + std::to_string(bytes) +
                    " bytes; lower aggregator_bytes");
  }
  return Status::ok();
}

}  // namespace

ParallelDataset::ParallelDataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ParallelDataset::~ParallelDataset() {
  // No collective here: a rank unwinding alone would deadlock the others. Unflushed writes are dropped.
  if (impl_ && !impl_->closed_ && impl_->dataset_) impl_->dataset_->abandon();
  if (impl_ && impl_->comm_ != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm_);
}

Result<std::unique_ptr<ParallelDataset>> ParallelDataset::create(MPI_Comm comm, const std::string& path,
                                                                 const CreateOptions& options,
                                                                 const ParallelOptions& parallel) {
  if (parallel.index_space == IndexSpace::kLocal && parallel.partitions > 1)
    return Impl::create_mosaic(comm, path, options, parallel);
  HZIO_ASSIGN_OR_RETURN(auto impl, make_parallel_impl(comm, parallel));
  OpenOptions open{.writable = true,
                   .durable = parallel.durable,
                   .threads = parallel.threads,
                   .verify_checksums = parallel.verify_checksums};
  Status s;
  if (impl->rank_ == 0) {
    auto ds = Dataset::create(path, options, open);
    s = ds.status();
    if (ds.is_ok()) impl->dataset_ = std::move(ds).value();
  }
  HZIO_RETURN_IF_ERROR(agree(impl->comm_, s));
  if (impl->rank_ != 0) {
    auto ds = Dataset::open(path, open);
    s = ds.status();
    if (ds.is_ok()) impl->dataset_ = std::move(ds).value();
  }
  s = agree(impl->comm_, s);
  if (s.is_ok()) s = check_partitions(*impl);  // the same on every rank
  if (!s.is_ok()) {
    if (impl->dataset_) impl->dataset_->abandon();  // on rank 0: removes the dataset it just created
    return s;
  }
  return std::unique_ptr<ParallelDataset>(new ParallelDataset(std::move(impl)));
}

Result<std::unique_ptr<ParallelDataset>> ParallelDataset::open(MPI_Comm comm, const std::string& path,
                                                               const ParallelOptions& parallel, bool writable) {
  // A mosaic: the .midx, or the path a local-index-space create was given (no .idx there, a .midx next to it).
  const std::string midx = mosaic_path(path);
  if (path.ends_with(".midx") || (!io::file_exists(path) && io::file_exists(midx))) {
    if (!writable) {
      return unsupported("collective reads of " + midx +
                         " (partitions in local index space): read it with hzio.open, or each part's dataset");
    }
    return Impl::open_mosaic(comm, midx, parallel);
  }
  HZIO_ASSIGN_OR_RETURN(auto impl, make_parallel_impl(comm, parallel));
  auto ds = Dataset::open(path, {.writable = writable,
                                 .durable = parallel.durable,
                                 .threads = parallel.threads,
                                 .verify_checksums = parallel.verify_checksums,
                                 .allow_outside_folder = parallel.allow_outside_folder});
  Status s = ds.status();
  if (writable && ds.is_ok() && core::DatasetParts(*ds.value()).idx.interleave > 1)
    s = unsupported("parallel writes of interleaved datasets");
  HZIO_RETURN_IF_ERROR(agree(impl->comm_, s));
  impl->dataset_ = std::move(ds).value();
  if (writable) HZIO_RETURN_IF_ERROR(check_partitions(*impl));  // the same on every rank
  return std::unique_ptr<ParallelDataset>(new ParallelDataset(std::move(impl)));
}

Status ParallelDataset::read_box(const Box& box, int level, std::string_view field, int64_t time, void* out,
                                 size_t out_bytes, ReadReport* report, ReadMethod method) {
  ReadReport local;
  core::DatasetParts d = impl_->ds();
  MPI_Comm comm = impl_->comm_;
  if (impl_->mosaic_) {
    return agree(comm, unsupported("collective reads of " + impl_->mosaic_->midx +
                                   " (partitions in local index space): read it with hzio.open, or each part's "
                                   "dataset"));
  }
  // Every rank reads one state of the dataset: the same .idx version at the start, and no commit
  // publishing until every rank is done (docs/design/commit.md "Atomic rewrites").
  for (int attempt = 1;; ++attempt) {
    auto version = d.start_read();
    HZIO_RETURN_IF_ERROR(agree(comm, version.status()));
    const core::IdxVersion& v = version.value();
    uint64_t mixed[2] = {v.device ^ v.inode * 0x9e3779b97f4a7c15ull ^ v.size * 0xc2b2ae3d27d4eb4full ^
                             static_cast<uint64_t>(v.mtime_ns) * 0x165667b19e3779f9ull ^
                             static_cast<uint64_t>(v.ctime_ns),
                         0};
    mixed[1] = ~mixed[0];
    // Equal on every rank iff max(h) == min(h), which is ~max(~h).
    MPI_Allreduce(MPI_IN_PLACE, mixed, 2, MPI_UINT64_T, MPI_MAX, comm);
    if (report) *report = ReadReport{};
    const Status s =
        parallel::parallel_read(*impl_->dataset_, comm, impl_->one_node_, impl_->options_.aggregator_bytes,
                                {box, level, field, time, out, out_bytes}, method, report ? *report : local);
    int unchanged = d.read_unchanged(v) && mixed[0] == ~mixed[1];
    MPI_Allreduce(MPI_IN_PLACE, &unchanged, 1, MPI_INT, MPI_LAND, comm);
    if (unchanged) return s;
    if (attempt == core::kConsistentReadAttempts) {
      return io_error("reading " + d.path + ": commits of another process replaced its files during each of " +
                      std::to_string(attempt) + " attempts");
    }
  }
}

Status ParallelDataset::fail_read(const Status& error) {
  return agree(impl_->comm_, error.is_ok() ? invalid_argument("a rank could not make its read") : error);
}

Dataset& ParallelDataset::dataset() { return *impl_->dataset_; }
MPI_Comm ParallelDataset::comm() const { return impl_->comm_; }
const WriteReport& ParallelDataset::last_write_report() const { return impl_->last_write_report_; }

Status ParallelDataset::Impl::stage(const Box& box, std::string_view field, int64_t time, const void* data,
                                    size_t size_bytes, bool borrow) {
  core::DatasetParts d = ds();
  int f = 0;
  HZIO_RETURN_IF_ERROR(d.check_field_time(field, time, true, f));
  if (mosaic_) {
    if (box.empty() || !mosaic_->box.contains(box)) {
      return invalid_argument("write box " + box.to_string() + " is empty or not inside the dataset box " +
                              mosaic_->box.to_string());
    }
  } else {
    HZIO_RETURN_IF_ERROR(d.check_box(box, "write"));
  }
  const size_t want = static_cast<size_t>(box.sample_count()) * d.coding[f].dtype.bytes();
  if (size_bytes != want) {
    return invalid_argument("write of box " + box.to_string() + " needs " + std::to_string(want) + " bytes of " +
                            d.coding[f].dtype.to_string() + ", got " + std::to_string(size_bytes));
  }
  if (size_bytes > 0 && data == nullptr) return invalid_argument("write of box " + box.to_string() + ": no data");
  Staged s{.field = f, .time = time, .box = box, .data = static_cast<const std::byte*>(data)};
  if (!borrow && size_bytes > 0) {
    util::ScopedSeconds timer(stage_seconds_);  // reported as the next flush's `stage`
    HZIO_RETURN_IF_ERROR(util::copy_staged(s.copy, data, size_bytes));
    s.data = s.copy.data();
  }
  staged_.push_back(std::move(s));
  return Status::ok();
}

Status ParallelDataset::write_box(const Box& box, std::string_view field, int64_t time, const void* data,
                                  size_t size_bytes) {
  return impl_->stage(box, field, time, data, size_bytes, false);
}

Status ParallelDataset::write_box_borrowed(const Box& box, std::string_view field, int64_t time, const void* data,
                                           size_t size_bytes) {
  return impl_->stage(box, field, time, data, size_bytes, true);
}

void ParallelDataset::Impl::make_records(const parallel::RoundPlan& io, const std::vector<std::byte*>& samples,
                                         core::WriteTally& t) {
  core::DatasetParts d = ds();
  const auto make = [&](size_t i, core::WriteTally& tally) {
    const auto& item = io.items[i];
    const Source& st = sources_[item.box];
    parallel::write_record(d, st.field, st.time, st.box, st.data, item.block, send_buffer_.data() + item.bulk_at,
                           samples[i], tally);
  };
  // Records fill their own bytes of the send buffer and of the direct-write places: with more than one
  // thread (an I/O rank has the node's cores) they are made in batches on the pool, each batch with its own
  // tally, added up after.
  constexpr size_t kBatch = 8;
  const size_t n = io.items.size(), batches = (n + kBatch - 1) / kBatch;
  if (d.pool.size() <= 1 || batches < 2) {
    for (size_t i = 0; i < n; ++i) make(i, t);
    return;
  }
  std::vector<core::WriteTally> tallies(batches, core::WriteTally(d.idx.bitmask.max_level()));
  d.pool.parallel_for(batches, [&](size_t b) {
    for (size_t i = b * kBatch; i < std::min(n, (b + 1) * kBatch); ++i) make(i, tallies[b]);
  });
  for (const core::WriteTally& each : tallies) {
    t.phases.restructure += each.phases.restructure;
    t.phases.stats += each.phases.stats;
    for (size_t level = 0; level < each.level_hz.size(); ++level)
      t.add_hz(static_cast<int>(level), each.level_hz[level]);
  }
}

Status ParallelDataset::Impl::exchange_round(const parallel::WritePlan& plan, const parallel::RoundPlan& io,
                                             core::WriteTally& t) {
  core::DatasetParts d = ds();
  constexpr int kBulkTag = 1, kBlockTag = 2;
  // The aggregated chunk's file space first, so that detached blocks land in their buffered places. On an
  // error this rank still takes part in the exchange, and reports the error after it.
  // A shared file's chunk in a partitioned flush is not written here: its records go to the file's merger.
  const bool forwards =
      io.chunk >= 0 && part_ &&
      part_->parts.of_blocks(static_cast<uint64_t>(plan.chunks[static_cast<size_t>(io.chunk)].first_block),
                             static_cast<uint64_t>(d.idx.blocks_per_file)) < 0;
  parallel::ChunkSlots slots;
  Status s = io.chunk >= 0 && !forwards
                 ? parallel::reserve_chunk(d, plan.chunks[static_cast<size_t>(io.chunk)], io.entries, slots)
                 : Status::ok();
  if (io.chunk >= 0) ++aggregated_;
  const auto place = [&](int64_t entry) { return s.is_ok() ? slots.place(entry) : nullptr; };
  std::vector<MPI_Request> requests;
  const auto post = [&](bool send, std::byte* at, int64_t bytes, int peer, int tag) {
    requests.emplace_back();
    // Sizes fit in int: flush() checked every round's buffers before the first.
    if (send) {
      ++sent_messages_;
      sent_bytes_ += bytes;
    }
    if (send)
      MPI_Isend(at, static_cast<int>(bytes), MPI_BYTE, peer, tag, xcomm_, &requests.back());
    else
      MPI_Irecv(at, static_cast<int>(bytes), MPI_BYTE, peer, tag, xcomm_, &requests.back());
  };
  // Receives first: a message's data can move as soon as its sender posts it.
  std::vector<std::byte*> landing(io.incoming.size());
  int64_t spill = io.recv_bulk[static_cast<size_t>(xsize_)];
  for (size_t k = 0; k < io.incoming.size(); ++k) {
    std::byte* p = place(io.incoming[k].entry);
    landing[k] = p ? p : recv_buffer_.data() + spill;
    spill += (io.incoming[k].bytes + 7) & ~int64_t{7};
  }
  for (int r = 0; r < xsize_; ++r) {
    const int64_t begin = io.recv_bulk[static_cast<size_t>(r)], end = io.recv_bulk[static_cast<size_t>(r) + 1];
    if (r != xrank_ && end > begin) post(false, recv_buffer_.data() + begin, end - begin, r, kBulkTag);
  }
  for (size_t k = 0; k < io.incoming.size(); ++k)
    post(false, landing[k], io.incoming[k].bytes, io.incoming[k].source, kBlockTag);
  // Make the records; a detached block this rank aggregates itself goes straight to its buffered place.
  std::vector<std::byte*> own_samples;  // of this rank's detached records for itself, in order
  std::vector<std::byte*> samples(io.items.size(), nullptr);
  for (size_t i = 0; i < io.items.size(); ++i) {
    const auto& item = io.items[i];
    if (!item.detached) continue;
    samples[i] = send_buffer_.data() + item.data_at;
    if (item.dest == xrank_) {
      const Source& st = sources_[item.box];
      if (std::byte* p = place(format::entry_in_file(d.idx, st.field, item.block))) samples[i] = p;
      own_samples.push_back(samples[i]);
    }
  }
  make_records(io, samples, t);
  {
    util::ScopedSeconds timer(t.phases.aggregate);
    for (int r = 0; r < xsize_; ++r) {
      const int64_t begin = io.send_bulk[static_cast<size_t>(r)], end = io.send_bulk[static_cast<size_t>(r) + 1];
      if (r != xrank_ && end > begin) post(true, send_buffer_.data() + begin, end - begin, r, kBulkTag);
    }
    for (const auto& item : io.items)
      if (item.detached && item.dest != xrank_)
        post(true, send_buffer_.data() + item.data_at, item.data_bytes, item.dest, kBlockTag);
    parallel::wait_all(requests);
  }
  // Records in rank order (a rank's own records in the order it staged them), this rank's from the send
  // buffer; each detached record gets the place its samples arrived at, in its sender's order.
  std::vector<parallel::Record> records;
  size_t next_in = 0, next_own = 0;
  for (int r = 0; r < xsize_ && s.is_ok(); ++r) {
    const bool own = r == xrank_;
    const std::byte* base = own ? send_buffer_.data() : recv_buffer_.data();
    const auto& bounds = own ? io.send_bulk : io.recv_bulk;
    const size_t first = records.size();
    s = parallel::parse_records(std::span<const std::byte>(base + bounds[static_cast<size_t>(r)],
                                                           static_cast<size_t>(bounds[static_cast<size_t>(r) + 1] -
                                                                               bounds[static_cast<size_t>(r)])),
                                records);
    for (size_t j = first; j < records.size() && s.is_ok(); ++j) {
      const parallel::RecordHeader& h = records[j].header;
      if (!h.detached) continue;
      const int64_t entry = format::entry_in_file(d.idx, h.field, h.block);
      if (own && next_own < own_samples.size())
        records[j].data = own_samples[next_own++];
      else if (!own && next_in < io.incoming.size() && io.incoming[next_in].source == r &&
               io.incoming[next_in].entry == entry)
        records[j].data = landing[next_in++];
      else
        s = internal_error("a detached block's header does not match the samples received for it");
    }
  }
  if (s.is_ok() && (next_in != io.incoming.size() || next_own != own_samples.size()))
    s = internal_error("detached blocks were received without their headers");
  if (s.is_ok() && forwards) s = forward_chunk(plan.chunks[static_cast<size_t>(io.chunk)], records);
  if (s.is_ok() && io.chunk >= 0 && !forwards)
    s = parallel::write_chunk(d, plan.chunks[static_cast<size_t>(io.chunk)], records, slots, t);
  return s;
}

Status ParallelDataset::Impl::commit(const std::vector<int64_t>& times,
                                     const std::map<int64_t, std::vector<int64_t>>& files, bool writes_idx,
                                     core::WriteTally& t) {
  core::DatasetParts d = ds();
  core::CommitSteps steps;
  steps.agree = [&](const Status& s) { return agree(comm_, s); };
  steps.any = [&](bool mine) {
    int in = mine ? 1 : 0, out = 0;
    parallel::allreduce(&in, &out, 1, MPI_INT, MPI_MAX, comm_);
    return out != 0;
  };
  steps.writes_idx = writes_idx;
  steps.durable = options_.durable;
  for (int64_t tm : times) {
    if (d.idx.time.contains(tm)) continue;
    auto& written = steps.new_times[tm];
    if (const auto it = files.find(tm); it != files.end()) written = it->second;
  }
  core::CommitResult done;
  const Status s = core::commit_writes(d.files, d.path, d.idx, steps, done);
  t.phases.write += done.prepare_seconds;
  t.phases.commit += done.publish_seconds;
  if (s.is_ok() || done.idx_published) {
    d.note_commit(done.idx_published);
  }
  if (!s.is_ok()) d.files.abort();
  return s;
}

std::optional<parallel::Adoption> ParallelDataset::Impl::adopt(const std::vector<parallel::BoxInfo>& boxes,
                                                               const std::vector<parallel::NodePlace>& places) {
  // Not in a partitioned flush (its places are all zero anyway): ranks below are of comm_, which is then
  // also the exchange's communicator.
  if (part_ || std::none_of(places.begin(), places.end(), [](const auto& p) { return p.token[0] != 0; }))
    return std::nullopt;  // the same answer on every rank: they all saw every box
  core::DatasetParts d = ds();
  // A box is adopted when every rank of its node maps it (each answers for the boxes of its own node)...
  std::vector<int> readable(boxes.size(), 1);
  for (size_t i = 0; i < boxes.size(); ++i) {
    if (places[i].token[0] == 0) {
      readable[i] = 0;
    } else if (node_of_[static_cast<size_t>(boxes[i].rank)] == node_of_[static_cast<size_t>(rank_)]) {
      const auto bytes = static_cast<size_t>(boxes[i].box.sample_count()) *
                         d.coding[static_cast<size_t>(boxes[i].field)].dtype.bytes();
      const std::byte* p = parallel::node_address(places[i], bytes);
      readable[i] = p != nullptr;
      if (p) sources_[i] = {boxes[i].field, boxes[i].time, boxes[i].box, p};
    }
  }
  parallel::allreduce(MPI_IN_PLACE, readable.data(), static_cast<int>(readable.size()), MPI_INT, MPI_MIN, comm_);
  // ...and every box of its rank is: a rank's records then keep their staging order (two boxes of one
  // rank may overlap, and the later one wins).
  std::vector<char> whole_rank(static_cast<size_t>(size_), 1);
  for (size_t i = 0; i < boxes.size(); ++i)
    if (!readable[i]) whole_rank[static_cast<size_t>(boxes[i].rank)] = 0;
  parallel::Adoption a;
  a.node_of = node_of_;
  a.adopted.resize(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) a.adopted[i] = whole_rank[static_cast<size_t>(boxes[i].rank)];
  return a;
}

Status ParallelDataset::Impl::plan_flush(FlushPlan& fp) {
  core::DatasetParts d = ds();
  // Every rank learns every staged box: (field, time, lo, hi) per box, and where it lies in node memory
  // (token and offset; zeros when it does not: only borrowed boxes are read where they lie).
  constexpr int kWords = 11;
  std::vector<int64_t> mine;
  for (const Staged& s : staged_) {
    const int64_t bytes =
        s.box.sample_count() * static_cast<int64_t>(d.coding[static_cast<size_t>(s.field)].dtype.bytes());
    const std::optional<parallel::NodePlace> place =
        part_ || s.copy.data() ? std::nullopt : parallel::find_node_place(s.data, static_cast<size_t>(bytes));
    mine.insert(mine.end(),
                {s.field, s.time, s.box.lo[0], s.box.lo[1], s.box.lo[2], s.box.hi[0], s.box.hi[1], s.box.hi[2],
                 place ? place->token[0] : 0, place ? place->token[1] : 0, place ? place->offset : 0});
    fp.bytes += bytes;
  }
  std::vector<int> counts;
  const std::vector<int64_t> all = parallel::allgather_int64(xcomm_, mine, counts);
  size_t at = 0;
  std::vector<parallel::NodePlace> places;
  for (int r = 0; r < xsize_; ++r) {
    for (int i = 0; i < counts[r]; i += kWords, at += kWords) {
      fp.boxes.push_back({r, static_cast<int>(all[at]), all[at + 1],
                          Box{{all[at + 2], all[at + 3], all[at + 4]}, {all[at + 5], all[at + 6], all[at + 7]}}});
      fp.times.push_back(all[at + 1]);
      places.push_back({{all[at + 8], all[at + 9]}, all[at + 10]});
    }
  }
  // What this rank makes records from: its own boxes, and those it adopts.
  size_t mine_at = 0;  // this rank's first box in `boxes`
  for (int r = 0; r < xrank_; ++r) mine_at += static_cast<size_t>(counts[r] / kWords);
  sources_.assign(fp.boxes.size(), {});
  for (size_t k = 0; k < staged_.size(); ++k)
    sources_[mine_at + k] = {staged_[k].field, staged_[k].time, staged_[k].box, staged_[k].data};
  const std::optional<parallel::Adoption> adoption = adopt(fp.boxes, places);
  std::sort(fp.times.begin(), fp.times.end());
  fp.times.erase(std::unique(fp.times.begin(), fp.times.end()), fp.times.end());
  std::vector<int64_t> block_bytes;
  for (size_t f = 0; f < d.coding.size(); ++f)
    block_bytes.push_back(static_cast<int64_t>(d.block_bytes(static_cast<int>(f))));
  const parallel::PlanOptions plan_options{options_.placement == AggregatorPlacement::kUniform,
                                           options_.aggregator_count, options_.aggregator_bytes};
  fp.plan = parallel::make_write_plan(d.idx, d.space, fp.boxes, xsize_, plan_options, block_bytes);
  // Each round's sends and receives up front, so that the buffers are sized once and the size limits
  // agreed once for the whole flush.
  std::vector<bool> raw;
  for (const core::FieldCoding& fc : d.coding) raw.push_back(fc.codec.kind == codec::CodecKind::kRaw);
  const auto shape_of = [&](int field, const Box& box, uint64_t block) {
    return parallel::record_shape(d, field, box, block);
  };
  int64_t send_max = 0, recv_max = 0;
  for (const auto& round : fp.plan.rounds) {
    fp.rounds.push_back(parallel::plan_round(d.idx, fp.plan, round, fp.boxes, {mine_at, staged_.size()}, xrank_, xsize_,
                                             raw, shape_of, adoption ? &*adoption : nullptr));
    send_max = std::max(send_max, fp.rounds.back().send_bytes);
    recv_max = std::max(recv_max, fp.rounds.back().recv_bytes);
  }
  Status ready = send_max > INT_MAX || recv_max > INT_MAX
                     ? unsupported("a round moves more than 2 GiB into or out of one rank; lower aggregator_bytes")
                     : Status::ok();
  if (ready.is_ok()) ready = reserve(send_buffer_, static_cast<size_t>(send_max), "send");
  if (ready.is_ok()) ready = reserve(recv_buffer_, static_cast<size_t>(recv_max), "receive");
  return agree(xcomm_, ready);
}

Status ParallelDataset::Impl::write_staged(FlushPlan& fp, core::WriteTally& t) {
  Status s;
  {
    util::ScopedSeconds timer(t.phases.restructure);
    s = part_ ? partition_staged(t) : Status::ok();
    if (s.is_ok()) s = plan_flush(fp);
  }
  Status failed;  // this rank's first error in the rounds: it keeps taking part, the ranks agree after
  for (size_t r = 0; s.is_ok() && r < fp.rounds.size(); ++r) {
    Status round = exchange_round(fp.plan, fp.rounds[r], t);
    if (!round.is_ok() && failed.is_ok()) failed = round;
  }
  if (s.is_ok()) s = agree(xcomm_, failed);
  // A group may fail while the others finished: every rank hears of it before the merge and the commit.
  if (part_) s = agree(comm_, s);
  if (s.is_ok() && part_) {
    Status merged;
    {
      util::ScopedSeconds timer(part_->merge_seconds);
      merged = merge_shared(t);
    }
    s = agree(comm_, merged);
  }
  staged_.clear();
  if (!s.is_ok()) {
    ds().files.abort();
    return s;
  }
  std::vector<int64_t> times = fp.times;
  times.insert(times.end(), extra_times_.begin(), extra_times_.end());
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  extra_times_.clear();
  std::map<int64_t, std::vector<int64_t>> files;
  bool writes_idx = rank_ == 0;
  if (part_) {
    s = agree(comm_, gather_written(fp.plan, times, files));
    if (!s.is_ok()) {
      ds().files.abort();
      return s;
    }
    writes_idx = part_->writes_idx;
  } else {
    for (const auto& c : fp.plan.chunks) files[c.time].push_back(c.first_block);
  }
  return commit(times, files, writes_idx, t);
}

Result<WriteReport> ParallelDataset::Impl::flush() {
  core::WriteTally t(ds().idx.bitmask.max_level());
  FlushPlan fp;
  Status s;
  xcomm_ = comm_;
  xrank_ = rank_;
  xsize_ = size_;
  sent_messages_ = sent_bytes_ = aggregated_ = 0;
  part_.reset();
  if (options_.partitions > 1) part_ = std::make_unique<Partitioned>();
  double seconds = 0;
  {
    util::ScopedSeconds timer(seconds);
    s = write_staged(fp, t);
  }
  core::account_wall(t.phases, seconds, std::exchange(stage_seconds_, 0.0));
  if (s.is_ok()) {
    int64_t total_bytes = 0;
    parallel::allreduce(&fp.bytes, &total_bytes, 1, MPI_INT64_T, MPI_SUM, comm_);
    last_write_report_ = reduce(fp.plan, t, total_bytes);
  }
  // The group's communicators go with the flush, on errors too.
  part_.reset();
  xcomm_ = comm_;
  HZIO_RETURN_IF_ERROR(s);
  return last_write_report_;
}

WriteReport ParallelDataset::Impl::reduce(const parallel::WritePlan& plan, const core::WriteTally& t, int64_t bytes) {
  WriteReport r;
  r.ranks = size_;
  r.aggregators = plan.aggregators;
  r.rounds = static_cast<int>(plan.rounds.size());
  r.placement = options_.placement == AggregatorPlacement::kLocalized ? "localized" : "uniform";
  r.bytes = bytes;
  r.files = plan.files;
  r.rank_conforming = plan.rank_conforming;
  const std::vector<double> seconds = t.seconds();
  const std::vector<int64_t> counts = t.counts();
  std::vector<double> max(seconds.size()), sum(seconds.size());
  std::vector<int64_t> total(counts.size());
  const int n = static_cast<int>(seconds.size());
  parallel::allreduce(seconds.data(), max.data(), n, MPI_DOUBLE, MPI_MAX, comm_);
  parallel::allreduce(seconds.data(), sum.data(), n, MPI_DOUBLE, MPI_SUM, comm_);
  parallel::allreduce(counts.data(), total.data(), static_cast<int>(counts.size()), MPI_INT64_T, MPI_SUM, comm_);
  t.fill_reduced(max, sum, total, size_, r);
  const int64_t sent[2] = {sent_messages_, sent_bytes_};
  int64_t all_sent[2] = {0, 0};
  parallel::allreduce(sent, all_sent, 2, MPI_INT64_T, MPI_SUM, comm_);
  r.messages = all_sent[0];
  r.message_bytes = all_sent[1];
  if (part_) reduce_partitioned(r, static_cast<int>(plan.rounds.size()));
  return r;
}

Result<WriteReport> ParallelDataset::flush() {
  if (impl_->closed_) return invalid_argument("dataset " + impl_->ds().path + " is closed");
  return impl_->mosaic_ ? impl_->flush_mosaic() : impl_->flush();
}

Status ParallelDataset::close() {
  if (impl_->closed_) return invalid_argument("dataset is closed");
  auto r = impl_->mosaic_ ? impl_->flush_mosaic() : impl_->flush();
  impl_->closed_ = true;
  impl_->dataset_->abandon();
  // The exchange buffers go back to the process's mapping cache now, for the next dataset's flush, not
  // when this object is destroyed.
  impl_->send_buffer_.reset(0);
  impl_->recv_buffer_.reset(0);
  return r.status();
}

}  // namespace hzio
