// The steps of a partitioned collective flush (docs/guide/parallel-io.md "Partitions"): groups of ranks,
// parts of boxes sent across partition planes, the merge of the shared files, the files each new
// timestep gets and the report. Every exchange between groups carries R values per rank, or data.
#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <tuple>

#include "format/file_name.hpp"
#include "hzio/index_template.hpp"
#include "parallel/mpi_util.hpp"
#include "parallel/parallel_dataset_impl.hpp"
#include "parallel/records.hpp"
#include "util/clock.hpp"

namespace hzio {

using parallel::agree;

namespace {

constexpr int kMoveTag = 3, kMergeTag = 4;
constexpr int64_t kMergeChunkBytes = int64_t{16} << 20;  // decoded bytes a merger holds per chunk of a file

int64_t padded(int64_t n) { return (n + 7) & ~int64_t{7}; }

// A part sent to another group: field, time, box (x first) and the samples' bytes, then the samples.
constexpr size_t kPartHeader = 9 * sizeof(int64_t);

// A shared file's records one group sends its merger: time, first block, group and the records' bytes.
constexpr size_t kSegmentHeader = 4 * sizeof(int64_t);

// Receives `count` messages with `tag` from any rank of `comm`, packed in arrival order into `arena` of
// `capacity` bytes, and appends their spans to `out` (reserved by the caller: nothing here allocates). A
// message that does not fit is consumed and reported as `too_large`; the others are still received.
Status receive_packed(MPI_Comm comm, int tag, int64_t count, std::byte* arena, int64_t capacity, const char* too_large,
                      std::vector<std::span<const std::byte>>& out) {
  Status s;
  int64_t at = 0;
  for (int64_t k = 0; k < count; ++k) {
    MPI_Status status;
    MPI_Message message = parallel::probe(comm, MPI_ANY_SOURCE, tag, status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    if (at + bytes > capacity) {
      MPI_Mrecv(nullptr, 0, MPI_BYTE, &message, MPI_STATUS_IGNORE);  // truncates: reported
      s = internal_error(too_large);
      continue;
    }
    MPI_Mrecv(arena + at, bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE);
    out.emplace_back(arena + at, static_cast<size_t>(bytes));
    at += bytes;
  }
  return s;
}

}  // namespace

void copy_box_part(const std::byte* data, const Box& box, const Box& part, size_t sample_bytes, std::byte* out) {
  const auto row = static_cast<size_t>(part.extent(0)) * sample_bytes;
  for (int64_t z = part.lo[2]; z < part.hi[2]; ++z)
    for (int64_t y = part.lo[1]; y < part.hi[1]; ++y) {
      const int64_t at = ((z - box.lo[2]) * box.extent(1) + (y - box.lo[1])) * box.extent(0) + (part.lo[0] - box.lo[0]);
      std::memcpy(out, data + static_cast<size_t>(at) * sample_bytes, row);
      out += row;
    }
}

Result<hzorder::Partitions> ParallelDataset::Impl::partitions() {
  if (mosaic_) {
    HZIO_ASSIGN_OR_RETURN(format::Bitmask bitmask, format::Bitmask::parse(mosaic_->file.bitmask));
    return hzorder::Partitions::make(bitmask, mosaic_->file.bits_per_block, mosaic_->box, mosaic_->file.partitions);
  }
  const core::DatasetParts d = ds();
  return hzorder::Partitions::make(d.idx.bitmask, d.idx.bits_per_block, d.idx.box, options_.partitions);
}

ParallelDataset::Impl::Partitioned::~Partitioned() {
  if (group_comm != MPI_COMM_NULL) MPI_Comm_free(&group_comm);
  if (leaders_comm != MPI_COMM_NULL) MPI_Comm_free(&leaders_comm);
}

Status ParallelDataset::Impl::partition_staged(core::WriteTally& t) {
  (void)t;
  core::DatasetParts d = ds();
  auto made = partitions();
  HZIO_RETURN_IF_ERROR(agree(comm_, made.status()));
  Partitioned& P = *part_;
  P.parts = std::move(made).value();
  const int n = P.parts.count();

  // Rank-conforming, each rank on its own box (docs: one box each of rank 0's first field and timestep).
  std::vector<int64_t> first{-1, 0};
  if (rank_ == 0 && !staged_.empty()) first = {staged_[0].field, staged_[0].time};
  parallel::bcast_int64(comm_, first, 0);
  {
    int count = 0;
    Box mine;
    for (const Staged& s : staged_) {
      if (s.field == first[0] && s.time == first[1]) {
        ++count;
        mine = s.box;
      }
    }
    const std::string bitmask = mosaic_ ? mosaic_->file.bitmask : d.idx.bitmask.text();
    int conforms = first[0] >= 0 && count == 1 && check_rank_box(bitmask, size_, rank_, mine).is_ok();
    int all = 0;
    parallel::allreduce(&conforms, &all, 1, MPI_INT, MPI_LAND, comm_);
    P.rank_conforming = all != 0;
  }

  // The groups, from three all-reduces of R values.
  std::vector<int64_t> samples(static_cast<size_t>(n), 0);
  for (const Staged& s : staged_) {
    const std::vector<int64_t> c = P.parts.samples_of(s.box);
    for (int p = 0; p < n; ++p) samples[static_cast<size_t>(p)] += c[static_cast<size_t>(p)];
  }
  const int preferred = parallel::preferred_partition(samples);
  std::vector<int> mins(static_cast<size_t>(2 * n), INT_MAX), min_all(mins.size());
  if (preferred >= 0) mins[static_cast<size_t>(preferred)] = rank_;
  for (int p = 0; p < n; ++p)
    if (samples[static_cast<size_t>(p)] > 0) mins[static_cast<size_t>(n + p)] = rank_;
  parallel::allreduce(mins.data(), min_all.data(), 2 * n, MPI_INT, MPI_MIN, comm_);
  parallel::PartitionVotes votes;
  votes.first_preferring.assign(min_all.begin(), min_all.begin() + n);
  votes.first_holding.assign(min_all.begin() + n, min_all.end());
  std::vector<int> pref(static_cast<size_t>(n), -1);
  votes.holder_preference.assign(static_cast<size_t>(n), -1);
  for (int p = 0; p < n; ++p)
    if (votes.first_holding[static_cast<size_t>(p)] == rank_) pref[static_cast<size_t>(p)] = preferred;
  parallel::allreduce(pref.data(), votes.holder_preference.data(), n, MPI_INT, MPI_MAX, comm_);
  P.groups = parallel::choose_groups(votes);
  if (P.groups.empty()) {  // nothing staged anywhere: an unpartitioned flush writes nothing the same way
    part_.reset();
    return Status::ok();
  }
  P.group = P.groups.group_of_rank(rank_, preferred);
  P.leader = P.groups.leader[static_cast<size_t>(P.group)] == rank_;
  int first_leader = INT_MAX;
  for (int g : P.groups.names) first_leader = std::min(first_leader, P.groups.leader[static_cast<size_t>(g)]);
  P.writes_idx = rank_ == first_leader;

  // Parts of boxes that lie in other groups' partitions: cut them out, sized before anything moves.
  struct Out {
    int group;
    size_t staged;
    Box part;
    int64_t at;  // in the send arena
    int64_t bytes;
  };
  std::vector<Out> outs;
  std::vector<Staged> kept;
  std::vector<std::pair<size_t, std::optional<Box>>> kept_parts;  // staged index and part (none: whole)
  std::vector<int64_t> sums(static_cast<size_t>(2 * n), 0);       // per group: parts, then bytes, for its leader
  int64_t send_bytes = 0, largest = 0;
  for (size_t i = 0; i < staged_.size(); ++i) {
    const Staged& st = staged_[i];
    const std::vector<parallel::BoxPart> parts = parallel::split_box(P.parts, P.groups, st.box, P.group);
    if (parts.size() == 1 && parts[0].group == P.group) {
      kept_parts.emplace_back(i, std::nullopt);  // whole: moved, not copied
      continue;
    }
    const size_t sample_bytes = d.coding[static_cast<size_t>(st.field)].dtype.bytes();
    for (const parallel::BoxPart& bp : parts) {
      if (bp.group == P.group) {
        kept_parts.emplace_back(i, bp.box);
        continue;
      }
      const int64_t bytes =
          static_cast<int64_t>(kPartHeader) + padded(bp.box.sample_count() * static_cast<int64_t>(sample_bytes));
      outs.push_back({bp.group, i, bp.box, send_bytes, bytes});
      send_bytes += bytes;
      largest = std::max(largest, bytes);
      sums[static_cast<size_t>(bp.group)] += 1;
      sums[static_cast<size_t>(n + bp.group)] += bytes;
    }
  }
  std::vector<int64_t> sums_all(sums.size());
  parallel::allreduce(sums.data(), sums_all.data(), 2 * n, MPI_INT64_T, MPI_SUM, comm_);
  int64_t largest_all = 0;
  parallel::allreduce(&largest, &largest_all, 1, MPI_INT64_T, MPI_MAX, comm_);
  const int64_t incoming = P.leader ? sums_all[static_cast<size_t>(P.group)] : 0;
  const int64_t incoming_bytes = P.leader ? sums_all[static_cast<size_t>(n + P.group)] : 0;
  Status ready = largest_all > INT_MAX
                     ? unsupported("a part of a box straddling a partition plane holds more than 2 GiB; split the box")
                     : Status::ok();
  util::LargeBuffer send(util::Pages::kSmall);  // write-path memory: small pages (large_buffer.hpp)
  try {
    if (ready.is_ok()) {
      send.reset(static_cast<size_t>(std::max<int64_t>(send_bytes, 1)));
      P.arena.reset(static_cast<size_t>(std::max<int64_t>(incoming_bytes, 1)));
      for (const auto& [i, part] : kept_parts) {
        Staged& st = staged_[i];
        if (!part) {
          kept.push_back(std::move(st));
          continue;
        }
        const size_t sample_bytes = d.coding[static_cast<size_t>(st.field)].dtype.bytes();
        Staged k{.field = st.field, .time = st.time, .box = *part};
        k.copy.reset(std::max<size_t>(static_cast<size_t>(part->sample_count()) * sample_bytes, 1));
        copy_box_part(st.data, st.box, *part, sample_bytes, k.copy.data());
        k.data = k.copy.data();
        kept.push_back(std::move(k));
      }
    }
  } catch (const std::bad_alloc&) {
    ready = io_error("out of memory for the parts of boxes that straddle partition planes");
  }
  for (const Out& o : outs) {
    if (!ready.is_ok()) break;
    const Staged& st = staged_[o.staged];
    std::byte* at = send.data() + o.at;
    const int64_t head[9] = {st.field,     st.time,      o.part.lo[0],
                             o.part.lo[1], o.part.lo[2], o.part.hi[0],
                             o.part.hi[1], o.part.hi[2], o.bytes - static_cast<int64_t>(kPartHeader)};
    std::memcpy(at, head, kPartHeader);
    copy_box_part(st.data, st.box, o.part, d.coding[static_cast<size_t>(st.field)].dtype.bytes(), at + kPartHeader);
  }
  HZIO_RETURN_IF_ERROR(agree(comm_, ready));

  // The exchange: parts to the leaders, which stage them as their own (they never overlap other ranks').
  std::vector<MPI_Request> requests(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const Out& o = outs[k];
    MPI_Isend(send.data() + o.at, static_cast<int>(o.bytes), MPI_BYTE, P.groups.leader[static_cast<size_t>(o.group)],
              kMoveTag, comm_, &requests[k]);
    ++P.moved_messages;
    P.moved_bytes += o.bytes;
  }
  Status s;
  std::vector<std::span<const std::byte>> arrived;
  arrived.reserve(static_cast<size_t>(incoming));
  s = receive_packed(comm_, kMoveTag, incoming, P.arena.data(), incoming_bytes,
                     "a part of a box arrived larger than announced", arrived);
  for (std::span<const std::byte> m : arrived) {
    int64_t head[9];
    std::memcpy(head, m.data(), kPartHeader);
    Staged r{static_cast<int>(head[0]),
             head[1],
             Box{{head[2], head[3], head[4]}, {head[5], head[6], head[7]}},
             {},
             m.data() + kPartHeader};
    if (r.field < 0 || r.field >= static_cast<int>(d.coding.size()) ||
        head[8] < r.box.sample_count() * static_cast<int64_t>(d.coding[static_cast<size_t>(r.field)].dtype.bytes()))
      s = internal_error("a part of a box arrived malformed");
    else
      kept.push_back(std::move(r));
  }
  parallel::wait_all(requests);
  staged_ = std::move(kept);
  HZIO_RETURN_IF_ERROR(agree(comm_, s));

  // The group's communicator (its leader first) and the leaders'.
  const int key = preferred >= 0 ? rank_ : size_ + rank_;
  MPI_Comm_split(comm_, P.group, key, &P.group_comm);
  MPI_Comm_split(comm_, P.leader ? 0 : MPI_UNDEFINED, rank_, &P.leaders_comm);
  xcomm_ = P.group_comm;
  MPI_Comm_rank(xcomm_, &xrank_);
  MPI_Comm_size(xcomm_, &xsize_);
  return Status::ok();
}

Status ParallelDataset::Impl::forward_chunk(const parallel::Chunk& chunk,
                                            const std::vector<parallel::Record>& records) {
  core::DatasetParts d = ds();
  Partitioned& P = *part_;
  const int merger = P.groups.merger(chunk.time, chunk.first_block / d.idx.blocks_per_file);
  std::vector<std::byte>& out = P.forward[merger];
  const size_t start = out.size();
  try {
    append_segment(chunk, records, out);
  } catch (const std::bad_alloc&) {
    out.resize(start);
    return io_error("out of memory keeping the records of shared file " + std::to_string(chunk.first_block) +
                    " for its merger; lower aggregator_bytes or use fewer partitions");
  }
  return Status::ok();
}

void ParallelDataset::Impl::append_segment(const parallel::Chunk& chunk, const std::vector<parallel::Record>& records,
                                           std::vector<std::byte>& out) {
  core::DatasetParts d = ds();
  const size_t start = out.size();
  out.resize(start + kSegmentHeader);
  for (const parallel::Record& r : records) {
    const parallel::RecordHeader& h = r.header;
    if (h.time != chunk.time || format::first_block_of_file(d.idx, static_cast<int64_t>(h.block)) != chunk.first_block)
      continue;
    const int64_t e = format::entry_in_file(d.idx, h.field, h.block);
    if (e < chunk.entry_begin || e >= chunk.entry_end) continue;
    parallel::RecordHeader attached = h;
    attached.detached = 0;
    const size_t at = out.size();
    out.resize(at + sizeof attached + static_cast<size_t>(padded(static_cast<int64_t>(h.bytes))) + h.stats_bytes);
    std::memcpy(out.data() + at, &attached, sizeof attached);
    if (h.bytes > 0) std::memcpy(out.data() + at + sizeof attached, r.data, h.bytes);
    if (h.stats_bytes > 0)
      std::memcpy(out.data() + at + sizeof attached + static_cast<size_t>(padded(static_cast<int64_t>(h.bytes))),
                  r.stats, h.stats_bytes);
  }
  const int64_t head[4] = {chunk.time, chunk.first_block, part_->group,
                           static_cast<int64_t>(out.size() - start - kSegmentHeader)};
  std::memcpy(out.data() + start, head, kSegmentHeader);
}

Status ParallelDataset::Impl::merge_shared(core::WriteTally& t) {
  Partitioned& P = *part_;
  const int n = P.parts.count();
  // Messages and bytes each merger (named by its group) receives from the others.
  std::vector<int64_t> sums(static_cast<size_t>(2 * n), 0), sums_all(sums.size());
  int64_t largest = 0;
  std::vector<int> group_of_leader;  // merger rank -> its group, through the groups' names
  for (const auto& [merger, bytes] : P.forward) {
    if (merger == rank_) continue;
    int g = -1;
    for (int name : P.groups.names)
      if (P.groups.leader[static_cast<size_t>(name)] == merger) g = name;
    sums[static_cast<size_t>(g)] += 1;
    sums[static_cast<size_t>(n + g)] += static_cast<int64_t>(bytes.size());
    largest = std::max(largest, static_cast<int64_t>(bytes.size()));
  }
  parallel::allreduce(sums.data(), sums_all.data(), 2 * n, MPI_INT64_T, MPI_SUM, comm_);
  int64_t largest_all = 0;
  parallel::allreduce(&largest, &largest_all, 1, MPI_INT64_T, MPI_MAX, comm_);
  const int64_t incoming = P.leader ? sums_all[static_cast<size_t>(P.group)] : 0;
  const int64_t incoming_bytes = P.leader ? sums_all[static_cast<size_t>(n + P.group)] : 0;
  Status ready = largest_all > INT_MAX ? unsupported(
                                             "one group's records of the shared files exceed 2 GiB; use "
                                             "fewer partitions or fewer blocks per file")
                                       : Status::ok();
  util::LargeBuffer arena(util::Pages::kSmall);
  if (ready.is_ok()) {
    try {
      arena.reset(static_cast<size_t>(std::max<int64_t>(incoming_bytes, 1)));
    } catch (const std::bad_alloc&) {
      ready =
          io_error("out of memory for the records of the shared files (" + std::to_string(incoming_bytes) + " bytes)");
    }
  }
  HZIO_RETURN_IF_ERROR(agree(comm_, ready));
  std::vector<MPI_Request> requests;
  {
    util::ScopedSeconds timer(t.phases.aggregate);
    for (auto& [merger, bytes] : P.forward) {
      if (merger == rank_) continue;
      requests.emplace_back();
      MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, merger, kMergeTag, comm_, &requests.back());
      ++P.forward_messages;
      P.forward_bytes += static_cast<int64_t>(bytes.size());
    }
  }
  // Segments: this rank's own, then those received.
  std::vector<std::span<const std::byte>> messages;
  messages.reserve(static_cast<size_t>(incoming) + 1);  // before the receives: they must not throw
  if (const auto it = P.forward.find(rank_); it != P.forward.end()) messages.emplace_back(it->second);
  Status s;
  {
    util::ScopedSeconds timer(t.phases.aggregate);
    s = receive_packed(comm_, kMergeTag, incoming, arena.data(), incoming_bytes,
                       "records of shared files arrived larger than announced", messages);
    parallel::wait_all(requests);
  }
  if (!s.is_ok()) return s;
  try {
    return write_merged(messages, t);
  } catch (const std::bad_alloc&) {
    return io_error("out of memory merging the shared files; use fewer partitions or fewer blocks per file");
  }
}

Status ParallelDataset::Impl::write_merged(const std::vector<std::span<const std::byte>>& messages,
                                           core::WriteTally& t) {
  core::DatasetParts d = ds();
  Partitioned& P = *part_;
  // Records by file; within a file in group order, so that a rank's records keep their order.
  struct Segment {
    int64_t time, first, group;
    std::span<const std::byte> records;
  };
  std::vector<Segment> segments;
  for (std::span<const std::byte> m : messages) {
    size_t pos = 0;
    while (pos < m.size()) {
      int64_t head[4];
      if (m.size() - pos < kSegmentHeader) return internal_error("truncated records of a shared file");
      std::memcpy(head, m.data() + pos, kSegmentHeader);
      pos += kSegmentHeader;
      if (head[3] < 0 || static_cast<size_t>(head[3]) > m.size() - pos)
        return internal_error("truncated records of a shared file");
      segments.push_back({head[0], head[1], head[2], m.subspan(pos, static_cast<size_t>(head[3]))});
      pos += static_cast<size_t>(head[3]);
    }
  }
  std::stable_sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) {
    return std::tie(a.time, a.first, a.group) < std::tie(b.time, b.first, b.group);
  });
  for (size_t i = 0; i < segments.size();) {
    size_t j = i;
    std::vector<parallel::Record> records;
    for (; j < segments.size() && segments[j].time == segments[i].time && segments[j].first == segments[i].first; ++j)
      HZIO_RETURN_IF_ERROR(parallel::parse_records(segments[j].records, records));
    const int64_t time = segments[i].time, first = segments[i].first;
    i = j;
    std::vector<int64_t> entries;
    for (const parallel::Record& r : records)
      entries.push_back(format::entry_in_file(d.idx, r.header.field, r.header.block));
    std::sort(entries.begin(), entries.end());
    entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
    // The file in chunks of consecutive entries under the merge budget, appended in entry order.
    for (size_t a = 0; a < entries.size();) {
      parallel::Chunk c{time, first, entries[a], entries[a], rank_, 0};
      size_t b = a;
      for (; b < entries.size(); ++b) {
        const auto eb = static_cast<int64_t>(d.block_bytes(static_cast<int>(entries[b] / d.idx.blocks_per_file)));
        if (b > a && c.bytes + eb > kMergeChunkBytes) break;
        c.bytes += eb;
        c.entry_end = entries[b] + 1;
      }
      parallel::ChunkSlots slots;
      HZIO_RETURN_IF_ERROR(parallel::reserve_chunk(d, c,
                                                   std::vector<int64_t>(entries.begin() + static_cast<ptrdiff_t>(a),
                                                                        entries.begin() + static_cast<ptrdiff_t>(b)),
                                                   slots));
      HZIO_RETURN_IF_ERROR(parallel::write_chunk(d, c, records, slots, t));
      a = b;
    }
    P.merged.emplace_back(time, first);
  }
  return Status::ok();
}

