// Collective reads: independent (each rank reads its own blocks) or two-phase (one rank reads each
// data file once and sends decoded blocks to the ranks that asked) (docs/guide/parallel-io.md "Reads").
#include "parallel/parallel_read.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <set>

#include "core/dataset_parts.hpp"
#include "core/window_assembly.hpp"
#include "format/file_name.hpp"
#include "parallel/mpi_util.hpp"
#include "parallel/read_plan.hpp"
#include "util/large_buffer.hpp"

namespace hzio::parallel {

namespace {

// Heads each block a two-phase reader sends.
struct SentBlockHeader {
  int32_t field = 0;
  int32_t layout = 0;  // 0 HZ order, 1 row-major, -1 missing
  int64_t time = 0;
  uint64_t block = 0;
  uint64_t stored = 0;  // payload bytes on disk (for min_bytes)
  uint64_t bytes = 0;   // decoded bytes that follow
};

std::vector<ReadRequest> gather_requests(MPI_Comm comm, const ReadRequest& mine) {
  std::vector<int64_t> v = {mine.field,     mine.time,      mine.level,     mine.box.lo[0], mine.box.lo[1],
                            mine.box.lo[2], mine.box.hi[0], mine.box.hi[1], mine.box.hi[2], mine.empty ? 1 : 0};
  std::vector<int> counts;
  const auto all = allgather_int64(comm, v, counts);
  std::vector<ReadRequest> out(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) {
    const int64_t* p = all.data() + r * 10;
    out[r] = {static_cast<int>(p[0]), p[1], static_cast<int>(p[2]), Box{{p[3], p[4], p[5]}, {p[6], p[7], p[8]}},
              p[9] != 0};
  }
  return out;
}

// Sends each rank its part of `send` (counts[r] bytes at displs[r]) with one MPI_Alltoallv into `in`
// (reused between rounds). Errors, on every rank, if a rank would send or receive 2 GiB or more.
Status alltoall_blocks(MPI_Comm comm, const util::LargeBuffer& send, const std::vector<int64_t>& counts,
                       const std::vector<int64_t>& displs, util::LargeBuffer& in, int64_t& received) {
  const int size = static_cast<int>(counts.size());
  const int64_t stotal = displs.empty() ? 0 : displs.back() + counts.back();
  Status big = stotal > INT_MAX ? unsupported("a read round sends 2 GiB or more from one rank") : Status::ok();
  HZIO_RETURN_IF_ERROR(agree(comm, big));
  std::vector<int> sc(size), sd(size), rc(size), rd(size);
  for (int r = 0; r < size; ++r) {
    sc[r] = static_cast<int>(counts[r]);
    sd[r] = static_cast<int>(displs[r]);
  }
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm);
  received = 0;
  for (int r = 0; r < size; ++r) {
    rd[r] = static_cast<int>(received);
    received += rc[r];
  }
  big = received > INT_MAX ? unsupported("a read round receives 2 GiB or more on one rank") : Status::ok();
  if (big.is_ok()) {
    try {
      in.reset(static_cast<size_t>(std::max<int64_t>(received, 1)));
    } catch (const std::bad_alloc&) {
      big = io_error("out of memory receiving " + std::to_string(received) + " bytes of blocks");
    }
  }
  HZIO_RETURN_IF_ERROR(agree(comm, big));
  MPI_Request request;
  MPI_Ialltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, in.data(), rc.data(), rd.data(), MPI_BYTE, comm,
                 &request);
  parallel::wait(request);
  return Status::ok();
}

// The blocks of one two-phase round that this rank reads for everyone: raw blocks of committed files
// straight from the file's mapping, others decoded into buffers of their own.
struct ReadBlocks {
  std::vector<SentBlockHeader> heads;
  std::vector<const std::byte*> data;
  std::vector<std::vector<std::byte>> decoded;
};

