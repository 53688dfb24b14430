#include "editor/partition_editor.h"

#include <QApplication>
#include <QContextMenuEvent>
#include <QHelpEvent>
#include <QLoggingCategory>
#include <QMenu>
#include <QMimeData>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include "editor/display_units.h"
#include "editor/plan_edits.h"
#include "editor/plan_session.h"
#include "models/mime_types.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcPartitionEditor, "stagecraft.gui.partitioneditor")

namespace {

const QColor kBackground(0xf4, 0xf6, 0xf9);
const QColor kCard(0xff, 0xff, 0xff);
const QColor kCardBorder(0xdd, 0xe2, 0xe8);
const QColor kText(0x1f, 0x29, 0x33);
const QColor kMuted(0x6b, 0x72, 0x80);
const QColor kAccent(0x3b, 0x82, 0xf6);
const QColor kError(0xd3, 0x2f, 0x2f);
const QColor kErrorFill(0xfd, 0xec, 0xea);
const QColor kLayerA(0xcf, 0xdc, 0xf0);
const QColor kLayerB(0xbc, 0xcd, 0xe8);
const QColor kLayerBadA(0xf6, 0xd5, 0xd5);
const QColor kLayerBadB(0xf0, 0xc4, 0xc4);

int nextGesture() {
  static int gesture = 0;
  return ++gesture;
}

}  // namespace

PartitionEditor::PartitionEditor(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAcceptDrops(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void PartitionEditor::setSession(PlanSession* session) {
  if (session_) disconnect(session_, nullptr, this, nullptr);
  session_ = session;
  selected_device_ = -1;
  if (session_) {
    connect(session_, &PlanSession::evaluated, this, &PartitionEditor::relayout);
    connect(session_, &PlanSession::clusterChanged, this, [this] { selected_device_ = -1; });
  }
  relayout();
}

void PartitionEditor::setReadOnly(bool read_only) {
  read_only_ = read_only;
  setAcceptDrops(!read_only);
  setFocusPolicy(read_only ? Qt::NoFocus : Qt::StrongFocus);
  drag_ = Drag::None;
  update();
}

PartitionLayout PartitionEditor::layoutFor(int width) const {
  if (!session_ || !session_->hasDocument()) return {};
  return PartitionLayout(session_->model(), session_->cluster(), session_->plan(), session_->evaluation(),
                         fontMetrics(), width);
}

const PartitionLayout& PartitionEditor::layout() const {
  // A hidden widget gets its resize event only when shown: follow width() regardless.
  if (layout_width_ != width()) {
    layout_ = layoutFor(width());
    layout_width_ = width();
  }
  return layout_;
}

void PartitionEditor::relayout() {
  layout_ = layoutFor(width());
  layout_width_ = width();
  if (selected_device_ >= 0 && !layout_.chipOf(selected_device_)) selected_device_ = -1;
  if (minimumHeight() != layout_.height()) setMinimumHeight(layout_.height());
  updateGeometry();
  update();
}

void PartitionEditor::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  relayout();
}

QSize PartitionEditor::sizeHint() const { return QSize(760, heightForWidth(760)); }

QSize PartitionEditor::minimumSizeHint() const { return QSize(360, 120); }

int PartitionEditor::heightForWidth(int width) const { return std::max(layoutFor(width).height(), 120); }

QRect PartitionEditor::boundaryHandleRect(int stage) const {
  const auto& lanes = layout().lanes();
  return stage >= 0 && stage < static_cast<int>(lanes.size()) ? lanes[stage].handle : QRect();
}

QRect PartitionEditor::deviceChipRect(const QString& device) const {
  if (!session_) return {};
  const DeviceChip* chip = layout().chipOf(session_->deviceIndex(device));
  return chip ? chip->rect : QRect();
}

QRect PartitionEditor::laneRect(int stage) const {
  const auto& lanes = layout().lanes();
  return stage >= 0 && stage < static_cast<int>(lanes.size()) ? lanes[stage].lane : QRect();
}

QRect PartitionEditor::layerRect(int layer) const { return layout().layerRect(layer); }

QRect PartitionEditor::trayRect() const { return layout().tray(); }

QString PartitionEditor::bannerText() const { return layout().bannerLines().join(QLatin1Char('\n')); }

QString PartitionEditor::selectedDevice() const { return session_ ? session_->deviceName(selected_device_) : QString(); }

// ---- painting -------------------------------------------------------------------------

void PartitionEditor::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), kBackground);
  if (!session_ || !session_->hasDocument()) {
    p.setPen(kMuted);
    p.drawText(rect(), Qt::AlignCenter, tr("Open a model and a cluster to edit a plan."));
    return;
  }
  paintBanner(p);
  const int lanes = static_cast<int>(layout().lanes().size());
  // The staircase's risers behind the cards: visible in the gaps between lanes.
  p.setPen(QPen(QColor(0x94, 0xa3, 0xb8), 1, Qt::DashLine));
  for (int s = 0; s + 1 < lanes; ++s) {
    const qreal x = layout().lanes()[s].handle.center().x() + 0.5;
    p.drawLine(QPointF(x, layout().lanes()[s].bar.bottom()), QPointF(x, layout().lanes()[s + 1].bar.top()));
  }
  for (int s = 0; s < lanes; ++s) paintLane(p, s);
  // Boundary handles last, so they sit over both lanes they join.
  for (int s = 0; s + 1 < lanes && !read_only_; ++s) {
    const QRect h = layout().lanes()[s].handle;
    const bool active = drag_ == Drag::Boundary && drag_boundary_ == s;
    p.setPen(QPen(Qt::white, 1.5));
    p.setBrush(active ? kAccent.darker(115) : kAccent);
    p.drawRoundedRect(QRectF(h).adjusted(1, 0, -1, 0), 4, 4);
    const qreal cx = h.center().x() + 0.5;
    const qreal cy = h.center().y();
    for (int i = -1; i <= 1; ++i) p.drawLine(QPointF(cx - 2.5, cy + i * 4), QPointF(cx + 2.5, cy + i * 4));
  }
  paintTray(p);
  paintDragFeedback(p);
}

