// The encoded-data contract's shared operations and the backend registry.
#include "engine/encoded_data.hpp"
#include "engine/report.hpp"
#include "engine/row_hash.hpp"

#include <mixle/encoded_data.hpp>

#include <mixle/error.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

namespace mixle::engine {
// builtin_backends.cpp: the backends this build provides, registered on first use through
// register_encoded_data_backend_impl (defined below).
void register_builtin_encoded_data_backends();
void register_encoded_data_backend_impl(const std::string& name, EncodedDataFactory factory,
                                        const std::vector<std::string>& aliases, bool override);
}  // namespace mixle::engine

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
  return engine::m_step(prev, s.values, engine::shift_table(prev, options.precision), options);
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

bool EncodedDataOptions::is_default() const {
  const EncodedDataOptions d;
  return backend == d.backend && device == d.device && threads == d.threads && num_workers == d.num_workers;
}

namespace {

struct Registration {
  std::string name;
  EncodedDataFactory factory;
  std::vector<std::string> aliases;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, Registration> by_name;  // canonical name → registration
  std::map<std::string, std::string> names;     // every name and alias → canonical name
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

// Registration without first registering the built-ins (which themselves register through it).
void engine::register_encoded_data_backend_impl(const std::string& name, EncodedDataFactory factory,
                                                const std::vector<std::string>& aliases, bool override) {
  if (name.empty() || !factory)
    throw InvalidInput("register_encoded_data_backend: a backend needs a non-empty name and a factory");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Registration reg{lower(name), factory, {}};
  for (const auto& a : aliases) reg.aliases.push_back(lower(a));
  std::vector<std::string> all = reg.aliases;
  all.push_back(reg.name);
  for (const auto& n : all) {
    auto it = r.names.find(n);
    if (it != r.names.end() && !override && r.by_name.at(it->second).factory != factory)
      throw InvalidInput("encoded-data backend name \"" + n + "\" is already registered by backend \"" + it->second +
                         "\"; pass override=true to replace it");
  }
  for (const auto& n : all) r.names[n] = reg.name;
  r.by_name[reg.name] = std::move(reg);
}

void register_encoded_data_backend(const std::string& name, EncodedDataFactory factory,
                                   const std::vector<std::string>& aliases, bool override) {
  // The built-ins first: otherwise a name registered before the first encode could take a
  // built-in name, and the built-ins' own registration would then fail on every encode.
  engine::register_builtin_encoded_data_backends();
  engine::register_encoded_data_backend_impl(name, factory, aliases, override);
}

std::vector<std::string> encoded_data_backends() {
  engine::register_builtin_encoded_data_backends();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [name, reg] : r.by_name) out.push_back(name);
  return out;
}

bool is_encoded_data_handle(const DataSource& source) noexcept {
  return std::holds_alternative<std::shared_ptr<EncodedData>>(source);
}

std::shared_ptr<EncodedData> encoded_data(const DataSource& source, const EncodedDataOptions& options) {
  if (is_encoded_data_handle(source)) {
    if (!options.is_default())
      throw EncodedDataControlConflict(
          "encoded_data: the data is already an encoded handle (backend \"" +
          std::get<std::shared_ptr<EncodedData>>(source)->backend() +
          "\"); encoding controls (backend, device, threads, num_workers) cannot be applied to it — "
          "pass the raw data with the controls, or the handle without them");
    return std::get<std::shared_ptr<EncodedData>>(source);
  }
  engine::register_builtin_encoded_data_backends();
  EncodedDataFactory factory = nullptr;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.names.find(lower(options.backend));
    if (it == r.names.end()) {
      std::string known;
      for (const auto& [n, _] : r.names) known += (known.empty() ? "" : ", ") + n;
      throw InvalidInput("unknown encoded-data backend \"" + options.backend + "\"; registered: " + known);
    }
    factory = r.by_name.at(it->second).factory;
  }
  return std::shared_ptr<EncodedData>(factory(std::get<Dataset>(source), options));
}

}  // namespace mixle
