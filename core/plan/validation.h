#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"

namespace stagecraft {

class CostModel;

/// Everything wrong with `plan` for the cost model's model and cluster, one sentence
/// each: layers missing or covered twice, devices unknown or used twice, shares that do
/// not sum to the micro-batch, batch not divisible, memory over a device's limit (by how
/// much). Empty when the plan is valid.
std::vector<std::string> validatePlan(const Plan& plan, const CostModel& cost);

}  // namespace stagecraft
