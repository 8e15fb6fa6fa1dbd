// Collective reads: independent (each rank reads its own blocks) or two-phase (one rank reads each
// data file once and sends decoded blocks to the ranks that asked) (docs/guide/parallel-io.md "Reads").
#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <set>

#include "core/dataset_impl.hpp"
#include "format/file_name.hpp"
#include "hzio/parallel.hpp"
#include "parallel/mpi_util.hpp"
#include "parallel/write_plan.hpp"

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
  int32_t layout = 0;   // 0 HZ order, 1 row-major, -1 missing
  int64_t time = 0;
  uint64_t block = 0;
  uint64_t stored = 0;  // payload bytes on disk (for min_bytes)
  uint64_t bytes = 0;   // decoded bytes that follow
};

using Key = std::tuple<int, int64_t, uint64_t>;  // field, time, block

std::vector<Request> gather_requests(MPI_Comm comm, const Request& mine) {
  std::vector<int64_t> v = {mine.field, mine.time, mine.level, mine.box.lo[0], mine.box.lo[1], mine.box.lo[2],
                            mine.box.hi[0], mine.box.hi[1], mine.box.hi[2], mine.empty ? 1 : 0};
  std::vector<int> counts;
  const auto all = parallel::allgather_int64(comm, v, counts);
  std::vector<Request> out(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) {
    const int64_t* p = all.data() + r * 10;
    out[r] = {static_cast<int>(p[0]), p[1], static_cast<int>(p[2]), Box{{p[3], p[4], p[5]}, {p[6], p[7], p[8]}}, p[9] != 0};
  }
  return out;
}

// Moves byte buffers between all ranks (one MPI_Alltoallv); errors if a rank would pass 2 GiB.
Status exchange(MPI_Comm comm, std::vector<std::vector<std::byte>>& out, std::vector<std::byte>& in, std::vector<int>& rdispl) {
  const int size = static_cast<int>(out.size());
  std::vector<int> sc(size), rc(size), sd(size, 0);
  rdispl.assign(size, 0);
  int64_t stotal = 0;
  for (int r = 0; r < size; ++r) stotal += static_cast<int64_t>(out[r].size());
  Status big = stotal > INT_MAX ? unsupported("a read round sends more than 2 GiB from one rank") : Status::ok();
  HZIO_RETURN_IF_ERROR(parallel::agree(comm, big));
  std::vector<std::byte> send;
  for (int r = 0; r < size; ++r) {
    sc[r] = static_cast<int>(out[r].size());
    sd[r] = static_cast<int>(send.size());
    send.insert(send.end(), out[r].begin(), out[r].end());
  }
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm);
  int64_t rtotal = 0;
  for (int r = 0; r < size; ++r) {
    rdispl[r] = static_cast<int>(rtotal);
    rtotal += rc[r];
  }
  big = rtotal > INT_MAX ? unsupported("a read round receives more than 2 GiB on one rank") : Status::ok();
  HZIO_RETURN_IF_ERROR(parallel::agree(comm, big));
  in.resize(static_cast<size_t>(rtotal));
  MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, in.data(), rc.data(), rdispl.data(), MPI_BYTE, comm);
  return Status::ok();
}

}  // namespace

