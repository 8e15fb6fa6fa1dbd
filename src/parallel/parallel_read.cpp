// Collective reads: independent (each rank reads its own blocks) or two-phase (one rank reads each
// data file once and sends decoded blocks to the ranks that asked) (docs/guide/parallel-io.md "Reads").
#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <set>

#include "core/dataset_parts.hpp"
#include "core/window_assembly.hpp"
#include "format/file_name.hpp"
#include "hzio/parallel.hpp"
#include "parallel/mpi_util.hpp"
#include "parallel/write_plan.hpp"
#include "util/large_buffer.hpp"

namespace hzio {

namespace {

struct Request {
  int field = 0;
  int64_t time = 0;
  int level = 0;
  Box box;
  bool empty = true;
};

struct BlockHeader {
  int32_t field = 0;
  int32_t layout = 0;  // 0 HZ order, 1 row-major, -1 missing
  int64_t time = 0;
  uint64_t block = 0;
  uint64_t stored = 0;  // payload bytes on disk (for min_bytes)
  uint64_t bytes = 0;   // decoded bytes that follow
};

using Key = std::tuple<int, int64_t, uint64_t>;  // field, time, block

std::vector<Request> gather_requests(MPI_Comm comm, const Request& mine) {
  std::vector<int64_t> v = {mine.field,     mine.time,      mine.level,     mine.box.lo[0], mine.box.lo[1],
                            mine.box.lo[2], mine.box.hi[0], mine.box.hi[1], mine.box.hi[2], mine.empty ? 1 : 0};
  std::vector<int> counts;
  const auto all = parallel::allgather_int64(comm, v, counts);
  std::vector<Request> out(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) {
    const int64_t* p = all.data() + r * 10;
    out[r] = {static_cast<int>(p[0]), p[1], static_cast<int>(p[2]), Box{{p[3], p[4], p[5]}, {p[6], p[7], p[8]}},
              p[9] != 0};
  }
  return out;
}

// Sends each rank its part of `send` (counts[r] bytes at displs[r]) with one MPI_Alltoallv into `in`
// (reused between rounds). Errors, on every rank, if a rank would send or receive 2 GiB or more.
Status exchange(MPI_Comm comm, const util::LargeBuffer& send, const std::vector<int64_t>& counts,
                const std::vector<int64_t>& displs, util::LargeBuffer& in, int64_t& received) {
  const int size = static_cast<int>(counts.size());
  const int64_t stotal = displs.empty() ? 0 : displs.back() + counts.back();
  Status big = stotal > INT_MAX ? unsupported("a read round sends 2 GiB or more from one rank") : Status::ok();
  HZIO_RETURN_IF_ERROR(parallel::agree(comm, big));
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
  HZIO_RETURN_IF_ERROR(parallel::agree(comm, big));
  MPI_Request request;
  MPI_Ialltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, in.data(), rc.data(), rd.data(), MPI_BYTE, comm,
                 &request);
  parallel::wait(request);
  return Status::ok();
}

// The blocks of one two-phase round that this rank reads for everyone: raw blocks of committed files
// straight from the file's mapping, others decoded into buffers of their own.
struct ReadBlocks {
  std::vector<BlockHeader> heads;
  std::vector<const std::byte*> data;
  std::vector<std::vector<std::byte>> decoded;
};

Status read_for_everyone(core::DatasetParts& d, const std::vector<Key>& keys, ReadBlocks& out, ReadReport& rep) {
  const size_t n = keys.size();
  out.heads.assign(n, {});
  out.data.assign(n, nullptr);
  out.decoded.assign(n, {});
  std::vector<Status> errors(n);
  std::vector<ReadReport> io(n);
  d.pool.parallel_for(n, [&](size_t i) {
    const auto& [f, t, b] = keys[i];
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
    } else {
      std::vector<std::byte> scratch;
      out.decoded[i].resize(d.block_bytes(f));
      auto l = core::load_block(w, d.coding[f], d.space, d.idx.ndim, b, scratch, out.decoded[i], &io[i]);
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

}  // namespace

Status parallel_read(Dataset& dataset, MPI_Comm comm, bool one_node, size_t budget, const Box& box, int level,
                     std::string_view field, int64_t time, void* out, size_t out_bytes, ReadReport* report,
                     ReadMethod method) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  core::DatasetParts d(dataset);
  Request mine;
  Status s;
  if (!box.empty()) {
    s = d.check_field_time(field, time, false, mine.field);
    if (level < 0) level = dataset.max_level();
    auto grid = s.is_ok() ? dataset.level_grid(box, level) : Result<SampleGrid>(s);
    if (grid.is_ok() && out_bytes != static_cast<size_t>(grid->sample_count()) * d.coding[mine.field].dtype.bytes()) {
      s = invalid_argument("read output needs " +
                           std::to_string(grid->sample_count() * d.coding[mine.field].dtype.bytes()) + " bytes");
    } else if (!grid.is_ok()) {
      s = grid.status();
    }
    mine = {mine.field, time, level, box, false};
  }
  HZIO_RETURN_IF_ERROR(parallel::agree(comm, s));
  const std::vector<Request> req = gather_requests(comm, mine);
  std::map<Key, std::vector<int>> wanted;  // block -> requesting ranks
  int64_t asked = 0;
  for (int r = 0; r < size; ++r) {
    if (req[r].empty) continue;
    std::vector<uint64_t> blocks = d.space.blocks_of_box(req[r].box, 0, req[r].level);
    asked += static_cast<int64_t>(blocks.size());
    for (uint64_t b : blocks) wanted[{req[r].field, req[r].time, b}].push_back(r);
  }
  // Two-phase reads read every block once from the file system, which pays across nodes when the
  // requests overlap. On one node the ranks share the page cache, so reading a block once saves no disk
  // work and two-phase only adds the exchange: independent reads are faster there (bench/read_bench.py
  // part (b) compares the methods).
  if (method == ReadMethod::kAuto) {
    const bool overlap = 2 * asked >= 3 * static_cast<int64_t>(wanted.size());
    method = (size > 1 && !one_node && overlap) ? ReadMethod::kTwoPhase : ReadMethod::kIndependent;
  }
  ReadReport local;
  ReadReport* rep = report ? report : &local;
  auto* o = static_cast<std::byte*>(out);
  if (method == ReadMethod::kIndependent) {
    rep->method = "independent";
    s = mine.empty ? Status::ok() : d.read_box(box, level, 0, mine.field, time, o, rep, true);
    return parallel::agree(comm, s);
  }
  rep->method = "two-phase";
  // Each data file goes to one reader rank (round robin over the files in order).
  const auto file_of = [&](const Key& key) {
    return std::make_pair(std::get<1>(key), format::first_block_of_file(d.idx, static_cast<int64_t>(std::get<2>(key))));
  };
  std::map<std::pair<int64_t, int64_t>, int> reader;
  for (const auto& [key, ranks] : wanted) reader.emplace(file_of(key), 0);
  int k = 0;
  for (auto& [file, r] : reader) r = k++ % size;
  // Rounds keep each reader's outgoing block bytes under the budget.
  std::vector<std::vector<Key>> rounds(1);
  std::vector<int64_t> load(size, 0);
  for (const auto& [key, ranks] : wanted) {
    const int r = reader[file_of(key)];
    const int64_t bytes = static_cast<int64_t>(d.block_bytes(std::get<0>(key)) * ranks.size());
    if (load[r] > 0 && load[r] + bytes > static_cast<int64_t>(budget)) {
      rounds.emplace_back();
      std::fill(load.begin(), load.end(), 0);
    }
    load[r] += bytes;
    rounds.back().push_back(key);
  }
  // Every round's received blocks stay until all are placed: large outputs are assembled window by
  // window from all of them at once (docs/design/read-path.md "Windows").
  std::vector<util::LargeBuffer> received(rounds.size());
  std::vector<int64_t> received_bytes(rounds.size(), 0);
  util::LargeBuffer send;
  for (size_t round = 0; round < rounds.size(); ++round) {
    std::vector<Key> to_read;
    for (const Key& key : rounds[round])
      if (reader[file_of(key)] == rank) to_read.push_back(key);
    ReadBlocks blocks;
    HZIO_RETURN_IF_ERROR(parallel::agree(comm, read_for_everyone(d, to_read, blocks, *rep)));
    // Pack once: every (block, destination) copy has its own place, filled in parallel.
    std::vector<int64_t> counts(size, 0), displs(size, 0);
    for (size_t i = 0; i < to_read.size(); ++i)
      for (int r : wanted[to_read[i]]) counts[r] += static_cast<int64_t>(sizeof(BlockHeader) + blocks.heads[i].bytes);
    for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
    std::vector<std::vector<int64_t>> at(to_read.size());
    std::vector<int64_t> next = displs;
    for (size_t i = 0; i < to_read.size(); ++i)
      for (int r : wanted[to_read[i]]) {
        at[i].push_back(next[r]);
        next[r] += static_cast<int64_t>(sizeof(BlockHeader) + blocks.heads[i].bytes);
      }
    Status packed;
    try {
      send.reserve(static_cast<size_t>(std::max<int64_t>(displs.back() + counts.back(), 1)));
    } catch (const std::bad_alloc&) {
      packed = io_error("out of memory packing blocks for a two-phase read");
    }
    HZIO_RETURN_IF_ERROR(parallel::agree(comm, packed));
    d.pool.parallel_for(to_read.size(), [&](size_t i) {
      for (int64_t offset : at[i]) {
        std::memcpy(send.data() + offset, &blocks.heads[i], sizeof(BlockHeader));
        if (blocks.heads[i].bytes)
          std::memcpy(send.data() + offset + sizeof(BlockHeader), blocks.data[i], blocks.heads[i].bytes);
      }
    });
    HZIO_RETURN_IF_ERROR(exchange(comm, send, counts, displs, received[round], received_bytes[round]));
  }
  if (mine.empty) return Status::ok();
  // The blocks this rank asked for, each from the round that brought it.
  std::vector<core::PlacedBlock> placed;
  int64_t missing = 0;
  for (size_t round = 0; round < rounds.size(); ++round) {
    const std::byte* in = received[round].data();
    for (int64_t at = 0; at + static_cast<int64_t>(sizeof(BlockHeader)) <= received_bytes[round];) {
      BlockHeader h;
      std::memcpy(&h, in + at, sizeof h);
      at += static_cast<int64_t>(sizeof h);
      if (h.layout < 0) {
        ++missing;
      } else {
        rep->min_bytes += static_cast<int64_t>(h.stored);
        const Layout layout = h.layout ? Layout::kRowMajor : Layout::kHzOrder;
        placed.push_back(core::make_placed_block(d.runs_to_place(h.block, layout, 0, level), in + at));
      }
      at += static_cast<int64_t>(h.bytes);
    }
  }
  rep->blocks_missing += missing;
  const core::FieldCoding& fc = d.coding[mine.field];
  const hzorder::ArrayView view{o, d.space.grid_in_box(box, level), fc.dtype.bytes()};
  const core::WindowFill fill{missing > 0 ? core::WindowFill::Start::kDefault : core::WindowFill::Start::kBlocksOnly,
                              fc.dtype, fc.default_value};
  if (static_cast<uint64_t>(view.grid.sample_count()) * fc.dtype.bytes() >= core::kWindowedReadBytes) {
    core::assemble_windows(core::plan_windows(d.space, level, placed, box, view.grid, fc.dtype.bytes()), placed, view,
                           fill, d.pool);
    rep->assembly = "windows";
    return Status::ok();
  }
  if (missing > 0) hzorder::fill_samples(o, static_cast<size_t>(view.grid.sample_count()), fc.dtype, fc.default_value);
  d.pool.parallel_for(placed.size(), [&](size_t i) {
    for (const hzorder::Run& r : placed[i].runs)
      hzorder::copy_run(r, box, const_cast<std::byte*>(placed[i].data), view, hzorder::Direction::kBlockToArray);
  });
  rep->assembly = "blocks";
  return Status::ok();
}

}  // namespace hzio
