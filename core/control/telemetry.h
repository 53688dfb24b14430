#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/worker_status.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

/// One training step of the whole pipeline, once every member has reported it.
struct StepResult {
  std::int64_t step = 0;  ///< iterations completed
  double loss = 0;        ///< sum(loss * loss_samples) / sum(loss_samples) over last-stage members
  int loss_samples = 0;
  double iteration_ms = 0;        ///< the slowest member's
  double samples_per_second = 0;  ///< batch * 1000 / iteration_ms
};

/// A deployed member as the aggregator needs to know it.
struct TelemetryMember {
  WorkerEndpoint endpoint;
  bool last_stage = false;  ///< its loss counts
};

/// Folds the members' telemetry into pipeline steps. Plain data in, results out: no
/// threads, no network, so the arithmetic is testable on its own.
class TelemetryAggregator {
 public:
  TelemetryAggregator(std::vector<TelemetryMember> members, int batch_size, std::string job);

  /// Takes one event from member `member`'s stream and returns the steps it completes,
  /// in step order. Events of another job are ignored. An error event throws
  /// WorkerError naming the member; so does a step reported twice by one member.
  std::vector<StepResult> add(int member, const v1::TelemetryEvent& event);

  /// Every member said it finished and every step it reported is complete.
  bool finished() const;
  /// Every member said it finished, whether or not the steps they reported add up.
  bool everyMemberFinished() const;
  /// Members that have not reported `step` (all of them for a step nobody reported).
  std::vector<int> missing(std::int64_t step) const;
  bool memberFinished(int member) const { return finished_[member]; }
  /// The last step member `member` reported (start step before any).
  std::int64_t lastStep(int member) const { return last_step_[member]; }
  const std::vector<TelemetryMember>& members() const { return members_; }
  /// Steps some members reported and others not yet, oldest first.
  std::vector<std::int64_t> incompleteSteps() const;

 private:
  struct Partial {
    std::vector<bool> reported;
    int count = 0;
    double loss_weighted = 0;
    int loss_samples = 0;
    double iteration_ms = 0;
  };
  std::vector<TelemetryMember> members_;
  int batch_size_;
  std::string job_;
  std::map<std::int64_t, Partial> pending_;
  std::vector<bool> finished_;
  std::vector<std::int64_t> last_step_;
};

}  // namespace stagecraft::control