Status parallel_read(Dataset& dataset, MPI_Comm comm, size_t budget, const Box& box, int level, std::string_view field,
                     int64_t time, void* out, size_t out_bytes, ReadReport* report, ReadMethod method) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Dataset::Impl& d = dataset.impl();
  Request mine;
  Status s;
  if (!box.empty()) {
    s = d.check_field_time(field, time, false, mine.field);
    if (level < 0) level = dataset.max_level();
    auto grid = s.is_ok() ? dataset.level_grid(box, level) : Result<SampleGrid>(s);
    if (grid.is_ok() && out_bytes != static_cast<size_t>(grid->sample_count()) * d.coding_[mine.field].dtype.bytes()) {
      s = invalid_argument("read output needs " + std::to_string(grid->sample_count() * d.coding_[mine.field].dtype.bytes()) + " bytes");
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
    std::vector<uint64_t> blocks = d.blocks_for(req[r].box, 0, req[r].level);
    asked += static_cast<int64_t>(blocks.size());
    for (uint64_t b : blocks) wanted[{req[r].field, req[r].time, b}].push_back(r);
  }
  if (method == ReadMethod::kAuto) {
    method = (size > 1 && 2 * asked >= 3 * static_cast<int64_t>(wanted.size())) ? ReadMethod::kTwoPhase : ReadMethod::kIndependent;
  }
  ReadReport local;
  ReadReport* rep = report ? report : &local;
  auto* o = static_cast<std::byte*>(out);
  if (method == ReadMethod::kIndependent) {
    rep->method = "independent";
    s = mine.empty ? Status::ok() : d.read_box(box, level, 0, mine.field, time, o, rep, nullptr, true);
    return parallel::agree(comm, s);
  }
  if (!mine.empty) {
    const SampleGrid g = d.space_->grid_in_box(box, level);
    hzorder::fill_samples(o, static_cast<size_t>(g.sample_count()), d.coding_[mine.field].dtype, d.coding_[mine.field].default_value);
  }
  rep->method = "two-phase";
  // Each data file goes to one reader rank (round robin over the files in order).
  std::map<std::pair<int64_t, int64_t>, int> reader;
  for (const auto& [key, ranks] : wanted) reader.emplace(std::make_pair(std::get<1>(key), format::first_block_of_file(d.idx_, static_cast<int64_t>(std::get<2>(key)))), 0);
  int k = 0;
  for (auto& [file, r] : reader) r = k++ % size;
  // Rounds keep each reader's outgoing decoded bytes under the budget.
  std::vector<std::vector<Key>> rounds(1);
  std::vector<int64_t> load(size, 0);
  for (const auto& [key, ranks] : wanted) {
    const int r = reader[{std::get<1>(key), format::first_block_of_file(d.idx_, static_cast<int64_t>(std::get<2>(key)))}];
    const int64_t bytes = static_cast<int64_t>(d.block_bytes(std::get<0>(key)) * ranks.size());
    if (load[r] > 0 && load[r] + bytes > static_cast<int64_t>(budget)) {
      rounds.emplace_back();
      std::fill(load.begin(), load.end(), 0);
    }
    load[r] += bytes;
    rounds.back().push_back(key);
  }
  const hzorder::ArrayView view{o, mine.empty ? SampleGrid{} : d.space_->grid_in_box(box, level),
                                mine.empty ? 0 : d.coding_[mine.field].dtype.bytes()};
  for (const auto& round : rounds) {
    std::vector<Key> mine_to_read;
    for (const Key& key : round) {
      if (reader[{std::get<1>(key), format::first_block_of_file(d.idx_, static_cast<int64_t>(std::get<2>(key)))}] == rank)
        mine_to_read.push_back(key);
    }
    std::vector<BlockHeader> heads(mine_to_read.size());
    std::vector<std::vector<std::byte>> data(mine_to_read.size());
    std::vector<Status> errors(mine_to_read.size());
    std::vector<ReadReport> io(mine_to_read.size());
    d.pool_.parallel_for(mine_to_read.size(), [&](size_t i) {
      const auto& [f, t, b] = mine_to_read[i];
      heads[i] = {f, -1, t, b, 0, 0};
      auto where = d.files_->locate(f, t, b, &io[i]);
      if (!where.is_ok()) { errors[i] = where.status(); return; }
      if (!where.value()) return;
      std::vector<std::byte> scratch;
      data[i].resize(d.block_bytes(f));
      auto layout = core::load_block(*where.value(), d.coding_[f], *d.space_, d.idx_.ndim, b, scratch, data[i], &io[i]);
      if (!layout.is_ok()) { errors[i] = layout.status(); return; }
      heads[i] = {f, layout.value() == Layout::kRowMajor ? 1 : 0, t, b, where.value()->entry.size, data[i].size()};
      io[i].blocks_read = 1;
    });
    Status err;
    for (size_t i = 0; i < mine_to_read.size(); ++i) {
      if (!errors[i].is_ok() && err.is_ok()) err = errors[i];
      rep->files_opened += io[i].files_opened;
      rep->bytes_read += io[i].bytes_read;
      rep->blocks_read += io[i].blocks_read;
    }
    HZIO_RETURN_IF_ERROR(parallel::agree(comm, err));
    std::vector<std::vector<std::byte>> outgoing(size);
    for (size_t i = 0; i < mine_to_read.size(); ++i) {
      for (int r : wanted[mine_to_read[i]]) {
        auto& buf = outgoing[r];
        const size_t at = buf.size();
        buf.resize(at + sizeof(BlockHeader) + heads[i].bytes);
        std::memcpy(buf.data() + at, &heads[i], sizeof(BlockHeader));
        if (heads[i].bytes) std::memcpy(buf.data() + at + sizeof(BlockHeader), data[i].data(), heads[i].bytes);
      }
    }
    std::vector<std::byte> in;
    std::vector<int> displ;
    HZIO_RETURN_IF_ERROR(exchange(comm, outgoing, in, displ));
    for (size_t at = 0; at + sizeof(BlockHeader) <= in.size();) {
      BlockHeader h;
      std::memcpy(&h, in.data() + at, sizeof h);
      at += sizeof h;
      if (h.layout < 0) {
        rep->blocks_missing += 1;
      } else {
        rep->min_bytes += static_cast<int64_t>(h.stored);
        d.place_block(h.block, h.layout ? Layout::kRowMajor : Layout::kHzOrder, in.data() + at, box, level, 0, view);
      }
      at += h.bytes;
    }
  }
  return Status::ok();
}

}  // namespace hzio
