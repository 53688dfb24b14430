#pragma once
// What prices a plan beyond the cluster file's figures: the devices' measured profiles and
// the compute factors calibrated from training telemetry, by device name, so one basis
// prices a plan over any cluster that names those devices. The run, the editor, the charts
// and the re-plan dialog build their cost models from the same basis, so they agree.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "model/model_spec.h"
#include "stagecraft/v1/cluster.pb.h"

namespace stagecraft {

enum class CostSource { Specs, Profiled, Calibrated };

/// "specs", "profiled" or "calibrated".
std::string_view costSourceName(CostSource source);

struct CostBasis {
  std::optional<v1::ProfileSet> profiles;  ///< measured per-layer times; nullopt: FLOPs / gflops
  /// Per device name, measured over predicted compute time (1: as predicted). A device of the
  /// cluster without one computes like the typical (geometric mean) measured device.
  std::map<std::string, double> factors;
  bool backups = false;  ///< the run keeps backups (their memory counts)

  /// Calibrated once factors are measured, else profiled once profiles are set, else specs.
  CostSource source() const;
};

/// The cost model of `model` over `over` under `basis`: the profiles of the devices `over`
/// names, and (with `calibrated`) the factors. Holds references to `model` and `over`.
CostModel makeCostModel(const ModelSpec& model, const Cluster& over, Optimizer optimizer, const CostBasis& basis,
                        bool calibrated = true);

}  // namespace stagecraft
