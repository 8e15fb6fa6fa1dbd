// The messages between compute ranks and their I/O rank, field by field (parallel/io_wire.hpp).
// Layer: parallel.
#include "parallel/io_wire.hpp"

#include "parallel/mpi_util.hpp"

namespace hzio::parallel::io_wire {

void put_status(Wire& w, const Status& s) {
  w.i64(static_cast<int64_t>(s.code()));
  w.str(s.message());
}

Status get_status(Wire& w) {
  const auto code = static_cast<ErrorCode>(w.i64());
  std::string message = w.str();
  return code == ErrorCode::kOk ? Status::ok() : Status(code, std::move(message));
}

void put_parallel(Wire& w, const ParallelOptions& p) {
  w.i64(p.placement == AggregatorPlacement::kUniform ? 1 : 0);
  w.i64(p.aggregator_count);
  w.i64(static_cast<int64_t>(p.aggregator_bytes));
  w.i64(p.durable ? 1 : 0);
  w.i64(p.threads);
  w.i64(p.verify_checksums ? 1 : 0);
  w.i64(p.allow_outside_folder ? 1 : 0);
  w.i64(p.partitions);
  w.i64(p.index_space == IndexSpace::kLocal ? 1 : 0);
}

ParallelOptions get_parallel(Wire& w) {
  ParallelOptions p;
  p.placement = w.i64() == 1 ? AggregatorPlacement::kUniform : AggregatorPlacement::kLocalized;
  p.aggregator_count = static_cast<int>(w.i64());
  p.aggregator_bytes = static_cast<size_t>(w.i64());
  p.durable = w.i64() != 0;
  p.threads = static_cast<int>(w.i64());
  p.verify_checksums = w.i64() != 0;
  p.allow_outside_folder = w.i64() != 0;
  p.partitions = static_cast<int>(w.i64());
  p.index_space = w.i64() == 1 ? IndexSpace::kLocal : IndexSpace::kGlobal;
  return p;
}

void put_create(Wire& w, const CreateOptions& o) {
  w.ints(o.dims);
  w.i64(static_cast<int64_t>(o.fields.size()));
  for (const FieldSpec& f : o.fields) {
    w.str(f.name);
    w.str(f.dtype.to_string());
    w.str(f.codec);
    w.i64(f.layout == Layout::kRowMajor ? 1 : 0);
    w.f64(f.default_value);
  }
  w.str(o.bitmask);
  w.i64(o.bits_per_block);
  w.i64(o.blocks_per_file);
  w.ints(o.times);
  w.str(o.time_template);
  w.i64(o.overwrite ? 1 : 0);
  w.i64(o.sub_block_bits);
}

Result<CreateOptions> get_create(Wire& w) {
  CreateOptions o;
  o.dims = w.ints();
  const int64_t n = w.i64();
  for (int64_t i = 0; i < n && !w.bad; ++i) {
    FieldSpec f;
    f.name = w.str();
    HZIO_ASSIGN_OR_RETURN(f.dtype, DType::parse(w.str()));
    f.codec = w.str();
    f.layout = w.i64() == 1 ? Layout::kRowMajor : Layout::kHzOrder;
    f.default_value = w.f64();
    o.fields.push_back(std::move(f));
  }
  o.bitmask = w.str();
  o.bits_per_block = static_cast<int>(w.i64());
  o.blocks_per_file = w.i64();
  o.times = w.ints();
  o.time_template = w.str();
  o.overwrite = w.i64() != 0;
  o.sub_block_bits = static_cast<int>(w.i64());
  return o;
}

void put_pieces(Wire& w, const std::vector<Piece>& pieces) {
  w.i64(static_cast<int64_t>(pieces.size()));
  for (const Piece& p : pieces) {
    w.str(p.field);
    w.i64(p.time);
    for (int a = 0; a < 3; ++a) w.i64(p.box.lo[a]);
    for (int a = 0; a < 3; ++a) w.i64(p.box.hi[a]);
    w.i64(p.at);
    w.i64(p.bytes);
    w.i64(p.lent ? 1 : 0);
  }
}

std::vector<Piece> get_pieces(Wire& w) {
  std::vector<Piece> pieces;
  const int64_t n = w.i64();
  for (int64_t i = 0; i < n && !w.bad; ++i) {
    Piece p;
    p.field = w.str();
    p.time = w.i64();
    for (int a = 0; a < 3; ++a) p.box.lo[a] = w.i64();
    for (int a = 0; a < 3; ++a) p.box.hi[a] = w.i64();
    p.at = w.i64();
    p.bytes = w.i64();
    p.lent = w.i64() != 0;
    pieces.push_back(std::move(p));
  }
  return pieces;
}

void send(MPI_Comm comm, int dest, int tag, const Wire& w) {
  MPI_Request request;
  MPI_Isend(w.bytes().data(), static_cast<int>(w.bytes().size()), MPI_BYTE, dest, tag, comm, &request);
  wait(request);
}

Wire receive(MPI_Comm comm, int source, int tag) {
  MPI_Status status;
  MPI_Message message = probe(comm, source, tag, status, Patience::kLong);
  int n = 0;
  MPI_Get_count(&status, MPI_BYTE, &n);
  std::vector<std::byte> bytes(static_cast<size_t>(n));
  MPI_Mrecv(bytes.data(), n, MPI_BYTE, &message, MPI_STATUS_IGNORE);
  return Wire(std::move(bytes));
}

bool has_message(MPI_Comm comm, int source, int tag) {
  int found = 0;
  MPI_Iprobe(source, tag, comm, &found, MPI_STATUS_IGNORE);
  return found != 0;
}

void put_shape(Wire& w, const Dataset& d) {
  w.i64(d.ndim());
  for (int a = 0; a < 3; ++a) w.i64(d.box().lo[a]);
  for (int a = 0; a < 3; ++a) w.i64(d.box().hi[a]);
  w.i64(static_cast<int64_t>(d.fields().size()));
  for (const auto& f : d.fields()) {
    w.str(f.name);
    w.str(f.dtype.to_string());
  }
  w.ints(d.times());
}

Shape get_shape(Wire& w) {
  Shape s;
  s.ndim = static_cast<int>(w.i64());
  for (int a = 0; a < 3; ++a) s.whole.lo[a] = w.i64();
  for (int a = 0; a < 3; ++a) s.whole.hi[a] = w.i64();
  const int64_t n = w.i64();
  for (int64_t i = 0; i < n && !w.bad; ++i) {
    std::string name = w.str();
    auto dtype = DType::parse(w.str());
    if (!dtype.is_ok()) w.bad = true;
    s.fields.emplace_back(std::move(name), dtype.is_ok() ? dtype.value() : DType{});
  }
  s.times = w.ints();
  return s;
}

}  // namespace hzio::parallel::io_wire
