// The state of an IoRanks (hzio/io_ranks.hpp) on either side: the node split, the shared buffer and, on
// compute ranks, the slots lent to pending flushes. Shared by io_ranks.cpp (the split and the compute
// side) and io_server.cpp (the I/O side). Layer: parallel.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hzio/io_ranks.hpp"
#include "parallel/io_wire.hpp"

namespace hzio {

struct IoRanks::Impl {
  IoRanksOptions options;
  MPI_Comm node = MPI_COMM_NULL, compute = MPI_COMM_NULL, io = MPI_COMM_NULL;
  bool is_io = false;
  int io_rank = -1;          // compute ranks: their I/O rank in `node`
  std::vector<int> clients;  // I/O ranks: their compute ranks in `node`, in order
  std::byte* buffer = nullptr;
  size_t region_offset = 0, region_bytes = 0;
  size_t shared_bytes = 0;  // compute ranks: the top of the region given out by shared_memory()

  // The bytes of each region of a buffer shared by `peers` compute ranks: equal, on page boundaries when
  // they are that large.
  size_t region_of(size_t peers) const {
    size_t region = options.buffer_bytes / std::max<size_t>(peers, 1);
    return region >= 4096 ? region & ~size_t{4095} : region;
  }
  bool closed = false;
  // Compute ranks: the I/O side's state as far as this rank knows.
  int pending_durable = 0;  // flushes and closes not yet durable
  // Per pending flush or close, in order: the slot it lent (or -1), and whether it lent arrays of
  // shared_memory() where they lie, which must stay unchanged until it is durable.
  struct Pending {
    int slot = -1;
    bool in_place = false;
  };
  std::deque<Pending> pending;
  int64_t flushes_lent = 0;  // lent flushes so far: the next one takes slot flushes_lent % in_flight
  // Copies write_box made straight into the next slot, ahead of their flush: their bytes, and the dataset
  // that made them (one at a time). `evict` moves them to private memory when something else needs the
  // room (another dataset's flush, shared_memory()).
  size_t slot_fill = 0;
  const void* slot_owner = nullptr;
  std::function<Status()> evict;
  bool awaiting_release = false;  // the region's last batch is still being copied out
  Status error;                   // the first error the I/O side reported, until returned
  int64_t next_key = 0;

  ~Impl();  // unmaps the buffer and frees the communicators

  // Compute ranks: sends a command to this rank's I/O rank.
  void send_command(const parallel::io_wire::Wire& w) const;
  // Compute ranks: one reply of the I/O rank, booked; returns its kind (and `shape` of a kReady).
  parallel::io_wire::Kind take_reply(parallel::io_wire::Shape* shape = nullptr, Status* ready_error = nullptr);

  void drain();  // books the replies that have arrived, without waiting
  void wait_release() {
    while (awaiting_release) take_reply();
  }
  void wait_durable(int at_most) {
    while (pending_durable > at_most) take_reply();
  }
  // A flush's copies lent to the I/O rank go to one of in_flight equal slots of the room below the
  // shared_memory() arrays, in turn.
  size_t slot_bytes() const {
    return ((region_bytes - shared_bytes) / static_cast<size_t>(options.in_flight)) & ~size_t{4095};
  }
  int next_slot() const { return static_cast<int>(flushes_lent % options.in_flight); }
  std::byte* slot_start(int k) const { return buffer + region_offset + static_cast<size_t>(k) * slot_bytes(); }
  bool slot_free(int k) const {
    return std::none_of(pending.begin(), pending.end(), [k](const Pending& p) { return p.slot == k; });
  }
  bool any_slot_lent() const {
    return std::any_of(pending.begin(), pending.end(), [](const Pending& p) { return p.slot >= 0; });
  }
  // Waits until every pending flush but the last `newest` that lent arrays in place is durable.
  void wait_in_place_durable(size_t newest) {
    for (size_t i = pending.size(); i-- > 0;) {
      if (i + newest < pending.size() && pending[i].in_place) {
        wait_durable(static_cast<int>(pending.size() - 1 - i));
        return;
      }
    }
  }
  // Room for `size` bytes of `owner`'s next flush in the next slot, or null: the slot holds copies of
  // another dataset, is still lent to a pending flush, lies under a batch being copied out, or is full.
  std::byte* slot_room(const void* owner, size_t size) {
    if (slot_owner && slot_owner != owner) return nullptr;
    drain();  // the I/O rank's answers so far: releases, durable flushes
    const int k = next_slot();
    if (awaiting_release || !slot_free(k) || size > slot_bytes() || slot_fill > slot_bytes() - size) return nullptr;
    std::byte* at = slot_start(k) + slot_fill;
    slot_fill += size;
    slot_owner = owner;
    return at;
  }
  // Moves copies made ahead into the slot out to their dataset's private memory. On an error (no memory)
  // some stay in the slot, which then stays theirs.
  Status evict_slot() {
    if (evict) HZIO_RETURN_IF_ERROR(evict());
    forget_slot();
    return Status::ok();
  }
  void forget_slot() {
    slot_fill = 0;
    slot_owner = nullptr;
    evict = nullptr;
  }
  Status pending_error() {
    if (error.is_ok()) return Status::ok();
    Status e = io_error("the I/O ranks failed: " + error.message());
    error = Status::ok();
    return e;
  }
  Status require_compute(const char* what) const {
    if (is_io) return invalid_argument(std::string(what) + " is a call of compute ranks; I/O ranks run serve()");
    if (closed) return invalid_argument(std::string(what) + " after IoRanks::close()");
    return Status::ok();
  }
  // Sends a create or open and waits for the I/O side's answer: the compute side's dataset, or the error.
  static Result<std::unique_ptr<IoDataset>> attach(const std::shared_ptr<Impl>& self,
                                                   const parallel::io_wire::Wire& command, int64_t key,
                                                   const std::string& path, const char* verb);
};

}  // namespace hzio
