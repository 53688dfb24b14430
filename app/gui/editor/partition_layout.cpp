#include "editor/partition_layout.h"

#include <QCoreApplication>
#include <algorithm>

#include "cluster/cluster.h"
#include "editor/display_units.h"

namespace stagecraft::gui {
namespace {

/// Lays chips out left to right from `origin`, wrapping within `right`; returns the bottom.
int flowChips(std::vector<DeviceChip>& chips, size_t first, QPoint origin, int left, int right) {
  int x = origin.x();
  int y = origin.y();
  for (size_t i = first; i < chips.size(); ++i) {
    QRect& r = chips[i].rect;
    if (x + r.width() > right && x > left) {
      x = left;
      y += PartitionLayout::kChipHeight + 6;
    }
    r.moveTopLeft(QPoint(x, y));
    x += r.width() + 6;
  }
  return y + PartitionLayout::kChipHeight;
}

}  // namespace

PartitionLayout::PartitionLayout(const ModelSpec& model, const Cluster& cluster, const Plan& plan,
                                 const PlanEvaluation& ev, const QFontMetrics& fm, int width) {
  const int layers = model.layerCount();
  const int inner_left = kMargin;
  const int inner_right = std::max(width - kMargin, inner_left + 200);
  int y = kMargin;

  if (!ev.valid && !ev.problems.isEmpty()) {
    banner_lines_ << QCoreApplication::translate("PartitionEditor", "This plan cannot run:");
    const int shown = std::min<int>(ev.problems.size(), 4);
    for (int i = 0; i < shown; ++i) banner_lines_ << QStringLiteral("• ") + ev.problems[i];
    if (ev.problems.size() > shown) {
      banner_lines_ << QCoreApplication::translate("PartitionEditor", "… and %n more problem(s).", nullptr,
                                                   static_cast<int>(ev.problems.size()) - shown);
    }
    const int text_width = inner_right - inner_left - 24;
    int h = 16;
    for (const QString& line : banner_lines_) {
      h += fm.boundingRect(QRect(0, 0, text_width, 10000), Qt::TextWordWrap, line).height() + 2;
    }
    banner_ = QRect(inner_left, y, inner_right - inner_left, h);
    y = banner_.bottom() + 1 + kLaneGap;
  }

  // The common axis: forward + backward FLOPs, with a floor of 0.6 % of the model each.
  const double total = std::max(model.forwardFlops(0, layers) + model.backwardFlops(0, layers), 1.0);
  prefix_.assign(layers + 1, 0.0);
  for (int i = 0; i < layers; ++i) {
    prefix_[i + 1] = prefix_[i] + model.forwardFlops(i, i + 1) + model.backwardFlops(i, i + 1) + 0.006 * total;
  }
  axis_left_ = inner_left + 12;
  axis_width_ = std::max(inner_right - 12 - axis_left_, 1);

  layers_.assign(layers, QRect());
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    StageLane lane;
    lane.title = QCoreApplication::translate("PartitionEditor", "Stage %1").arg(s);
    const bool range_ok = st.layer_begin >= 0 && st.layer_end <= layers && st.layer_begin < st.layer_end;
    const double ms = s < static_cast<int>(ev.stage_compute_ms.size()) ? ev.stage_compute_ms[s] : 0.0;
    if (!range_ok) {
      lane.subtitle = QCoreApplication::translate("PartitionEditor", "no layers");
    } else if (st.layer_end - st.layer_begin == 1) {
      lane.subtitle = QCoreApplication::translate("PartitionEditor", "layer %1 · %2 per micro-batch")
                          .arg(st.layer_begin)
                          .arg(formatMs(ms));
    } else {
      lane.subtitle = QCoreApplication::translate("PartitionEditor", "layers %1–%2 · %3 per micro-batch")
                          .arg(st.layer_begin)
                          .arg(st.layer_end - 1)
                          .arg(formatMs(ms));
    }
    const int title_w = fm.horizontalAdvance(lane.title) + 16;
    // Room for the longest form, so chips never run under a "bottleneck" mark added below.
    const int sub_w =
        fm.horizontalAdvance(QCoreApplication::translate("PartitionEditor", "%1 · bottleneck").arg(lane.subtitle)) + 8;
    const int header_top = y + 8;
    const size_t first = chips_.size();
    for (const DeviceShare& m : st.members) {
      if (m.device < 0 || m.device >= cluster.size()) continue;
      DeviceChip chip;
      chip.device = m.device;
      chip.stage = s;
      chip.text = QCoreApplication::translate("PartitionEditor", "%1 ×%2")
                      .arg(QString::fromStdString(cluster.device(m.device).name))
                      .arg(m.samples);
      chip.rect = QRect(0, 0, fm.horizontalAdvance(chip.text) + 28, kChipHeight);
      chips_.push_back(chip);
    }
    const int chips_left = inner_left + 12 + title_w;
    const int chips_bottom =
        flowChips(chips_, first, QPoint(chips_left, header_top), chips_left, inner_right - 12 - sub_w);
    lane.header = QRect(inner_left, y, inner_right - inner_left, chips_bottom - y + 6);
    lane.bar = QRect(axis_left_, lane.header.bottom() + 3, axis_width_, kBarHeight);
    lane.lane = QRect(inner_left, y, inner_right - inner_left, lane.bar.bottom() + 10 - y);
    if (range_ok) {
      for (int i = st.layer_begin; i < st.layer_end; ++i) {
        layers_[i] = QRect(QPoint(xOfCut(i), lane.bar.top()), QPoint(xOfCut(i + 1) - 1, lane.bar.bottom()));
      }
    }
    lanes_.push_back(lane);
    y = lane.lane.bottom() + 1 + kLaneGap;
  }
  if (ev.bottleneck_stage >= 0 && ev.bottleneck_stage < static_cast<int>(lanes_.size())) {
    StageLane& lane = lanes_[static_cast<size_t>(ev.bottleneck_stage)];
    lane.bottleneck = true;
    lane.subtitle = QCoreApplication::translate("PartitionEditor", "%1 · bottleneck").arg(lane.subtitle);
  }
  for (int s = 0; s + 1 < static_cast<int>(lanes_.size()); ++s) {
    const int x = xOfCut(plan.stages[s].layer_end);
    const int top = lanes_[s].bar.center().y();
    const int bottom = lanes_[s + 1].lane.top() + 4;  // through the gap, not over the next header
    lanes_[s].handle = QRect(x - 6, top, 12, bottom - top);
  }