Status ParallelDataset::Impl::gather_written(const parallel::WritePlan& plan, std::vector<int64_t>& times,
                                             std::map<int64_t, std::vector<int64_t>>& files) {
  core::DatasetParts d = ds();
  Partitioned& P = *part_;
  // The group's own files (every rank of the group has its plan), and the files merged by its leader.
  std::vector<std::pair<int64_t, int64_t>> own;
  for (const parallel::Chunk& c : plan.chunks)
    if (P.parts.of_blocks(static_cast<uint64_t>(c.first_block), static_cast<uint64_t>(d.idx.blocks_per_file)) >= 0)
      own.emplace_back(c.time, c.first_block);
  std::sort(own.begin(), own.end());
  own.erase(std::unique(own.begin(), own.end()), own.end());
  P.group_files = static_cast<int64_t>(own.size());
  std::vector<int64_t> mine;
  if (P.leader) {
    for (const auto& [tm, f] : own) mine.insert(mine.end(), {tm, f});
    for (const auto& [tm, f] : P.merged) mine.insert(mine.end(), {tm, f});
  }
  std::vector<int64_t> all;
  if (P.leader) all = parallel::gather_int64(P.leaders_comm, mine, 0);
  std::vector<int64_t> new_times;
  if (P.writes_idx) {
    for (size_t k = 0; k + 1 < all.size(); k += 2) {
      files[all[k]].push_back(all[k + 1]);
      new_times.push_back(all[k]);
    }
    std::sort(new_times.begin(), new_times.end());
    new_times.erase(std::unique(new_times.begin(), new_times.end()), new_times.end());
  }
  // Every rank learns the timesteps from the rank writing the .idx.
  int root = P.writes_idx ? rank_ : 0;
  int root_all = 0;
  parallel::allreduce(&root, &root_all, 1, MPI_INT, MPI_MAX, comm_);
  parallel::bcast_int64(comm_, new_times, root_all);
  times = new_times;
  return Status::ok();
}

