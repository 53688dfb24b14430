#pragma once

#include <QPointer>
#include <QWidget>

namespace stagecraft::gui {

class PlanSession;

/// One horizontal bar per cluster device: peak memory of the current plan against the
/// device's limit; red past the limit, grey for a device the plan leaves unused.
class MemoryBars : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryBars(QWidget* parent = nullptr);
  /// Follows `session`'s evaluated() (not owned; may be null).
  void setSession(PlanSession* session);

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  int deviceAt(const QPoint& pos) const;

  QPointer<PlanSession> session_;
};

}  // namespace stagecraft::gui