Status read_for_everyone(core::DatasetParts& d, const std::vector<BlockKey>& keys, ReadBlocks& out, ReadReport& rep) {
  const size_t n = keys.size();
  out.heads.assign(n, {});
  out.data.assign(n, nullptr);
  out.decoded.assign(n, {});
  std::vector<Status> errors(n);
  std::vector<ReadReport> io(n);
  d.pool.parallel_for(n, [&](size_t i) {
    const auto [f, t, b] = keys[i];
    out.heads[i] = {f, -1, t, b, 0, 0};
    auto where = d.files.locate(f, t, b, &io[i]);
    if (!where.is_ok()) {
      errors[i] = where.status();
      return;
    }
    if (!where.value()) return;
    const core::BlockLocation& w = *where.value();
    Layout layout = format::layout_of(w.entry.flags);
    if (d.mapped(w, f)) {
      out.data[i] = w.file->map_readonly() + w.entry.offset;
      io[i].bytes_read += static_cast<int64_t>(w.entry.size);
      errors[i] = d.files.check_payload(w, {out.data[i], w.entry.size});
      if (!errors[i].is_ok()) return;
    } else {
      std::vector<std::byte> scratch;
      out.decoded[i].resize(d.block_bytes(f));
      auto l = core::load_block(d.files, w, d.coding[f], d.space, d.idx.ndim, b, scratch, out.decoded[i], &io[i]);
      if (!l.is_ok()) {
        errors[i] = l.status();
        return;
      }
      layout = l.value();
      out.data[i] = out.decoded[i].data();
    }
    out.heads[i] = {f, layout == Layout::kRowMajor ? 1 : 0, t, b, w.entry.size, d.block_bytes(f)};
    io[i].blocks_read = 1;
  });
  Status err;
  for (size_t i = 0; i < n; ++i) {
    if (!errors[i].is_ok() && err.is_ok()) err = errors[i];
    rep.files_opened += io[i].files_opened;
    rep.bytes_read += io[i].bytes_read;
    rep.blocks_read += io[i].blocks_read;
  }
  return err;
}

// Local. Checks this rank's target and makes its request.
Status make_request(const Dataset& dataset, const core::DatasetParts& d, const ReadTarget& target, ReadRequest& mine) {
  if (target.box.empty()) return Status::ok();
  HZIO_RETURN_IF_ERROR(d.check_field_time(target.field, target.time, false, mine.field));
  const int level = target.level < 0 ? dataset.max_level() : target.level;
  HZIO_ASSIGN_OR_RETURN(const SampleGrid grid, dataset.level_grid(target.box, level));
  const size_t want =
      static_cast<size_t>(grid.sample_count()) * d.coding[static_cast<size_t>(mine.field)].dtype.bytes();
  if (target.out_bytes != want) return invalid_argument("read output needs " + std::to_string(want) + " bytes");
  mine = {mine.field, target.time, level, target.box, false};
  return Status::ok();
}

// Collective. The two-phase exchange: round by round, each reader reads its files' blocks of the round
// and sends each to the ranks that asked. `received[k]` gets round k's blocks for this rank, each a
// SentBlockHeader and its decoded samples; all rounds are kept, for the assembly.
Status exchange_blocks(MPI_Comm comm, core::DatasetParts& d, const ReadPlan& plan,
                       std::vector<util::LargeBuffer>& received, std::vector<int64_t>& received_bytes,
                       ReadReport& rep) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  received.resize(plan.rounds.size());
  received_bytes.assign(plan.rounds.size(), 0);
  util::LargeBuffer send;
  for (size_t round = 0; round < plan.rounds.size(); ++round) {
    std::vector<BlockKey> to_read;
    for (const BlockKey& key : plan.rounds[round])
      if (plan.reader.at(file_of(d.idx, key)) == rank) to_read.push_back(key);
    ReadBlocks blocks;
    HZIO_RETURN_IF_ERROR(agree(comm, read_for_everyone(d, to_read, blocks, rep)));
    // Pack once: every (block, destination) copy has its own place, filled in parallel.
    std::vector<int64_t> counts(size, 0), displs(size, 0);
    std::vector<std::vector<int64_t>> at(to_read.size());
    for (size_t i = 0; i < to_read.size(); ++i)
      for (int r : plan.wanted.at(to_read[i]))
        counts[r] += static_cast<int64_t>(sizeof(SentBlockHeader) + blocks.heads[i].bytes);
    for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
    std::vector<int64_t> next = displs;
    for (size_t i = 0; i < to_read.size(); ++i)
      for (int r : plan.wanted.at(to_read[i])) {
        at[i].push_back(next[r]);
        next[r] += static_cast<int64_t>(sizeof(SentBlockHeader) + blocks.heads[i].bytes);
      }
    Status packed;
    try {
      send.reserve(static_cast<size_t>(std::max<int64_t>(displs.back() + counts.back(), 1)));
    } catch (const std::bad_alloc&) {
      packed = io_error("out of memory packing blocks for a two-phase read");
    }
    HZIO_RETURN_IF_ERROR(agree(comm, packed));
    d.pool.parallel_for(to_read.size(), [&](size_t i) {
      for (int64_t offset : at[i]) {
        std::memcpy(send.data() + offset, &blocks.heads[i], sizeof(SentBlockHeader));
        if (blocks.heads[i].bytes)
          std::memcpy(send.data() + offset + sizeof(SentBlockHeader), blocks.data[i], blocks.heads[i].bytes);
      }
    });
    HZIO_RETURN_IF_ERROR(alltoall_blocks(comm, send, counts, displs, received[round], received_bytes[round]));
  }
  return Status::ok();
}