std::vector<std::vector<int64_t>> ParallelDataset::Impl::group_rows(const std::vector<int64_t>& row) {
  std::vector<int64_t> all;
  if (part_->leader) {
    std::vector<int> counts;
    all = parallel::allgather_int64(part_->leaders_comm, row, counts);
  }
  parallel::bcast_int64(xcomm_, all, 0);
  std::vector<std::vector<int64_t>> rows;
  for (size_t k = 0; k + row.size() <= all.size(); k += row.size())
    rows.emplace_back(all.begin() + static_cast<ptrdiff_t>(k), all.begin() + static_cast<ptrdiff_t>(k + row.size()));
  return rows;
}

PartitionGroupReport ParallelDataset::Impl::group_report(const std::vector<int64_t>& row) const {
  PartitionGroupReport g;
  g.partition = static_cast<int>(row[0]);
  for (int p = 0; p < part_->parts.count(); ++p)
    if (part_->groups.group_of[static_cast<size_t>(p)] == g.partition) g.partitions.push_back(p);
  g.ranks = static_cast<int>(row[1]);
  g.aggregators = static_cast<int>(row[2]);
  g.files = row[3];
  g.messages = row[4];
  g.bytes = row[5];
  return g;
}

void ParallelDataset::Impl::reduce_partitioned(WriteReport& r, int rounds) {
  Partitioned& P = *part_;
  r.partitions = P.parts.count();
  r.rank_conforming = P.rank_conforming;
  // Per group, summed on its leader: aggregators, messages, bytes.
  const int64_t mine[3] = {aggregated_ > 0 ? 1 : 0, sent_messages_, sent_bytes_};
  int64_t group[3] = {0, 0, 0};
  MPI_Request request;
  MPI_Ireduce(mine, group, 3, MPI_INT64_T, MPI_SUM, 0, xcomm_, &request);
  parallel::wait(request);
  for (const auto& row : group_rows({P.group, xsize_, group[0], P.group_files, group[1], group[2]}))
    r.groups.push_back(group_report(row));
  std::sort(r.groups.begin(), r.groups.end(),
            [](const PartitionGroupReport& a, const PartitionGroupReport& b) { return a.partition < b.partition; });
  const int64_t world[8] = {
      P.forward_messages, P.forward_bytes, static_cast<int64_t>(P.merged.size()),        P.merged.empty() ? 0 : 1,
      P.moved_messages,   P.moved_bytes,   aggregated_ > 0 || !P.merged.empty() ? 1 : 0, P.leader ? P.group_files : 0};
  int64_t sum[8];
  parallel::allreduce(world, sum, 8, MPI_INT64_T, MPI_SUM, comm_);
  int most = rounds, most_all = 0;
  parallel::allreduce(&most, &most_all, 1, MPI_INT, MPI_MAX, comm_);
  double merge_seconds = 0;
  parallel::allreduce(&P.merge_seconds, &merge_seconds, 1, MPI_DOUBLE, MPI_MAX, comm_);
  r.merge = {static_cast<int>(sum[3]), sum[2], sum[0], sum[1], merge_seconds};
  r.moved_messages = sum[4];
  r.moved_bytes = sum[5];
  r.aggregators = static_cast<int>(sum[6]);
  r.files = sum[7] + sum[2];
  r.rounds = most_all;
  r.messages += sum[0] + sum[4];
  r.message_bytes += sum[1] + sum[5];
}

}  // namespace hzio
