#include "cost/cost_basis.h"

#include <cmath>
#include <vector>

namespace stagecraft {

std::string_view costSourceName(CostSource source) {
  switch (source) {
    case CostSource::Specs: return "specs";
    case CostSource::Profiled: return "profiled";
    case CostSource::Calibrated: return "calibrated";
  }
  return "specs";
}

CostSource CostBasis::source() const {
  if (!factors.empty()) return CostSource::Calibrated;
  return profiles ? CostSource::Profiled : CostSource::Specs;
}

CostModel makeCostModel(const ModelSpec& model, const Cluster& over, Optimizer optimizer, const CostBasis& basis,
                        bool calibrated) {
  CostModel cost(model, over, optimizer);
  if (basis.backups) cost.setBackups(kOwnBackups, kHeldBackups);
  if (basis.profiles) {
    v1::ProfileSet mine;
    for (const auto& p : basis.profiles->devices()) {
      if (over.find(p.device())) *mine.add_devices() = p;
    }
    cost.setProfiles(mine);
  }
  if (calibrated && !basis.factors.empty()) {
    // A device not measured yet computes like the typical measured one.
    double log_sum = 0;
    for (const auto& [name, f] : basis.factors) log_sum += std::log(f);
    const double typical = std::exp(log_sum / static_cast<double>(basis.factors.size()));
    std::vector<double> factors(over.size(), typical);
    for (int d = 0; d < over.size(); ++d) {
      if (const auto it = basis.factors.find(over.device(d).name); it != basis.factors.end()) factors[d] = it->second;
    }
    cost.setComputeFactors(std::move(factors));
  }
  return cost;
}

}  // namespace stagecraft
