// JSON conversions of DeviceSpec and Resources (plan/ internal; the CLI uses them too).
#pragma once

#include <mixle/plan/resources.hpp>

#include "plan/json_fields.hpp"

namespace mixle::plan::detail {

/// The reference nine keys (nulls included) plus mixle's optional keys when set.
Json device_to_json(const DeviceSpec& device);
/// Requires "name"; fills defaults; validates.
DeviceSpec device_from_json(const Json& obj, std::string_view context);
Json resources_to_json(const Resources& resources);
Resources resources_from_json(const Json& obj, std::string_view context);

}  // namespace mixle::plan::detail
