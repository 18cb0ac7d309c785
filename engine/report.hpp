// Turns a kernel PassReport into the typed error the user sees, naming global rows.
#pragma once

#include "kernels/model_view.hpp"

#include <string>

namespace mixle::engine {

/// Throws ImpossibleEvidence (rows −inf under every component) or InvalidInput (NaN
/// log-densities) when `report` found any; `first_row` is the global index of the pass's row 0.
void raise_for(const kernels::PassReport& report, const std::string& source, std::size_t first_row);

}  // namespace mixle::engine
