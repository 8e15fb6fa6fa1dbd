// The NodeMemory objects of this process, found by address: what a collective write needs to tell
// whether a staged box lies in memory its aggregator maps too; and the making of a node's POSIX
// shared-memory objects (NodeMemory, the I/O ranks' buffers). Layer: parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "hzio/status.hpp"

namespace hzio::parallel {

// Where a box lies in a node's shared-memory object: the object's token (the same on every rank that maps
// it) and the box's offset from the object's start.
struct NodePlace {
  int64_t token[2] = {0, 0};
  int64_t offset = 0;
};

// Local. Creates the POSIX shared-memory object `name` (which must not exist) of `bytes`, its pages
// reserved now: a node's /dev/shm too small is an error here, not a SIGBUS on a later write into it.
// Returns its descriptor, which the caller closes. `what` names the object in errors ("node memory");
// `hint` (if any) ends the error of a failed reservation. Errors: kIo.
Result<int> make_shared_object(const std::string& name, size_t bytes, const std::string& what,
                               const std::string& hint = "");

// Local, thread-safe. The place of [data, data + bytes) when it lies whole in this rank's region of a live
// NodeMemory, or nullopt.
std::optional<NodePlace> find_node_place(const void* data, size_t bytes);

// Local, thread-safe. The address of `place` in this process's mapping of its object, or null when this
// process does not map it (or the object ends before `bytes` more).
const std::byte* node_address(const NodePlace& place, size_t bytes);

}  // namespace hzio::parallel
