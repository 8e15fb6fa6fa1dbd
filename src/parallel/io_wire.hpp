// The messages between compute ranks and their I/O rank (hzio/io_ranks.hpp): commands from a compute rank
// (tag kCommand), replies back (tag kReply), each written and read field by field. Shared by io_ranks.cpp
// (the split and the compute side) and io_server.cpp (the I/O side). Layer: parallel.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hzio/dataset.hpp"
#include "hzio/parallel.hpp"
#include "hzio/status.hpp"

namespace hzio::parallel::io_wire {

constexpr int kCommand = 7301;
constexpr int kReply = 7302;

// A command is its op, the dataset's key and the op's payload; a reply is its kind, an error (code and
// message) and, for kReady, the dataset's shape.
enum Op : int64_t { kCreate = 1, kOpen = 2, kStage = 3, kFlush = 4, kClose = 5, kDone = 6 };
enum Kind : int64_t { kReleased = 1, kDurable = 2, kReady = 3 };

// The bytes of a message, written and read field by field; reads past the end set `bad`.
class Wire {
 public:
  Wire() = default;
  explicit Wire(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}

  void i64(int64_t v) { put(&v, sizeof v); }
  void f64(double v) { put(&v, sizeof v); }
  void str(std::string_view s) {
    i64(static_cast<int64_t>(s.size()));
    put(s.data(), s.size());
  }
  void ints(const std::vector<int64_t>& v) {
    i64(static_cast<int64_t>(v.size()));
    for (int64_t x : v) i64(x);
  }

  int64_t i64() {
    int64_t v = 0;
    get(&v, sizeof v);
    return v;
  }
  double f64() {
    double v = 0;
    get(&v, sizeof v);
    return v;
  }
  std::string str() {
    const int64_t n = i64();
    if (n < 0 || static_cast<size_t>(n) > bytes_.size() - at_) {
      bad = true;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return s;
  }
  std::vector<int64_t> ints() {
    const int64_t n = i64();
    std::vector<int64_t> v;
    if (n < 0 || static_cast<size_t>(n) > (bytes_.size() - at_) / sizeof(int64_t)) {
      bad = true;
      return v;
    }
    for (int64_t i = 0; i < n; ++i) v.push_back(i64());
    return v;
  }

  const std::vector<std::byte>& bytes() const { return bytes_; }
  bool bad = false;

 private:
  void put(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void get(void* p, size_t n) {
    if (n > bytes_.size() - at_) {
      bad = true;
      std::memset(p, 0, n);
      return;
    }
    std::memcpy(p, bytes_.data() + at_, n);
    at_ += n;
  }
  std::vector<std::byte> bytes_;
  size_t at_ = 0;
};

// One slab of a staged box in a compute rank's region of the buffer.
struct Piece {
  std::string field;
  int64_t time = 0;
  Box box;
  int64_t at = 0;  // offset in the buffer
  int64_t bytes = 0;
  // Lent: the I/O rank writes straight from the buffer, and the compute rank leaves these bytes alone
  // until the flush is durable. Otherwise the I/O rank copies them out before it answers kReleased.
  bool lent = false;
};

// What the compute side knows of a dataset: enough to check the boxes it stages.
struct Shape {
  int ndim = 3;
  Box whole;
  std::vector<std::pair<std::string, DType>> fields;
  std::vector<int64_t> times;
};

// Local. Each put_* appends its value to a message; each get_* reads one back, setting `w.bad` on a short
// or malformed message.
void put_status(Wire& w, const Status& s);
Status get_status(Wire& w);
void put_parallel(Wire& w, const ParallelOptions& p);
ParallelOptions get_parallel(Wire& w);
void put_create(Wire& w, const CreateOptions& o);
Result<CreateOptions> get_create(Wire& w);
void put_pieces(Wire& w, const std::vector<Piece>& pieces);
std::vector<Piece> get_pieces(Wire& w);
void put_shape(Wire& w, const Dataset& d);
Shape get_shape(Wire& w);

// Local. Sends `w` to `dest` and waits until it has left (parallel::wait).
void send(MPI_Comm comm, int dest, int tag, const Wire& w);
// Local. The next message from `source` with `tag`, waiting without spinning and with Patience::kLong
// (parallel::probe): a compute rank's wait for a reply lasts as long as its I/O rank's write of a timestep,
// an I/O rank's wait for a command as long as a compute phase.
Wire receive(MPI_Comm comm, int source, int tag);
// Local. Whether a message from `source` with `tag` has arrived.
bool has_message(MPI_Comm comm, int source, int tag);

}  // namespace hzio::parallel::io_wire