  // The tray of unused devices.
  const std::vector<int> stage_of = plan.stageOfDevice(cluster.size());
  const size_t first = chips_.size();
  for (int d = 0; d < cluster.size(); ++d) {
    if (stage_of[d] >= 0) continue;
    DeviceChip chip;
    chip.device = d;
    chip.text = QString::fromStdString(cluster.device(d).name);
    chip.rect = QRect(0, 0, fm.horizontalAdvance(chip.text) + 28, kChipHeight);
    chips_.push_back(chip);
  }
  const int tray_label = fm.horizontalAdvance(QCoreApplication::translate("PartitionEditor", "Unused devices")) + 24;
  const int tray_bottom = flowChips(chips_, first, QPoint(inner_left + 12 + tray_label, y + 10),
                                    inner_left + 12 + tray_label, inner_right - 12);
  tray_ = QRect(inner_left, y, inner_right - inner_left, std::max(tray_bottom + 10 - y, kChipHeight + 20));
  height_ = tray_.bottom() + 1 + kMargin;
}

QRect PartitionLayout::layerRect(int layer) const {
  return layer >= 0 && layer < static_cast<int>(layers_.size()) ? layers_[layer] : QRect();
}

int PartitionLayout::xOfCut(int layer) const {
  if (prefix_.empty()) return axis_left_;
  layer = std::clamp(layer, 0, static_cast<int>(prefix_.size()) - 1);
  return axis_left_ + static_cast<int>(prefix_[layer] / prefix_.back() * axis_width_ + 0.5);
}

int PartitionLayout::cutNearest(int x) const {
  int best = 0;
  for (int i = 1; i < static_cast<int>(prefix_.size()); ++i) {
    if (std::abs(xOfCut(i) - x) < std::abs(xOfCut(best) - x)) best = i;
  }
  return best;
}

int PartitionLayout::laneAt(const QPoint& pos) const {
  for (int s = 0; s < static_cast<int>(lanes_.size()); ++s) {
    if (lanes_[s].lane.contains(pos)) return s;
  }
  return -1;
}

int PartitionLayout::layerAt(const QPoint& pos) const {
  for (int i = 0; i < static_cast<int>(layers_.size()); ++i) {
    if (layers_[i].contains(pos)) return i;
  }
  return -1;
}

int PartitionLayout::chipAt(const QPoint& pos) const {
  for (int i = 0; i < static_cast<int>(chips_.size()); ++i) {
    if (chips_[i].rect.contains(pos)) return i;
  }
  return -1;
}

int PartitionLayout::handleAt(const QPoint& pos) const {
  for (int s = 0; s < static_cast<int>(lanes_.size()); ++s) {
    if (!lanes_[s].handle.isEmpty() && lanes_[s].handle.adjusted(-3, 0, 3, 0).contains(pos)) return s;
  }
  return -1;
}

const DeviceChip* PartitionLayout::chipOf(int device) const {
  for (const DeviceChip& c : chips_) {
    if (c.device == device) return &c;
  }
  return nullptr;
}

}  // namespace stagecraft::gui
