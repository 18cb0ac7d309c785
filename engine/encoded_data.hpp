// Encoded-data handles (the reference layer's encoded-data contract, docs/design.md §5): the
// contract is public (<mixle/encoded_data.hpp>); the engine names it here. The EM loop is written
// once against it; backends (local, distributed, component-parallel, a host program's) implement it.
#pragma once

#include "engine/compute.hpp"
#include "engine/estimator.hpp"

#include <mixle/data.hpp>
#include <mixle/encoded_data.hpp>
#include <mixle/model.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mixle::engine {

using mixle::Assigner;
using mixle::DataSource;
using mixle::encoded_data;
using mixle::encoded_data_backends;
using mixle::EncodedData;
using mixle::EncodedDataFactory;
using mixle::EncodedDataOptions;
using mixle::is_encoded_data_handle;
using mixle::register_encoded_data_backend;
using mixle::RowVisitor;
using mixle::Statistics;

/// The controls of `options` that differ from their defaults, by name, comma-separated (empty
/// when every control keeps its default: EncodedDataOptions::is_default).
std::string controls_set(const EncodedDataOptions& options);

}  // namespace mixle::engine
