#pragma once
// The divergence guard's rule: a step whose loss is not finite, or far above the loss's
// running level, means training has diverged (too high a learning rate, bad data). Plain
// numbers in, a verdict out.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace stagecraft::control {

struct DivergenceRule {
  bool enabled = true;
  /// A loss this many times its running level, and this many times where training started
  /// (a nearly learned task's loss swings far above its small level without diverging),
  /// has diverged.
  double factor = 10;
  int warmup = 5;      ///< steps seen before the level counts (a start's losses swing)
  int window = 20;     ///< the running level: the median of the last this many losses
};

/// Why and where training diverged.
struct Divergence {
  std::int64_t step = 0;
  double loss = 0;
  double level = 0;          ///< the running level before it (0 when not known yet)
  std::string reason;        ///< "the loss is not finite" or "the loss is 123x its running level 0.35"
  std::int64_t kept_step = 0;  ///< the step whose weights the run went back to
};

class DivergenceWatch {
 public:
  explicit DivergenceWatch(DivergenceRule rule = {}) : rule_(rule) {}
  /// The step's loss; a Divergence (kept_step unset) when it has diverged. Steps seen
  /// again (a replay) are not counted twice.
  std::optional<Divergence> observe(std::int64_t step, double loss);
  /// The median of the recent losses; 0 before any.
  double level() const;

 private:
  DivergenceRule rule_;
  std::deque<std::pair<std::int64_t, double>> recent_;  // step, loss; oldest first
  double start_level_ = 0;  // the median of the first `warmup` losses; 0 until then
};

}  // namespace stagecraft::control