void PartitionEditor::paintBanner(QPainter& p) const {
  const QRect b = layout().banner();
  if (b.isEmpty()) return;
  p.setPen(QPen(kError.lighter(140), 1));
  p.setBrush(kErrorFill);
  p.drawRoundedRect(QRectF(b).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6);
  p.setPen(Qt::NoPen);
  p.setBrush(kError);
  p.drawRoundedRect(QRectF(b.left(), b.top(), 5, b.height()), 2, 2);
  int y = b.top() + 8;
  const int text_width = b.width() - 24;
  for (int i = 0; i < layout().bannerLines().size(); ++i) {
    QFont f = font();
    f.setBold(i == 0);
    p.setFont(f);
    p.setPen(QColor(0x8e, 0x1b, 0x1b));
    const QString& line = layout().bannerLines()[i];
    const QRect r = QFontMetrics(f).boundingRect(QRect(b.left() + 16, y, text_width, 10000), Qt::TextWordWrap, line);
    p.drawText(QRect(b.left() + 16, y, text_width, r.height()), Qt::TextWordWrap, line);
    y += r.height() + 2;
  }
  p.setFont(font());
}

void PartitionEditor::paintLane(QPainter& p, int s) const {
  const StageLane& lane = layout().lanes()[s];
  const PlanEvaluation& ev = session_->evaluation();
  const bool bad = s < static_cast<int>(ev.stage_has_problem.size()) && ev.stage_has_problem[s];
  const QFontMetrics fm = fontMetrics();

  p.setPen(bad ? QPen(kError, 2) : QPen(kCardBorder, 1));
  p.setBrush(kCard);
  p.drawRoundedRect(QRectF(lane.lane).adjusted(0.5, 0.5, -0.5, -0.5), 8, 8);

  // Title and figures.
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(bad ? kError : kText);
  const QRect title_row(lane.lane.left() + 12, lane.header.top() + 8, fm.horizontalAdvance(lane.title) + 16,
                        PartitionLayout::kChipHeight);
  p.drawText(title_row, Qt::AlignVCenter | Qt::AlignLeft, lane.title);
  p.setFont(font());
  p.setPen(lane.bottleneck ? QColor(0xb4, 0x53, 0x09) : kMuted);
  p.drawText(QRect(lane.lane.left(), title_row.top(), lane.lane.width() - 12, title_row.height()),
             Qt::AlignVCenter | Qt::AlignRight, lane.subtitle);
  for (const DeviceChip& chip : layout().chips()) {
    if (chip.stage == s && !(drag_ == Drag::Chip && chip.device == drag_device_)) paintChip(p, chip);
  }

  // The common axis, then this stage's layers on it.
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(0xf1, 0xf3, 0xf6));
  p.drawRoundedRect(lane.bar, 4, 4);
  const Stage& st = session_->plan().stages[s];
  if (st.layer_begin >= st.layer_end) return;
  const QRect span(QPoint(layout().xOfCut(st.layer_begin), lane.bar.top()),
                   QPoint(layout().xOfCut(st.layer_end) - 1, lane.bar.bottom()));
  QPainterPath clip;
  clip.addRoundedRect(span, 4, 4);
  p.save();
  p.setClipPath(clip);
  for (int i = st.layer_begin; i < st.layer_end; ++i) {
    const QRect r = layout().layerRect(i);
    const bool alt = (i - st.layer_begin) % 2 == 1;
    const bool dragged = (drag_ == Drag::Layer && drag_layer_ == i);
    QColor fill = bad ? (alt ? kLayerBadB : kLayerBadA) : (alt ? kLayerB : kLayerA);
    if (dragged) fill = kAccent.lighter(160);
    p.fillRect(r, fill);
    p.fillRect(QRect(r.right(), r.top(), 1, r.height()), Qt::white);
    const QString name = QString::fromStdString(session_->model().layer(i).name());
    if (fm.horizontalAdvance(name) + 8 <= r.width()) {
      p.setPen(QColor(0x1f, 0x3a, 0x5f));
      p.drawText(r, Qt::AlignCenter, name);
    }
  }
  p.restore();
  p.setPen(QPen(bad ? kError.lighter(130) : QColor(0x9d, 0xb4, 0xd6), 1));
  p.setBrush(Qt::NoBrush);
  p.drawRoundedRect(QRectF(span).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
}

