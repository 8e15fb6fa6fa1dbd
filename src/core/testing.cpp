// The test hooks of include/hzio/testing.hpp: a dataset's fault seam armed with injected faults.
#include "hzio/testing.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "core/dataset_parts.hpp"
#include "io/faults.hpp"

namespace hzio::testing {

Status inject_fault(Dataset& dataset, std::string_view op, std::string_view path_pattern, int error,
                    int64_t after_bytes) {
  static constexpr std::pair<std::string_view, io::FaultOp> kOps[] = {{"create", io::FaultOp::kCreate},
                                                                      {"write", io::FaultOp::kWrite},
                                                                      {"sync", io::FaultOp::kSync},
                                                                      {"rename", io::FaultOp::kRename}};
  const auto* it = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return o.first == op; });
  if (it == std::end(kOps))
    return invalid_argument("fault operation '" + std::string(op) + "' is not create, write, sync or rename");
  io::Fault f;
  f.op = it->second;
  f.path_pattern = std::string(path_pattern);
  f.error = error;
  f.after_bytes = after_bytes;
  HZIO_ASSIGN_OR_RETURN(auto faults, io::InjectedFaults::make(f));
  core::DatasetParts(dataset).files.fault_seam()->set(std::move(faults));
  return Status::ok();
}

void clear_fault(Dataset& dataset) { core::DatasetParts(dataset).files.fault_seam()->set(nullptr); }

}  // namespace hzio::testing
