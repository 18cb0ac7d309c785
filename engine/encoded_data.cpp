// The encoded-data contract's shared operations (the registry: engine/backend_registry.cpp).
#include "engine/encoded_data.hpp"
#include "engine/report.hpp"
#include "engine/row_hash.hpp"

#include <mixle/encoded_data.hpp>
#include <mixle/error.hpp>

namespace mixle {

void Statistics::combine(const Statistics& other) {
  if (other.values.size() != values.size())
    throw InvalidInput("statistics of different sizes cannot be combined (" + std::to_string(values.size()) + " vs " +
                       std::to_string(other.values.size()) + ")");
  for (std::size_t i = 0; i < values.size(); ++i) values[i] += other.values[i];
}

std::pair<double, double> EncodedData::log_density_sum(const Model& model, const EstimatorOptions& options) {
  const Statistics s = stream_accumulate(model, options);
  return {s.rows(), s.loglik_sum()};
}

MStepResult EncodedData::estimate(const Model& prev, const EstimatorOptions& options) {
  const Statistics s = stream_accumulate(prev, options);
  MStepResult next = engine::m_step(prev, s.values, engine::shift_table(prev, options.precision), options);
  next.rows = s.rows();
  next.loglik_sum = s.loglik_sum();
  return next;
}

Model EncodedData::initialize(const Model& shape, std::uint64_t seed, double p, const EstimatorOptions& options) {
  if (!(p > 0.0 && p <= 1.0)) throw InvalidInput("init-p = " + std::to_string(p) + " must be in (0, 1]");
  const std::size_t K = shape.components();
  Assigner assign = [seed, p](const Dataset& rows, std::size_t first_row, std::size_t K, std::size_t* label) {
    for (std::size_t r = 0; r < rows.rows(); ++r) {
      const std::uint64_t g = first_row + r;
      if (engine::to_unit(engine::row_draw(seed, 1, g)) >= p) continue;
      label[r] = static_cast<std::size_t>(engine::row_draw(seed, 2, g) % K);
    }
  };
  const Statistics s = accumulate_assigned(shape, assign);
  for (std::size_t k = 0; k < K; ++k)
    if (s.values[kernels::kStatHeader + k] <= 0.0)
      throw InvalidInput("initialisation 'select' with p = " + std::to_string(p) + " gave component " +
                         std::to_string(k) + " no rows (" + std::to_string(rows()) + " rows, K = " + std::to_string(K) +
                         "); raise --init-p or use --init kmeans++");
  return engine::m_step(shape, s.values, engine::shift_table(shape, Precision::fp64, /*zero_shift=*/true), options)
      .model;
}

bool EncodedDataOptions::is_default() const { return engine::controls_set(*this).empty(); }

std::string engine::controls_set(const EncodedDataOptions& options) {
  const EncodedDataOptions d;
  std::string set;
  const auto add = [&set](bool differs, const char* name) {
    if (differs) set += (set.empty() ? "" : ", ") + std::string(name);
  };
  add(options.backend != d.backend, "backend");
  add(options.device != d.device, "device");
  add(options.threads != d.threads, "threads");
  add(options.num_workers != d.num_workers, "num_workers");
  add(options.comm != d.comm, "comm");
  add(options.prune != d.prune, "prune");
  return set;
}

bool is_encoded_data_handle(const DataSource& source) noexcept {
  return std::holds_alternative<std::shared_ptr<EncodedData>>(source);
}

}  // namespace mixle