void PartitionEditor::paintChip(QPainter& p, const DeviceChip& chip, bool ghost) const {
  const PlanEvaluation& ev = session_->evaluation();
  const Device& device = session_->cluster().device(chip.device);
  // A device that does not answer reads red like one over its memory, struck through.
  const bool lost = session_->isUnavailable(chip.device);
  const bool over =
      lost || (chip.device < static_cast<int>(ev.device_over_memory.size()) && ev.device_over_memory[chip.device]);
  const bool selected = chip.device == selected_device_ && !read_only_;
  const QColor tier = tierColor(device.tier);
  const QRectF r = QRectF(chip.rect).adjusted(0.5, 0.5, -0.5, -0.5);
  p.save();
  if (ghost) p.setOpacity(0.85);
  QPen border(over ? kError : (selected ? kAccent : tier.lighter(150)), over || selected ? 2 : 1);
  p.setPen(border);
  p.setBrush(over ? kErrorFill : (selected ? QColor(0xe8, 0xf0, 0xfe) : QColor(Qt::white)));
  p.drawRoundedRect(r, r.height() / 2, r.height() / 2);
  p.setPen(Qt::NoPen);
  p.setBrush(tier);
  p.drawEllipse(QPointF(r.left() + 11, r.center().y()), 4.5, 4.5);
  p.setPen(over ? kError : kText);
  const QRectF text_rect = r.adjusted(20, 0, -6, 0);
  p.drawText(text_rect, Qt::AlignVCenter | Qt::AlignLeft, chip.text);
  if (lost) {
    const qreal w = std::min<qreal>(text_rect.width(), fontMetrics().horizontalAdvance(chip.text));
    p.setPen(QPen(kError, 1.2));
    p.drawLine(QPointF(text_rect.left(), r.center().y()), QPointF(text_rect.left() + w, r.center().y()));
  }
  p.restore();
}