// Local. Places the received blocks of this rank's request into `out`: window by window for large
// outputs (docs/design/read-path.md "Windows"), else block by block. Missing blocks read as the
// field's default value.
void assemble(core::DatasetParts& d, const std::vector<util::LargeBuffer>& received,
              const std::vector<int64_t>& received_bytes, const ReadRequest& mine, std::byte* out, ReadReport& rep) {
  std::vector<core::PlacedBlock> placed;
  int64_t missing = 0;
  for (size_t round = 0; round < received.size(); ++round) {
    const std::byte* in = received[round].data();
    for (int64_t at = 0; at + static_cast<int64_t>(sizeof(SentBlockHeader)) <= received_bytes[round];) {
      SentBlockHeader h;
      std::memcpy(&h, in + at, sizeof h);
      at += static_cast<int64_t>(sizeof h);
      if (h.layout < 0) {
        ++missing;
      } else {
        rep.min_bytes += static_cast<int64_t>(h.stored);
        const Layout layout = h.layout ? Layout::kRowMajor : Layout::kHzOrder;
        placed.push_back(core::make_placed_block(d.runs_to_place(h.block, layout, 0, mine.level), in + at));
      }
      at += static_cast<int64_t>(h.bytes);
    }
  }
  rep.blocks_missing += missing;
  const core::FieldCoding& fc = d.coding[static_cast<size_t>(mine.field)];
  const hzorder::ArrayView view{out, d.space.grid_in_box(mine.box, mine.level), fc.dtype.bytes()};
  const core::WindowFill fill{missing > 0 ? core::WindowFill::Start::kDefault : core::WindowFill::Start::kBlocksOnly,
                              fc.dtype, fc.default_value};
  if (static_cast<uint64_t>(view.grid.sample_count()) * fc.dtype.bytes() >= core::kWindowedReadBytes) {
    core::assemble_windows(core::plan_windows(d.space, mine.level, placed, mine.box, view.grid, fc.dtype.bytes()),
                           placed, view, fill, d.pool);
    rep.assembly = "windows";
    return;
  }
  if (missing > 0)
    hzorder::fill_samples(out, static_cast<size_t>(view.grid.sample_count()), fc.dtype, fc.default_value);
  d.pool.parallel_for(placed.size(), [&](size_t i) {
    for (const hzorder::Run& r : placed[i].runs)
      hzorder::copy_run(r, mine.box, const_cast<std::byte*>(placed[i].data), view, hzorder::Direction::kBlockToArray);
  });
  rep.assembly = "blocks";
}

}  // namespace

Status parallel_read(Dataset& dataset, MPI_Comm comm, bool one_node, size_t budget, const ReadTarget& target,
                     ReadMethod method, ReadReport& report) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  core::DatasetParts d(dataset);
  ReadRequest mine;
  HZIO_RETURN_IF_ERROR(agree(comm, make_request(dataset, d, target, mine)));
  const std::vector<ReadRequest> requests = gather_requests(comm, mine);
  std::vector<int64_t> block_bytes;
  for (size_t f = 0; f < d.coding.size(); ++f)
    block_bytes.push_back(static_cast<int64_t>(d.block_bytes(static_cast<int>(f))));
  const ReadPlan plan = plan_read(d.idx, d.space, requests, block_bytes, one_node, budget, method);
  auto* out = static_cast<std::byte*>(target.out);
  if (plan.method == ReadMethod::kIndependent) {
    report.method = "independent";
    const Status s =
        mine.empty ? Status::ok() : d.read_box(mine.box, mine.level, 0, mine.field, mine.time, out, &report, true);
    return agree(comm, s);
  }
  report.method = "two-phase";
  std::vector<util::LargeBuffer> received;
  std::vector<int64_t> received_bytes;
  HZIO_RETURN_IF_ERROR(exchange_blocks(comm, d, plan, received, received_bytes, report));
  if (!mine.empty) assemble(d, received, received_bytes, mine, out, report);
  return Status::ok();
}

}  // namespace hzio::parallel
