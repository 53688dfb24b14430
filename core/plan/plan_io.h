#pragma once

#include <string>

#include "plan/plan.h"
#include "stagecraft/v1/plan.pb.h"

namespace stagecraft {

class Cluster;
class ModelSpec;

/// The file form of a plan. The model is named; its spec is embedded when it is not a
/// zoo model, so a plan file is self-contained.
v1::Plan planToProto(const Plan& plan, const ModelSpec& model, const Cluster& cluster);

/// Reads device names against `cluster`. Throws Error for an unknown device, schedule or
/// optimizer; structural problems are left to validatePlan.
Plan planFromProto(const v1::Plan& proto, const Cluster& cluster);

/// The model a plan file trains: its embedded spec, or the zoo model it names.
ModelSpec modelOfPlan(const v1::Plan& proto);

}  // namespace stagecraft
