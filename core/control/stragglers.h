#pragma once
// Stragglers: a device whose compute has become slower than the plan expected, compared with
// the other devices of the plan (a uniform misprediction is not a straggler), for several
// steps in a row. Plain data in, names out, so the rule is testable on its own.

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace stagecraft::control {

struct StragglerRule {
  double slower_by = 1.25;  ///< relative factor above which a device is slow
  std::int64_t steps = 5;   ///< ...for at least this many steps in a row
};

/// Each device's factor (measured over expected compute time) over the geometric mean of
/// all of them: 1 for a device as fast as the plan expected relative to the others.
/// Entries that are not finite and positive are left out.
std::map<std::string, double> relativeFactors(const std::map<std::string, double>& factors);

class StragglerWatch {
 public:
  explicit StragglerWatch(StragglerRule rule = {}) : rule_(rule) {}
  /// A new deployment: nothing is slow yet.
  void reset();
  /// The relative factors at `step`. Returns the devices that have now been slow for
  /// rule.steps steps, each once per episode (until it is fast again or reset()).
  std::vector<std::string> observe(std::int64_t step, const std::map<std::string, double>& relative);

 private:
  StragglerRule rule_;
  std::map<std::string, std::int64_t> slow_since_;  // device -> the step it was first seen slow
  std::set<std::string> reported_;
};

}  // namespace stagecraft::control
