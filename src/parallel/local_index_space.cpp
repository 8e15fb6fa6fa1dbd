// Domain partitioning in local index space (docs/guide/parallel-io.md "Partitions"): one IDX dataset per
// partition, indexed by the bitmask's characters after the partition template, and a .midx mosaic that
// places them. Creating, opening and flushing such a dataset; the groups and the parts of straddling
// boxes are those of the global index space (partitioned_flush.cpp).
#include <algorithm>
#include <cstring>
#include <utility>

#include "core/dataset_parts.hpp"
#include "core/write_tally.hpp"
#include "io/posix_file.hpp"
#include "parallel/mpi_util.hpp"
#include "parallel/parallel_dataset_impl.hpp"
#include "util/clock.hpp"

namespace hzio {

using parallel::agree;

namespace {

// The folder part of `path` with its trailing slash ("" for a bare name).
std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// The whole domain of a mosaic, x first.
Box domain_of(const Mosaic& m) {
  Box b{{0, 0, 0}, {1, 1, 1}};
  for (int a = 0; a < m.ndim; ++a) b.hi[a] = m.dims[a];
  return b;
}

// Writes the part datasets and the .midx (rank 0 of a create). Returns the mosaic written.
Result<Mosaic> write_mosaic(const std::string& path, const std::string& midx, const CreateOptions& options,
                            const ParallelOptions& parallel) {
  HZIO_ASSIGN_OR_RETURN(format::IdxFile idx, core::idx_for_create(path, options));
  HZIO_ASSIGN_OR_RETURN(hzorder::Partitions parts,
                        hzorder::Partitions::make(idx.bitmask, idx.bits_per_block, idx.box, parallel.partitions));
  const int maxh = idx.bitmask.max_level();
  if (parts.bits() >= maxh) {
    return invalid_argument(std::to_string(parallel.partitions) +
                            " partitions in local index space need a bitmask of "
                            "more than " +
                            std::to_string(parts.bits()) + " characters; " + idx.bitmask.text() + " has " +
                            std::to_string(maxh));
  }
  if (!options.overwrite && io::file_exists(midx)) {
    return invalid_argument("dataset " + midx + " already exists (pass overwrite to replace it)");
  }
  // Readers take an .idx at the created path before the mosaic next to it: one there would hide it.
  const std::string idx_path = midx.substr(0, midx.size() - 5) + ".idx";
  if (io::file_exists(idx_path)) {
    return invalid_argument("an IDX dataset exists at " + idx_path + ", which would hide the mosaic " + midx +
                            " from readers; remove it or choose another name");
  }
  Mosaic m;
  m.ndim = static_cast<int>(options.dims.size());
  for (int a = 0; a < m.ndim; ++a) m.dims[a] = options.dims[static_cast<size_t>(a)];
  m.bitmask = idx.bitmask.text();
  m.bits_per_block = idx.bits_per_block;
  m.partitions = parallel.partitions;
  for (int p = 0; p < parts.count(); ++p) {
    const Box& box = parts.box(p);
    if (box.empty()) continue;
    CreateOptions part = options;
    for (int a = 0; a < m.ndim; ++a) part.dims[static_cast<size_t>(a)] = box.extent(a);
    part.bitmask = "V" + m.bitmask.substr(1 + static_cast<size_t>(parts.bits()));
    part.bits_per_block = std::min(idx.bits_per_block, maxh - parts.bits());
    const std::string name = mosaic_part_name(midx, p);
    HZIO_ASSIGN_OR_RETURN(auto ds, Dataset::create(folder_of(midx) + name, part));
    HZIO_RETURN_IF_ERROR(ds->close());
    m.parts.push_back({p, name, box.lo});
  }
  HZIO_RETURN_IF_ERROR(io::replace_file_atomically(midx, m.to_text(), parallel.durable));
  return m;
}

// Whether a part's dataset is the one its mosaic places: its box is its partition's, moved to 0, and its
// bitmask the rest of the whole domain's.
Status check_part(Dataset& part, const Box& box, const std::string& bitmask) {
  const core::DatasetParts d(part);
  Box want = box;
  for (int a = 0; a < 3; ++a) {
    want.hi[a] -= want.lo[a];
    want.lo[a] = 0;
  }
  if (d.idx.box.lo != want.lo || d.idx.box.hi != want.hi || d.idx.bitmask.text() != bitmask) {
    return format_error(d.path + " is not the part its mosaic places there: box " + d.idx.box.to_string() +
                        " and bitmask " + d.idx.bitmask.text() + ", not " + want.to_string() + " and " + bitmask);
  }
  return Status::ok();
}

// Every rank's view of a mosaic: its parts' paths, and the first part opened for its metadata.
Status attach_mosaic(ParallelDataset::Impl& impl, const std::string& midx, const ParallelOptions& parallel) {
  HZIO_ASSIGN_OR_RETURN(std::string text, io::read_text_file(midx, size_t{256} << 20));  // 2^20 parts fit
  HZIO_ASSIGN_OR_RETURN(Mosaic m, Mosaic::parse(text));
  HZIO_ASSIGN_OR_RETURN(MosaicGeometry geometry, check_mosaic(m));
  if (parallel.partitions > 1 && parallel.partitions != m.partitions) {
    return invalid_argument(midx + " has " + std::to_string(m.partitions) + " partitions, not " +
                            std::to_string(parallel.partitions));
  }
  auto mosaic = std::make_unique<ParallelDataset::Impl::MosaicState>();
  mosaic->midx = midx;
  mosaic->box = domain_of(m);
  mosaic->part_paths.assign(static_cast<size_t>(m.partitions), "");
  for (const auto& part : m.parts)
    mosaic->part_paths[static_cast<size_t>(part.partition)] = folder_of(midx) + part.file;
  HZIO_ASSIGN_OR_RETURN(auto first, Dataset::open(folder_of(midx) + m.parts.front().file,
                                                  {.writable = true,
                                                   .durable = parallel.durable,
                                                   .threads = 1,
                                                   .verify_checksums = parallel.verify_checksums}));
  HZIO_RETURN_IF_ERROR(check_part(*first, geometry.boxes.front(), geometry.part_bitmask));
  mosaic->geometry = std::move(geometry);
  mosaic->file = std::move(m);
  impl.dataset_ = std::move(first);
  impl.mosaic_ = std::move(mosaic);
  impl.options_.partitions = impl.mosaic_->file.partitions;
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<ParallelDataset>> ParallelDataset::Impl::create_mosaic(MPI_Comm comm, const std::string& path,
                                                                              const CreateOptions& options,
                                                                              const ParallelOptions& parallel) {
  HZIO_ASSIGN_OR_RETURN(auto impl, make_parallel_impl(comm, parallel));
  const std::string midx = mosaic_path(path);
  Status s;
  if (impl->rank_ == 0) s = write_mosaic(path, midx, options, parallel).status();
  HZIO_RETURN_IF_ERROR(agree(impl->comm_, s));
  HZIO_RETURN_IF_ERROR(agree(impl->comm_, attach_mosaic(*impl, midx, parallel)));
  return std::unique_ptr<ParallelDataset>(new ParallelDataset(std::move(impl)));
}

Result<std::unique_ptr<ParallelDataset>> ParallelDataset::Impl::open_mosaic(MPI_Comm comm, const std::string& midx,
                                                                            const ParallelOptions& parallel) {
  HZIO_ASSIGN_OR_RETURN(auto impl, make_parallel_impl(comm, parallel));
  HZIO_RETURN_IF_ERROR(agree(impl->comm_, attach_mosaic(*impl, midx, parallel)));
  return std::unique_ptr<ParallelDataset>(new ParallelDataset(std::move(impl)));
}

std::vector<int64_t> ParallelDataset::Impl::staged_times() {
  const auto distinct = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  std::vector<int64_t> mine;
  for (const Staged& st : staged_) mine.push_back(st.time);
  std::vector<int> counts;
  std::vector<int64_t> all = distinct(parallel::allgather_int64(xcomm_, distinct(mine), counts));
  if (part_->leader) all = distinct(parallel::allgather_int64(part_->leaders_comm, all, counts));
  parallel::bcast_int64(xcomm_, all, 0);
  return all;
}

Result<WriteReport> ParallelDataset::Impl::flush_mosaic() {
  core::DatasetParts d = ds();
  core::WriteTally t(d.idx.bitmask.max_level());
  xcomm_ = comm_;
  xrank_ = rank_;
  xsize_ = size_;
  sent_messages_ = sent_bytes_ = aggregated_ = 0;
  part_ = std::make_unique<Partitioned>();
  int64_t staged_bytes = 0;
  for (const Staged& st : staged_)
    staged_bytes += st.box.sample_count() * static_cast<int64_t>(d.coding[static_cast<size_t>(st.field)].dtype.bytes());
  // Per partition this rank's group writes: the write report of that part's collective write.
  std::vector<WriteReport> written;
  bool aggregated = false;  // this rank aggregated a chunk of some part
  Status s;
  double restructure = 0, total = 0;
  {
    util::ScopedSeconds whole(total);
    {
      util::ScopedSeconds timer(restructure);
      s = partition_staged(t);
    }
    // The timesteps staged anywhere: every part commits each, with samples or without.
    std::vector<int64_t> times;
    if (s.is_ok() && part_) times = staged_times();
    for (int p = 0; s.is_ok() && part_ && p < part_->parts.count(); ++p) {
      if (mosaic_->part_paths[static_cast<size_t>(p)].empty()) continue;  // the domain does not reach it
      // A partition without samples anywhere is written (its timesteps only) by the groups in turn.
      const int writer = part_->groups.group_of[static_cast<size_t>(p)] >= 0
                             ? part_->groups.group_of[static_cast<size_t>(p)]
                             : part_->groups.names[static_cast<size_t>(p) % part_->groups.names.size()];
      if (writer != part_->group) continue;
      // The group's collective write of partition p's dataset, in its coordinates; errors agree in the group.
      ParallelOptions po = options_;
      po.partitions = 1;
      po.index_space = IndexSpace::kGlobal;
      auto part = ParallelDataset::open(xcomm_, mosaic_->part_paths[static_cast<size_t>(p)], po, true);
      s = part.status();
      if (!s.is_ok()) break;
      // The same files on every rank of the group: the check agrees by itself.
      s = check_part(part.value()->dataset(), part_->parts.box(p), mosaic_->geometry.part_bitmask);
      if (!s.is_ok()) {
        (void)part.value()->close();
        break;
      }
      const Box& pb = part_->parts.box(p);
      std::vector<util::LargeBuffer> copies;
      for (const Staged& st : staged_) {
        const Box b = st.box.intersect(pb);
        if (b.empty() || !s.is_ok()) continue;
        Box local = b;
        for (int a = 0; a < 3; ++a) {
          local.lo[a] -= pb.lo[a];
          local.hi[a] -= pb.lo[a];
        }
        const size_t sample_bytes = d.coding[static_cast<size_t>(st.field)].dtype.bytes();
        const size_t bytes = static_cast<size_t>(b.sample_count()) * sample_bytes;
        const std::byte* data = st.data;
        if (b.lo != st.box.lo || b.hi != st.box.hi) {
          try {
            copies.emplace_back(util::Pages::kSmall).reset(std::max<size_t>(bytes, 1));
          } catch (const std::bad_alloc&) {
            s = io_error("out of memory cutting a box along a partition plane");
            continue;
          }
          copy_box_part(st.data, st.box, b, sample_bytes, copies.back().data());
          data = copies.back().data();
        }
        s = part.value()->write_box_borrowed(local, d.idx.fields[static_cast<size_t>(st.field)].name, st.time, data,
                                             bytes);
      }
      // Every rank of the group hears of a rank that could not stage its part; then none commits anything
      // of this part (the close commits nothing staged and no timestep), and all leave the loop together.
      s = agree(xcomm_, s);
      if (!s.is_ok()) {
        part.value()->impl_->staged_.clear();
        (void)part.value()->close();
        break;
      }
      part.value()->impl_->extra_times_ = times;
      auto report = part.value()->close();
      s = report;
      if (s.is_ok()) written.push_back(part.value()->last_write_report());
      aggregated |= part.value()->impl_->aggregated_ > 0;
    }
  }
  staged_.clear();
  const double staged_seconds = std::exchange(stage_seconds_, 0.0);  // the report's `stage`, errors or not
  s = agree(comm_, s);
  if (!s.is_ok()) {
    part_.reset();
    xcomm_ = comm_;
    return s;
  }
  // The report: the groups' part writes, summed per group on its leader, then gathered by the leaders.
  WriteReport r;
  r.ranks = size_;
  r.aggregators = r.rounds = 0;  // summed and maximised over the groups below
  r.placement = options_.placement == AggregatorPlacement::kLocalized ? "localized" : "uniform";
  r.index_space = "local";
  r.partitions = mosaic_->file.partitions;
  parallel::allreduce(&staged_bytes, &r.bytes, 1, MPI_INT64_T, MPI_SUM, comm_);
  PhaseTimes mine;
  mine.restructure = restructure;
  if (part_) {
    r.rank_conforming = part_->rank_conforming;
    // The group's aggregators: its ranks that aggregated in any of its parts' writes.
    const int64_t mine_aggregated = aggregated ? 1 : 0;
    int64_t group_aggregators = 0;
    MPI_Request request;
    MPI_Ireduce(&mine_aggregated, &group_aggregators, 1, MPI_INT64_T, MPI_SUM, 0, xcomm_, &request);
    parallel::wait(request);
    int64_t sums[6] = {group_aggregators, 0, 0, 0, 0, 0};  // aggregators, files, messages, message bytes, file
                                                           // bytes, rounds (max)
    for (const WriteReport& w : written) {
      sums[1] += w.files;
      sums[2] += w.messages;
      sums[3] += w.message_bytes;
      sums[4] += w.file_bytes;
      sums[5] = std::max<int64_t>(sums[5], w.rounds);
      mine.restructure += w.max.restructure;  // the part's own planning
      mine.hz += w.max.hz;
      mine.aggregate += w.max.aggregate;
      mine.compress += w.max.compress;
      mine.stats += w.max.stats;
      mine.write += w.max.write;
      mine.commit += w.max.commit;
    }
    for (const auto& row : group_rows({part_->group, xsize_, sums[0], sums[1], sums[2], sums[3], sums[4], sums[5]})) {
      const PartitionGroupReport g = group_report(row);
      r.file_bytes += row[6];
      r.rounds = std::max(r.rounds, static_cast<int>(row[7]));
      r.groups.push_back(g);
      r.aggregators += g.aggregators;
      r.files += g.files;
      r.messages += g.messages;
      r.message_bytes += g.bytes;
    }
    std::sort(r.groups.begin(), r.groups.end(),
              [](const PartitionGroupReport& a, const PartitionGroupReport& b) { return a.partition < b.partition; });
    const int64_t moved[2] = {part_->moved_messages, part_->moved_bytes};
    int64_t moved_all[2] = {0, 0};
    parallel::allreduce(moved, moved_all, 2, MPI_INT64_T, MPI_SUM, comm_);
    r.moved_messages = moved_all[0];
    r.moved_bytes = moved_all[1];
    r.messages += r.moved_messages;
    r.message_bytes += r.moved_bytes;
  }
  // Phases: each rank's own (its part writes' slowest rank per phase, summed over its parts), then the
  // maximum and the mean over ranks.
  core::account_wall(mine, total, staged_seconds);
  double in[core::kPhases.size()], max[core::kPhases.size()], sum[core::kPhases.size()];
  for (size_t i = 0; i < core::kPhases.size(); ++i) in[i] = mine.*core::kPhases[i];
  const int n = static_cast<int>(core::kPhases.size());
  parallel::allreduce(in, max, n, MPI_DOUBLE, MPI_MAX, comm_);
  parallel::allreduce(in, sum, n, MPI_DOUBLE, MPI_SUM, comm_);
  PhaseTimes* out[2] = {&r.max, &r.mean};
  for (int k = 0; k < 2; ++k) {
    const double* v = k == 0 ? max : sum;
    const double scale = k == 0 ? 1.0 : 1.0 / size_;
    for (size_t i = 0; i < core::kPhases.size(); ++i) out[k]->*core::kPhases[i] = v[i] * scale;
  }
  part_.reset();
  xcomm_ = comm_;
  last_write_report_ = r;
  return r;
}

}  // namespace hzio
