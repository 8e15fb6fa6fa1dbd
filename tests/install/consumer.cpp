// A C++ program built against the installed hzio (tests/install/run.sh): writes a box, then reads it back
// at every level, progressively and by a value-range query, each checked against the formula written.
// Usage: consumer PATH (writes PATH.idx). Exit status 0 when every check passes.
#include <cstdio>
#include <string>
#include <vector>

#include "hzio/dataset.hpp"

namespace {

int failures = 0;

void check(bool ok, const char* what, const hzio::Status& s = hzio::Status::ok()) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "failed: %s %s\n", what, s.message().c_str());
  }
}

constexpr int64_t kNx = 33, kNy = 17, kNz = 9;

double value_at(int64_t x, int64_t y, int64_t z) { return static_cast<double>(x + 100 * y + 10000 * z) * 0.5; }

// Whether `samples` (the grid g, x fastest) hold the formula's values at the grid's points.
bool matches(const std::vector<double>& samples, const hzio::SampleGrid& g) {
  size_t i = 0;
  for (int64_t z = 0; z < g.count[2]; ++z)
    for (int64_t y = 0; y < g.count[1]; ++y)
      for (int64_t x = 0; x < g.count[0]; ++x, ++i)
        if (samples[i] !=
            value_at(g.origin[0] + x * g.spacing[0], g.origin[1] + y * g.spacing[1], g.origin[2] + z * g.spacing[2]))
          return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = std::string(argc > 1 ? argv[1] : "consumer_data") + ".idx";
  hzio::CreateOptions opt;
  opt.dims = {kNx, kNy, kNz};
  opt.fields = {{.name = "v", .dtype = {hzio::Scalar::kFloat64}, .codec = "lz4"}};
  opt.overwrite = true;
  std::vector<double> data;
  for (int64_t z = 0; z < kNz; ++z)
    for (int64_t y = 0; y < kNy; ++y)
      for (int64_t x = 0; x < kNx; ++x) data.push_back(value_at(x, y, z));
  const hzio::Box all{{0, 0, 0}, {kNx, kNy, kNz}};
  {
    auto created = hzio::Dataset::create(path, opt);
    check(created.is_ok(), "create", created.status());
    if (!created.is_ok()) return 1;
    hzio::Status s = created.value()->write_box(all, "v", 0, data.data(), data.size() * sizeof(double));
    check(s.is_ok(), "write_box", s);
    s = created.value()->close();
    check(s.is_ok(), "close", s);
  }
  auto opened = hzio::Dataset::open(path);
  check(opened.is_ok(), "open", opened.status());
  if (!opened.is_ok()) return 1;
  hzio::Dataset& ds = *opened.value();
  for (int level = 0; level <= ds.max_level(); ++level) {
    const hzio::SampleGrid g = ds.level_grid(all, level).value();
    std::vector<double> out(static_cast<size_t>(g.sample_count()));
    const hzio::Status s = ds.read_box(all, level, "v", 0, out.data(), out.size() * sizeof(double));
    check(s.is_ok() && matches(out, g), "read_box at a level", s);
  }
  const hzio::Box part{{5, 3, 2}, {29, 16, 7}};
  auto progressive = hzio::ProgressiveRead::start(ds, part, "v", 0, {ds.max_level() - 4, ds.max_level()});
  check(progressive.is_ok(), "progressive start", progressive.status());
  while (progressive.is_ok() && !progressive.value()->done()) {
    const hzio::SampleGrid g = progressive.value()->next_grid().value();
    std::vector<double> out(static_cast<size_t>(g.sample_count()));
    const hzio::Status s = progressive.value()->next(out.data(), out.size() * sizeof(double));
    check(s.is_ok() && matches(out, g), "progressive step", s);
  }
  hzio::QueryResult found;
  const hzio::Status s = ds.query(all, -1, "v", 0, 25000.0, 25100.0, 0, false, &found);
  size_t expected = 0;
  for (double d : data) expected += d >= 25000.0 && d <= 25100.0;
  check(s.is_ok() && found.points.size() == 3 * expected, "query", s);
  check(ds.close().is_ok(), "close after reads");
  std::printf("C++ consumer: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
