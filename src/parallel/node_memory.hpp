// The NodeMemory objects of this process, found by address: what a collective write needs to tell
// whether a staged box lies in memory its aggregator maps too. Layer: parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace hzio::parallel {

// Where a box lies in a node's shared-memory object: the object's token (the same on every rank that maps
// it) and the box's offset from the object's start.
struct NodePlace {
  int64_t token[2] = {0, 0};
  int64_t offset = 0;
};

// Local, thread-safe. The place of [data, data + bytes) when it lies whole in this rank's region of a live
// NodeMemory, or nullopt.
std::optional<NodePlace> find_node_place(const void* data, size_t bytes);

// Local, thread-safe. The address of `place` in this process's mapping of its object, or null when this
// process does not map it (or the object ends before `bytes` more).
const std::byte* node_address(const NodePlace& place, size_t bytes);

}  // namespace hzio::parallel
