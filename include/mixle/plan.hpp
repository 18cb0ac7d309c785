// The planning layer's public API (docs/design.md §12): devices and resources, row placement,
// component sharding, calibration records, and the distributed training contracts. Host-only,
// no third-party types; see docs/planning.md.
#pragma once

#include <mixle/plan/attestation.hpp>
#include <mixle/plan/backend_registry.hpp>
#include <mixle/plan/calibration.hpp>
#include <mixle/plan/contracts.hpp>
#include <mixle/plan/launchers.hpp>
#include <mixle/plan/parallel_plan.hpp>
#include <mixle/plan/placement.hpp>
#include <mixle/plan/resources.hpp>
#include <mixle/plan/step_receipt.hpp>
