#pragma once

#include <QPointer>
#include <QString>
#include <QTimer>
#include <QWidget>

#include "editor/partition_layout.h"

namespace stagecraft::gui {

class PlanSession;

/// The plan drawn as a staircase: one lane per stage, top to bottom in pipeline order,
/// each with its device group as chips and its layers as blocks whose widths follow
/// their cost on one axis shared by all lanes; unused devices wait in a tray below.
/// A person edits by dragging: a boundary handle (one undo step per drag), a layer block
/// onto a neighbouring lane, a device chip onto another lane or the tray. Devices and
/// layers dragged from other views (kDevicesMimeType, kLayersMimeType) drop here too.
/// An invalid plan shows a red banner with validation's sentences and red outlines.
class PartitionEditor : public QWidget {
  Q_OBJECT

 public:
  explicit PartitionEditor(QWidget* parent = nullptr);

  /// Shows and edits `session`'s plan (not owned; may be null).
  void setSession(PlanSession* session);
  PlanSession* session() const { return session_; }
  /// Read-only: no drags, drops, menus or keys; tooltips stay.
  void setReadOnly(bool read_only);
  bool isReadOnly() const { return read_only_; }

  /// Geometry, in widget coordinates, for tests and for the main window's help overlay.
  QRect boundaryHandleRect(int stage) const;
  QRect deviceChipRect(const QString& device) const;
  QRect laneRect(int stage) const;
  QRect layerRect(int layer) const;
  QRect trayRect() const;
  /// The banner's text (validation problems), empty when the plan is valid.
  QString bannerText() const;
  /// The device selected by a click (Delete takes it out of its stage), or empty.
  QString selectedDevice() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dragLeaveEvent(QDragLeaveEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  bool event(QEvent* event) override;

 private:
  enum class Drag { None, PendingChip, Chip, PendingLayer, Layer, Boundary };

  void relayout();
  /// The layout for the current width (recomputed lazily when the width changed).
  const PartitionLayout& layout() const;
  PartitionLayout layoutFor(int width) const;
  QString toolTipAt(const QPoint& pos) const;
  /// Whether dropping the dragged chip / layer at `pos` would be accepted.
  bool dropAllowed(const QPoint& pos) const;
  void finishDrop(const QPoint& pos);
  void paintBanner(QPainter& p) const;
  void paintLane(QPainter& p, int stage) const;
  void paintChip(QPainter& p, const DeviceChip& chip, bool ghost = false) const;
  void paintTray(QPainter& p) const;
  void paintDragFeedback(QPainter& p) const;

  QPointer<PlanSession> session_;
  mutable PartitionLayout layout_;
  mutable int layout_width_ = -1;
  bool read_only_ = false;
  Drag drag_ = Drag::None;
  QPoint press_pos_;
  QPoint drag_pos_;
  int drag_device_ = -1;
  int drag_layer_ = -1;
  int drag_boundary_ = -1;
  int gesture_ = 0;
  int hover_lane_ = -1;
  bool hover_tray_ = false;
  int selected_device_ = -1;
};

}  // namespace stagecraft::gui
