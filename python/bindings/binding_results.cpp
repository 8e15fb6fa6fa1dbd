// The result types hzio._core returns, bound as classes with read-only properties and a readable
// __repr__: boxes, sample grids, field descriptions, block infos, read and write reports, query results.
// Points are x-first tuples; query results hand their buffers to NumPy without copying.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "binding_util.hpp"
#include "hzio/dataset.hpp"
#include "hzio/write_report.hpp"

namespace nb = nanobind;

namespace hzio::bindings {
namespace {

// __repr__ as "Name(a=1, b='x')" from the Python values of the properties `names`.
template <class T>
void def_repr(nb::class_<T>& c, const char* name, std::vector<const char*> names) {
  c.def("__repr__", [name, names](nb::handle self) {
    std::string s = std::string(name) + "(";
    for (size_t i = 0; i < names.size(); ++i) {
      s += std::string(i ? ", " : "") + names[i] + "=" + nb::repr(self.attr(names[i])).c_str();
    }
    return s + ")";
  });
}

// NumPy views of a query result's buffers, owned by the result they are read from
// (rv_policy::reference_internal). An empty buffer may have no address, so it gets a dummy one.
using PointsArray = nb::ndarray<nb::numpy, int64_t, nb::shape<-1, 3>, nb::c_contig>;
using BytesArray = nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>, nb::c_contig>;

PointsArray points_view(std::vector<int64_t>& v) {
  static int64_t none[3] = {0, 0, 0};
  const size_t shape[2] = {v.size() / 3, 3};
  return PointsArray(v.empty() ? none : v.data(), 2, shape, nb::handle());
}

BytesArray bytes_view(void* data, size_t size) {
  static uint8_t none = 0;
  const size_t shape[1] = {size};
  return BytesArray(size ? data : &none, 1, shape, nb::handle());
}

void bind_geometry(nb::module_& m) {
  nb::class_<Box> box(m, "Box", "A half-open box [lo, hi) in sample coordinates, corners x first.");
  box.def_prop_ro(
         "lo", [](const Box& b) { return triple(b.lo); }, "Lower corner, x first (inclusive).")
      .def_prop_ro(
          "hi", [](const Box& b) { return triple(b.hi); }, "Upper corner, x first (exclusive).");
  def_repr(box, "Box", {"lo", "hi"});

  nb::class_<SampleGrid> grid(m, "SampleGrid",
                              "The samples of a level inside a box: origin + i * spacing for 0 <= i < count, x first.");
  grid.def_prop_ro(
          "origin", [](const SampleGrid& g) { return triple(g.origin); }, "First sample, x first.")
      .def_prop_ro(
          "spacing", [](const SampleGrid& g) { return triple(g.spacing); }, "Step per axis, x first.")
      .def_prop_ro(
          "count", [](const SampleGrid& g) { return triple(g.count); }, "Samples per axis, x first.")
      .def_prop_ro("sample_count", &SampleGrid::sample_count, "Samples in all.");
  def_repr(grid, "SampleGrid", {"origin", "spacing", "count"});

  nb::class_<FieldSpec> field(m, "FieldSpec", "One field of a dataset: name, dtype, codec, layout, default value.");
  field.def_ro("name", &FieldSpec::name)
      .def_prop_ro(
          "dtype", [](const FieldSpec& f) { return f.dtype.to_string(); }, "Canonical text: float32[3].")
      .def_ro("codec", &FieldSpec::codec, "Codec spec of new blocks.")
      .def_prop_ro(
          "layout", [](const FieldSpec& f) { return f.layout == Layout::kRowMajor ? "rowmajor" : "hzorder"; },
          "Sample order of new blocks: hzorder or rowmajor.")
      .def_ro("default_value", &FieldSpec::default_value, "Value of samples never written.");
  def_repr(field, "FieldSpec", {"name", "dtype", "codec", "layout", "default_value"});

  nb::class_<BlockInfo> block(m, "BlockInfo", "Where one block of a field and timestep is stored, and its stats.");
  block.def_ro("block", &BlockInfo::block)
      .def_ro("level", &BlockInfo::level)
      .def_ro("file", &BlockInfo::file, "Path of its data file.")
      .def_ro("file_exists", &BlockInfo::file_exists)
      .def_ro("offset", &BlockInfo::offset, "0 (and size 0): missing.")
      .def_ro("size", &BlockInfo::size, "Stored payload bytes.")
      .def_ro("flags", &BlockInfo::flags, "Low nibble codec, 0x10 row-major.")
      .def_ro("entry", &BlockInfo::entry, "Header table entry: field * blocks_per_file + slot.")
      .def_ro("stats_known", &BlockInfo::stats_known, "A valid statistics sidecar describes the block.")
      .def_ro("checksums_known", &BlockInfo::checksums_known, "That sidecar has checksums of the block's payload.")
      .def_ro("count", &BlockInfo::count, "Samples inside the dataset box; 0 for a missing block.")
      .def_ro("min", &BlockInfo::min, "Per component.")
      .def_ro("max", &BlockInfo::max, "Per component.");
  def_repr(block, "BlockInfo",
           {"block", "level", "file", "file_exists", "offset", "size", "flags", "entry", "stats_known",
            "checksums_known", "count", "min", "max"});
}

void bind_reports(nb::module_& m) {
  nb::class_<ReadReport> read(m, "ReadReport", "What a read touched and the least it could have.");
  read.def_ro("files_opened", &ReadReport::files_opened)
      .def_ro("blocks_read", &ReadReport::blocks_read, "Blocks whose payload was read from disk.")
      .def_ro("blocks_missing", &ReadReport::blocks_missing, "Needed blocks absent (read as the default value).")
      .def_ro("bytes_read", &ReadReport::bytes_read, "Payload and header bytes read from disk.")
      .def_ro("min_bytes", &ReadReport::min_bytes, "Stored payload bytes of the blocks the read needed.")
      .def_ro("requests", &ReadReport::requests, "Requests sent to a remote dataset's server (0 for local files).")
      .def_ro("bytes_received", &ReadReport::bytes_received, "Body bytes those requests brought back.")
      .def_ro("method", &ReadReport::method, "independent or two-phase.")
      .def_ro("assembly", &ReadReport::assembly, "blocks or windows.");
  def_repr(read, "ReadReport",
           {"files_opened", "blocks_read", "blocks_missing", "bytes_read", "min_bytes", "requests", "bytes_received",
            "method", "assembly"});

  nb::class_<PhaseTimes> phases(m, "PhaseTimes", "Seconds per phase of a write (max or mean over ranks).");
  phases.def_ro("restructure", &PhaseTimes::restructure)
      .def_ro("hz", &PhaseTimes::hz)
      .def_ro("aggregate", &PhaseTimes::aggregate)
      .def_ro("compress", &PhaseTimes::compress)
      .def_ro("stats", &PhaseTimes::stats)
      .def_ro("write", &PhaseTimes::write)
      .def_ro("commit", &PhaseTimes::commit)
      .def_ro("stage", &PhaseTimes::stage)
      .def_ro("other", &PhaseTimes::other)
      .def_ro("total", &PhaseTimes::total);
  def_repr(phases, "PhaseTimes",
           {"restructure", "hz", "aggregate", "compress", "stats", "write", "commit", "stage", "other", "total"});

  nb::class_<LevelTimes> level(m, "LevelTimes", "Blocks, stored bytes and seconds of one level of a write.");
  level.def_ro("level", &LevelTimes::level)
      .def_ro("blocks", &LevelTimes::blocks)
      .def_ro("bytes", &LevelTimes::bytes)
      .def_ro("hz_max", &LevelTimes::hz_max)
      .def_ro("hz_mean", &LevelTimes::hz_mean)
      .def_ro("write_max", &LevelTimes::write_max)
      .def_ro("write_mean", &LevelTimes::write_mean);
  def_repr(level, "LevelTimes", {"level", "blocks", "bytes", "hz_max", "hz_mean", "write_max", "write_mean"});

  nb::class_<PartitionGroupReport> group(m, "PartitionGroupReport",
                                         "One group of ranks of a partitioned write and what it moved.");
  group.def_ro("partition", &PartitionGroupReport::partition)
      .def_ro("partitions", &PartitionGroupReport::partitions)
      .def_ro("ranks", &PartitionGroupReport::ranks)
      .def_ro("aggregators", &PartitionGroupReport::aggregators)
      .def_ro("files", &PartitionGroupReport::files)
      .def_ro("messages", &PartitionGroupReport::messages)
      .def_ro("bytes", &PartitionGroupReport::bytes);
  def_repr(group, "PartitionGroupReport",
           {"partition", "partitions", "ranks", "aggregators", "files", "messages", "bytes"});

  nb::class_<MergeReport> merge(m, "MergeReport", "The merge of the shared files of a partitioned write.");
  merge.def_ro("mergers", &MergeReport::mergers)
      .def_ro("files", &MergeReport::files)
      .def_ro("messages", &MergeReport::messages)
      .def_ro("bytes", &MergeReport::bytes)
      .def_ro("seconds", &MergeReport::seconds);
  def_repr(merge, "MergeReport", {"mergers", "files", "messages", "bytes", "seconds"});

  nb::class_<WriteReport> write(m, "WriteReport", "What a commit did: phase seconds, bytes, files, per-level work.");
  write.def_ro("ranks", &WriteReport::ranks)
      .def_ro("aggregators", &WriteReport::aggregators)
      .def_ro("rounds", &WriteReport::rounds)
      .def_ro("placement", &WriteReport::placement, "localized, uniform or serial.")
      .def_ro("rank_conforming", &WriteReport::rank_conforming,
              "Whether the bitmask is rank-conforming for the boxes of this write.")
      .def_ro("bytes", &WriteReport::bytes, "Sample bytes handed to write_box by all ranks.")
      .def_ro("file_bytes", &WriteReport::file_bytes, "Payload bytes stored in data files.")
      .def_ro("files", &WriteReport::files, "Data files written.")
      .def_ro("messages", &WriteReport::messages, "Record messages between ranks.")
      .def_ro("message_bytes", &WriteReport::message_bytes, "Bytes of those messages.")
      .def_ro("partitions", &WriteReport::partitions, "Partitions of a partitioned write (1 otherwise).")
      .def_ro("index_space", &WriteReport::index_space, "global, or local: one dataset per partition.")
      .def_ro("groups", &WriteReport::groups, "Per group of a partitioned write.")
      .def_ro("merge", &WriteReport::merge, "The merge of a partitioned write's shared files.")
      .def_ro("moved_messages", &WriteReport::moved_messages, "Parts of boxes sent to another partition's group.")
      .def_ro("moved_bytes", &WriteReport::moved_bytes, "Bytes of those parts.")
      .def_ro("max", &WriteReport::max)
      .def_ro("mean", &WriteReport::mean)
      .def_ro("levels", &WriteReport::levels);
  def_repr(write, "WriteReport",
           {"ranks", "aggregators", "rounds", "placement", "bytes", "file_bytes", "files", "rank_conforming",
            "messages", "message_bytes", "partitions", "index_space", "groups", "merge", "moved_messages",
            "moved_bytes", "max", "mean", "levels"});

  nb::class_<QueryResult> query(m, "QueryResult",
                                "The matches of a value-range query; the arrays are views of its buffers.");
  query
      .def_prop_ro(
          "points", [](QueryResult& r) { return points_view(r.points); }, nb::rv_policy::reference_internal,
          "(n, 3) int64: x-first sample coordinates, in C order of the grid.")
      .def_prop_ro(
          "values", [](QueryResult& r) { return bytes_view(r.values.data(), r.values.size()); },
          nb::rv_policy::reference_internal, "uint8 bytes: one sample (all components) per point.")
      .def_prop_ro(
          "mask", [](QueryResult& r) { return bytes_view(r.mask.data(), r.mask.size()); },
          nb::rv_policy::reference_internal,
          "uint8, 0 or 1 per sample of the level's grid (queries asking for a mask).")
      .def_ro("report", &QueryResult::report)
      .def_ro("blocks_skipped", &QueryResult::blocks_skipped, "Candidate blocks ruled out by their statistics.");
  query.def("__repr__", [](const QueryResult& r) {
    return "QueryResult(points=" + std::to_string(r.points.size() / 3) +
           ", values_bytes=" + std::to_string(r.values.size()) + ", mask_samples=" + std::to_string(r.mask.size()) +
           ", blocks_skipped=" + std::to_string(r.blocks_skipped) + ")";
  });
}

}  // namespace

void bind_results(nb::module_& m) {
  bind_geometry(m);
  bind_reports(m);
}

}  // namespace hzio::bindings
