#pragma once
// What a re-plan promised and what it delivered. A re-plan is chosen on predictions; when the
// steps after it measure clearly below the prediction, the user must hear of it and be able to
// go back to the plan before. Plain data in, verdicts out, so the rule is testable on its own.

#include <cstdint>
#include <deque>
#include <optional>

#include "cluster/cluster.h"
#include "control/telemetry.h"
#include "plan/plan.h"

namespace stagecraft::control {

struct PromiseRule {
  int settle_steps = 1;    ///< steps after a re-plan left out (warm-up, first messages)
  int steps = 5;           ///< steps measured after them, and before the re-plan
  double shortfall = 0.15; ///< measured below (1 - shortfall) x promised: missed
};

/// The verdict on one re-plan, made once, `rule.steps` steps after it settled.
struct PlanPromise {
  std::int64_t from_step = 0;   ///< the step the re-planned run started from
  std::int64_t judged_step = 0; ///< the step the verdict was made at
  double promised_sps = 0;      ///< the prediction the re-plan was chosen on
  double measured_sps = 0;      ///< over the steps measured since
  double before_sps = 0;        ///< measured over the steps before the re-plan; 0: none
  bool missed = false;          ///< measured < (1 - shortfall) x promised
  /// The plan before the re-plan and the cluster it indexes, to go back to.
  Plan previous;
  Cluster previous_cluster;
};

class PromiseWatch {
 public:
  explicit PromiseWatch(PromiseRule rule = {}) : rule_(rule) {}

  /// Samples per second measured over the last rule.steps steps of the current deployment
  /// (all their samples over all their time); 0 before any.
  double recentThroughput() const { return throughput(recent_); }
  /// A re-plan that promises `promised_sps` (0: no prediction, nothing to judge) replaced
  /// `previous` over `previous_cluster`, which measured `before_sps` (recentThroughput()
  /// before the change), at step `from_step`.
  void begin(double promised_sps, double before_sps, Plan previous, Cluster previous_cluster,
             std::int64_t from_step);
  /// A deployment no user chose (a recovery, a new learning rate): nothing to judge, and the
  /// steps before it say nothing of the plan after it.
  void forget();
  /// A completed step of the current deployment. Returns the verdict once, when it is made.
  std::optional<PlanPromise> observe(const StepResult& step);

  bool watching() const { return pending_.has_value(); }

 private:
  static double throughput(const std::deque<StepResult>& steps);

  PromiseRule rule_;
  std::deque<StepResult> recent_;  // the last rule.steps steps of the current deployment
  std::optional<PlanPromise> pending_;
  int settled_ = 0;                 // steps seen since begin()
};

}  // namespace stagecraft::control