void PartitionEditor::paintTray(QPainter& p) const {
  const QRect t = layout().tray();
  const bool target = hover_tray_ && (drag_ == Drag::Chip || drag_ == Drag::None) && dropAllowed(drag_pos_);
  p.setPen(QPen(target ? kAccent : QColor(0xc3, 0xca, 0xd4), target ? 2 : 1, Qt::DashLine));
  p.setBrush(target ? QColor(0xe8, 0xf0, 0xfe) : QColor(0xfa, 0xfb, 0xfc));
  p.drawRoundedRect(QRectF(t).adjusted(0.5, 0.5, -0.5, -0.5), 8, 8);
  p.setPen(kMuted);
  p.drawText(QRect(t.left() + 12, t.top() + 10, t.width(), PartitionLayout::kChipHeight),
             Qt::AlignVCenter | Qt::AlignLeft, tr("Unused devices"));
  bool any = false;
  for (const DeviceChip& chip : layout().chips()) {
    if (chip.stage >= 0) continue;
    any = true;
    if (!(drag_ == Drag::Chip && chip.device == drag_device_)) paintChip(p, chip);
  }
  if (!any) {
    const int left = t.left() + 36 + fontMetrics().horizontalAdvance(tr("Unused devices"));
    p.setPen(QColor(0xa0, 0xa7, 0xb1));
    p.drawText(QRect(left, t.top() + 10, t.right() - left, PartitionLayout::kChipHeight),
               Qt::AlignVCenter | Qt::AlignLeft, tr("Every device is in a stage; drop one here to free it."));
  }
}

void PartitionEditor::paintDragFeedback(QPainter& p) const {
  const bool external = drag_ == Drag::None && (hover_lane_ >= 0 || hover_tray_);
  if (drag_ != Drag::Chip && drag_ != Drag::Layer && !external) return;
  if (hover_lane_ >= 0) {
    const bool ok = external || dropAllowed(drag_pos_);
    p.setPen(QPen(ok ? kAccent : kError, 2, Qt::DashLine));
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(QRectF(layout().lanes()[hover_lane_].lane).adjusted(1, 1, -1, -1), 8, 8);
  }
  if (drag_ == Drag::Chip) {
    if (const DeviceChip* chip = layout().chipOf(drag_device_)) {
      DeviceChip ghost = *chip;
      ghost.rect.moveCenter(drag_pos_);
      paintChip(p, ghost, true);
    }
  } else if (drag_ == Drag::Layer) {
    const QString name = QString::fromStdString(session_->model().layer(drag_layer_).name());
    const QRect r(drag_pos_ - QPoint(0, 12), QSize(fontMetrics().horizontalAdvance(name) + 20, 24));
    p.setPen(QPen(kAccent, 1));
    p.setBrush(QColor(0xe8, 0xf0, 0xfe, 230));
    p.drawRoundedRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
    p.setPen(kText);
    p.drawText(r, Qt::AlignCenter, name);
  }
}

// ---- interaction ----------------------------------------------------------------------

