#pragma once

#include <QFontMetrics>
#include <QRect>
#include <QString>
#include <QStringList>
#include <vector>

#include "editor/plan_evaluation.h"
#include "model/model_spec.h"
#include "plan/plan.h"

namespace stagecraft {
class Cluster;
}

namespace stagecraft::gui {

/// A device chip: who, where it is drawn, and in which stage (-1: the unused tray).
struct DeviceChip {
  int device = -1;
  int stage = -1;
  QRect rect;
  QString text;
};

/// One lane of the partition editor.
struct StageLane {
  QRect lane;    ///< the whole card
  QRect header;  ///< title and chips
  QRect bar;     ///< the common layer axis
  QRect handle;  ///< the boundary after this stage (empty for the last)
  QString title;
  QString subtitle;
  bool bottleneck = false;  ///< the slowest stage of a pipeline of two or more
};

/// Where everything of the partition editor is drawn, computed from the plan alone, so
/// painting, hit-testing and tests agree. Layers get a width proportional to their
/// forward + backward FLOPs on one horizontal axis shared by every lane (plus a small
/// floor, so a pooling layer stays visible and grabbable).
class PartitionLayout {
 public:
  static constexpr int kMargin = 14;
  static constexpr int kLaneGap = 12;
  static constexpr int kBarHeight = 34;
  static constexpr int kChipHeight = 22;

  PartitionLayout() = default;
  PartitionLayout(const ModelSpec& model, const Cluster& cluster, const Plan& plan, const PlanEvaluation& evaluation,
                  const QFontMetrics& metrics, int width);

  int height() const { return height_; }
  const QRect& banner() const { return banner_; }
  const QStringList& bannerLines() const { return banner_lines_; }
  const std::vector<StageLane>& lanes() const { return lanes_; }
  const std::vector<DeviceChip>& chips() const { return chips_; }
  const QRect& tray() const { return tray_; }
  /// The block of layer `layer` in its stage's lane (empty when no stage holds it).
  QRect layerRect(int layer) const;
  /// X of the cut before layer `layer` (0..layers) on the common axis.
  int xOfCut(int layer) const;
  /// The cut (0..layers) nearest to `x`.
  int cutNearest(int x) const;

  int laneAt(const QPoint& pos) const;
  int layerAt(const QPoint& pos) const;
  /// Index into chips(), or -1.
  int chipAt(const QPoint& pos) const;
  int handleAt(const QPoint& pos) const;
  const DeviceChip* chipOf(int device) const;

 private:
  std::vector<StageLane> lanes_;
  std::vector<DeviceChip> chips_;
  std::vector<double> prefix_;  ///< cumulative axis weight of layers [0, i)
  std::vector<QRect> layers_;
  QRect banner_;
  QStringList banner_lines_;
  QRect tray_;
  int axis_left_ = 0;
  int axis_width_ = 1;
  int height_ = 0;
};

}  // namespace stagecraft::gui
