// The main job until the server exists: samples a box and prints a summary.
//   scatter_demo --dims=2 --radius=0.001 --method=poisson_dense

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "sampler/quality.h"
#include "sampler/sampler.h"
#include "sampler/version.h"

ABSL_FLAG(int, dims, 2, "2 or 3: unit square or unit cube");
ABSL_FLAG(double, radius, 0.001, "minimum distance (Poisson methods)");
ABSL_FLAG(std::string, method, "poisson_dense",
          "poisson_dense, poisson_classic, jittered_grid or uniform");
ABSL_FLAG(int, attempts, 0, "candidates per point; 0 = method default");
ABSL_FLAG(double, cell_size, 0.001, "jittered grid cell side");
ABSL_FLAG(std::uint64_t, count, 1000000, "uniform: number of points");
ABSL_FLAG(std::uint64_t, seed, 1, "random seed");
ABSL_FLAG(bool, fill_gaps, true,
          "Poisson methods: fill every gap Bridson leaves (maximal set)");
ABSL_FLAG(std::uint64_t, probes, 1000000,
          "maximality probes thrown into the box (0 skips the check)");

namespace {

using scatter::sampler::Method;

bool ParseMethod(const std::string& name, Method* method) {
  for (Method m : {Method::kPoissonDense, Method::kPoissonClassic,
                   Method::kJitteredGrid, Method::kUniform}) {
    if (name == scatter::sampler::MethodName(m)) {
      *method = m;
      return true;
    }
  }
  return false;
}

int Main() {
  namespace s = scatter::sampler;
  s::SamplerOptions options;
  if (!ParseMethod(absl::GetFlag(FLAGS_method), &options.method)) {
    std::fprintf(stderr, "scatter_demo: unknown --method %s\n",
                 absl::GetFlag(FLAGS_method).c_str());
    return 2;
  }
  options.radius = absl::GetFlag(FLAGS_radius);
  options.max_attempts = absl::GetFlag(FLAGS_attempts);
  options.cell_size = absl::GetFlag(FLAGS_cell_size);
  options.count = absl::GetFlag(FLAGS_count);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.fill_gaps = absl::GetFlag(FLAGS_fill_gaps);
  const int dims = absl::GetFlag(FLAGS_dims);
  absl::StatusOr<s::Box> box = s::Box::Create(dims, {0, 0, 0}, {1, 1, 1});
  if (!box.ok()) {
    std::fprintf(stderr, "scatter_demo: %s\n", box.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<s::Sampler> sampler = s::Sampler::Create(*box, options);
  if (!sampler.ok()) {
    std::fprintf(stderr, "scatter_demo: %s\n",
                 sampler.status().ToString().c_str());
    return 2;
  }
  std::vector<double> coords;
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = sampler->Run([&](const s::PointBatch& batch) {
    coords.insert(coords.end(), batch.coords.begin(), batch.coords.end());
    return true;
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!status.ok()) {
    std::fprintf(stderr, "scatter_demo: %s\n", status.ToString().c_str());
    return 1;
  }
  const std::uint64_t n = coords.size() / static_cast<std::size_t>(dims);
  std::printf("scatter demo (algorithm_version %u)\n", s::kAlgorithmVersion);
  std::printf("  method        %s, %dD unit %s, seed %llu\n",
              s::MethodName(options.method), dims,
              dims == 2 ? "square" : "cube",
              static_cast<unsigned long long>(options.seed));
  std::printf("  points        %llu in %.3f s (%.2f M points/s, SIMD %s)\n",
              static_cast<unsigned long long>(n), seconds,
              static_cast<double>(n) / seconds / 1e6,
              s::SimdLevelName(s::ResolveSimdLevel(s::SimdLevel::kBest)));
  const bool poisson = options.method == Method::kPoissonDense ||
                       options.method == Method::kPoissonClassic;
  if (!poisson) return 0;
  std::printf("  radius        %g, rho %.4f\n", options.radius,
              s::RelativeRadius(n, box->Measure(), dims, options.radius));
  absl::StatusOr<s::MinDistanceReport> md =
      s::CheckMinDistance(coords, dims, options.radius);
  if (md.ok()) {
    std::printf("  min distance  %.9f r, %llu pairs closer than r\n",
                md->min_ratio, static_cast<unsigned long long>(md->violations));
  }
  const std::uint64_t probes = absl::GetFlag(FLAGS_probes);
  if (probes > 0) {
    absl::StatusOr<s::CoverageReport> cov =
        s::MeasureCoverage(coords, *box, options.radius, probes, 0xfeed);
    if (cov.ok()) {
      std::printf("  maximality    %llu of %llu probes uncovered (%.2e)\n",
                  static_cast<unsigned long long>(cov->uncovered),
                  static_cast<unsigned long long>(cov->probes),
                  cov->uncovered_fraction());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Samples the unit square or cube and prints a summary.");
  absl::ParseCommandLine(argc, argv);
  return Main();
}