bool PartitionEditor::dropAllowed(const QPoint& pos) const {
  if (!session_ || !session_->hasDocument()) return false;
  const int lane = layout().laneAt(pos);
  const Plan& plan = session_->plan();
  const CostModel& cost = session_->costModel();
  if (drag_ == Drag::Chip) {
    const DeviceChip* chip = layout().chipOf(drag_device_);
    if (!chip) return false;
    if (lane >= 0) return lane != chip->stage && PlanEdits::addDeviceToStage(plan, cost, chip->device, lane).plan;
    if (layout().tray().contains(pos)) return chip->stage >= 0 && PlanEdits::removeDevice(plan, cost, chip->device).plan;
    return false;
  }
  if (drag_ == Drag::Layer) {
    return lane >= 0 && PlanEdits::moveLayersToStage(plan, cost, {drag_layer_}, lane).plan.has_value();
  }
  return false;
}

void PartitionEditor::finishDrop(const QPoint& pos) {
  const int lane = layout().laneAt(pos);
  if (drag_ == Drag::Chip) {
    const DeviceChip* chip = layout().chipOf(drag_device_);
    if (!chip) return;
    const QString name = session_->deviceName(chip->device);
    if (lane >= 0 && lane != chip->stage) {
      session_->addDeviceToStage(name, lane);
    } else if (lane < 0 && layout().tray().contains(pos) && chip->stage >= 0) {
      session_->removeDeviceFromStage(name);
    }
  } else if (drag_ == Drag::Layer && lane >= 0) {
    const Stage& st = session_->plan().stages[lane];
    if (drag_layer_ < st.layer_begin || drag_layer_ >= st.layer_end) session_->moveLayersToStage({drag_layer_}, lane);
  }
}

void PartitionEditor::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || read_only_ || !session_ || !session_->hasDocument()) {
    QWidget::mousePressEvent(event);
    return;
  }
  const QPoint pos = event->position().toPoint();
  press_pos_ = drag_pos_ = pos;
  if (const int handle = layout().handleAt(pos); handle >= 0) {
    drag_ = Drag::Boundary;
    drag_boundary_ = handle;
    gesture_ = nextGesture();
  } else if (const int chip = layout().chipAt(pos); chip >= 0) {
    drag_ = Drag::PendingChip;
    drag_device_ = layout().chips()[chip].device;
    selected_device_ = drag_device_;
  } else if (const int layer = layout().layerAt(pos); layer >= 0) {
    drag_ = Drag::PendingLayer;
    drag_layer_ = layer;
    selected_device_ = -1;
  } else {
    selected_device_ = -1;
  }
  update();
}

void PartitionEditor::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  drag_pos_ = pos;
  switch (drag_) {
    case Drag::Boundary: {
      const Plan& plan = session_->plan();
      if (drag_boundary_ + 1 >= plan.stageCount()) break;
      const int lo = plan.stages[drag_boundary_].layer_begin + 1;
      const int hi = plan.stages[drag_boundary_ + 1].layer_end - 1;
      if (lo > hi) break;
      const int cut = std::clamp(layout().cutNearest(pos.x()), lo, hi);

      if (cut != plan.stages[drag_boundary_].layer_end) session_->moveBoundary(drag_boundary_, cut, gesture_);
      break;
    }
    case Drag::PendingChip:
    case Drag::PendingLayer:
      if ((pos - press_pos_).manhattanLength() >= QApplication::startDragDistance()) {
        drag_ = drag_ == Drag::PendingChip ? Drag::Chip : Drag::Layer;
        setCursor(Qt::ClosedHandCursor);
      }
      break;
    case Drag::Chip:
    case Drag::Layer:
      hover_lane_ = layout().laneAt(pos);
      hover_tray_ = layout().tray().contains(pos);
      update();
      break;
    case Drag::None:
      if (read_only_) break;
      if (layout().handleAt(pos) >= 0) {
        setCursor(Qt::SplitHCursor);
      } else if (layout().chipAt(pos) >= 0 || layout().layerAt(pos) >= 0) {
        setCursor(Qt::OpenHandCursor);
      } else {
        unsetCursor();
      }
      break;
  }
}

void PartitionEditor::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || drag_ == Drag::None) {
    QWidget::mouseReleaseEvent(event);
    return;
  }
  const Drag was = drag_;
  if (was == Drag::Chip || was == Drag::Layer) finishDrop(event->position().toPoint());
  drag_ = Drag::None;
  gesture_ = 0;
  hover_lane_ = -1;
  hover_tray_ = false;
  unsetCursor();
  update();
}

void PartitionEditor::keyPressEvent(QKeyEvent* event) {
  if (!read_only_ && session_ && selected_device_ >= 0 &&
      (event->key() == Qt::Key_Delete || event->key() == Qt::Key_Backspace)) {
    session_->removeDeviceFromStage(session_->deviceName(selected_device_));
    event->accept();
    return;
  }
  QWidget::keyPressEvent(event);
}

void PartitionEditor::contextMenuEvent(QContextMenuEvent* event) {
  if (read_only_ || !session_ || !session_->hasDocument()) return;
  const int lane = layout().laneAt(event->pos());
  const int chip = layout().chipAt(event->pos());
  QMenu menu(this);
  if (chip >= 0 && layout().chips()[chip].stage >= 0) {
    const DeviceChip c = layout().chips()[chip];
    const QString name = session_->deviceName(c.device);
    menu.addAction(tr("Remove %1 from stage %2").arg(name).arg(c.stage),
                   [this, name] { session_->removeDeviceFromStage(name); });
  }
  menu.addAction(tr("Add a stage"), [this] { session_->addStage(); });
  if (lane >= 0 && session_->plan().stageCount() > 1) {
    menu.addAction(tr("Remove stage %1").arg(lane), [this, lane] { session_->removeStage(lane); });
  }
  menu.exec(event->globalPos());
}

void PartitionEditor::dragEnterEvent(QDragEnterEvent* event) {
  if (!read_only_ && session_ && session_->hasDocument() &&
      (event->mimeData()->hasFormat(kDevicesMimeType) || event->mimeData()->hasFormat(kLayersMimeType))) {
    event->acceptProposedAction();
  }
}

void PartitionEditor::dragMoveEvent(QDragMoveEvent* event) {
  const QPoint pos = event->position().toPoint();
  hover_lane_ = layout().laneAt(pos);
  hover_tray_ = hover_lane_ < 0 && layout().tray().contains(pos);
  bool ok = false;
  if (const QStringList devices = devicesFromMimeData(event->mimeData()); !devices.isEmpty()) {
    ok = hover_lane_ >= 0 || hover_tray_;
  } else if (const std::vector<int> layers = layersFromMimeData(event->mimeData()); !layers.empty()) {
    ok = hover_lane_ >= 0 &&
         PlanEdits::moveLayersToStage(session_->plan(), session_->costModel(), layers, hover_lane_).plan.has_value();
  }
  if (ok) {
    event->acceptProposedAction();
  } else {
    event->ignore();
  }
  update();
}

void PartitionEditor::dragLeaveEvent(QDragLeaveEvent*) {
  hover_lane_ = -1;
  hover_tray_ = false;
  update();
}

void PartitionEditor::dropEvent(QDropEvent* event) {
  const QPoint pos = event->position().toPoint();
  const int lane = layout().laneAt(pos);
  bool done = false;
  if (const QStringList devices = devicesFromMimeData(event->mimeData()); !devices.isEmpty()) {
    for (const QString& device : devices) {
      if (lane >= 0) {
        done = session_->addDeviceToStage(device, lane) || done;
      } else if (layout().tray().contains(pos)) {
        done = session_->removeDeviceFromStage(device) || done;
      }
    }
  } else if (const std::vector<int> layers = layersFromMimeData(event->mimeData()); !layers.empty() && lane >= 0) {
    done = session_->moveLayersToStage(layers, lane);
  }
  hover_lane_ = -1;
  hover_tray_ = false;
  if (done) event->acceptProposedAction();
  qCDebug(lcPartitionEditor) << "external drop applied:" << done;
  update();
}

bool PartitionEditor::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = toolTipAt(help->pos());
    if (text.isEmpty()) {
      QToolTip::hideText();
      event->ignore();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(event);
}

QString PartitionEditor::toolTipAt(const QPoint& pos) const {
  if (!session_ || !session_->hasDocument()) return {};
  const PlanEvaluation& ev = session_->evaluation();
  if (const int h = layout().handleAt(pos); h >= 0 && !read_only_) {
    return tr("Drag to move the cut between stage %1 and stage %2.").arg(h).arg(h + 1);
  }
  if (const int c = layout().chipAt(pos); c >= 0) {
    const DeviceChip& chip = layout().chips()[c];
    const Device& d = session_->cluster().device(chip.device);
    const QString figures = tr("%1 (%2 tier): %3 GFLOP/s, memory %4 of %5, busy %6 % of the iteration.")
                                .arg(QString::fromStdString(d.name), tierLabel(d.tier))
                                .arg(d.gflops, 0, 'f', 0)
                                .arg(formatBytes(ev.memory_bytes[chip.device]),
                                     formatBytes(ev.memory_limit_bytes[chip.device]))
                                .arg(ev.busy_fraction[chip.device] * 100, 0, 'f', 0);
    QStringList lines{figures};
    if (chip.stage >= 0) {
      int samples = 0;
      for (const DeviceShare& m : session_->plan().stages[chip.stage].members) {
        if (m.device == chip.device) samples = m.samples;
      }
      // What "×N" on the chip means.
      lines << (samples > 0 ? tr("×%1: it computes %1 of the %2 samples of every micro-batch of stage %3.", nullptr, samples)
                                  .arg(samples)
                                  .arg(session_->plan().microBatchSize())
                                  .arg(chip.stage)
                            : tr("×0: it is in stage %1 but gets no samples of a micro-batch, so it computes nothing.")
                                  .arg(chip.stage));
    }
    if (session_->isUnavailable(chip.device)) {
      lines << tr("Its worker does not answer: it cannot train until it answers again.");
    } else if (ev.device_over_memory[chip.device]) {
      lines << tr("It does not have enough memory.");
    }
    return lines.join(QLatin1Char('\n'));
  }
  if (const int i = layout().layerAt(pos); i >= 0) {
    const ModelSpec& m = session_->model();
    return tr("Layer %1 “%2” (%3): forward %4 and backward %5 per sample, %6 parameters, %7 of activation per "
              "sample.")
        .arg(i)
        .arg(QString::fromStdString(m.layer(i).name()), layerKindLabel(m.layer(i)),
             formatFlops(m.cost(i).forward_flops), formatFlops(m.cost(i).backward_flops),
             formatCount(m.cost(i).parameters), formatBytes(m.cost(i).output_bytes));
  }
  if (const int lane = layout().laneAt(pos); lane >= 0 && layout().lanes()[lane].header.contains(pos)) {
    if (lane == ev.bottleneck_stage && lane < static_cast<int>(ev.stage_busy_ms.size())) {
      return tr("Stage %1 bounds the iteration: its busiest device is occupied %2 of the %3 iteration, computing "
                "or on its link.")
          .arg(lane)
          .arg(formatMs(ev.stage_busy_ms[lane]), formatMs(ev.iteration_ms));
    }
    if (lane == ev.bottleneck_stage) return tr("Stage %1 computes the slowest of all stages.").arg(lane);
  }
  if (layout().tray().contains(pos)) return tr("Devices in no stage. Drag one onto a stage to add it to its group.");
  return {};
}

}  // namespace stagecraft::gui
