#pragma once

#include <QPointer>
#include <QWidget>

class QLabel;

namespace stagecraft::gui {

class PlanSession;

/// The plan's headline figures in one compact row: predicted samples/s, iteration time,
/// bubble and micro-batches, and the first problem (red) when the plan is invalid.
class PlanSummary : public QWidget {
  Q_OBJECT

 public:
  explicit PlanSummary(QWidget* parent = nullptr);
  /// Follows `session`'s evaluated() (not owned; may be null).
  void setSession(PlanSession* session);

  QString samplesPerSecondText() const;
  QString iterationText() const;
  QString bubbleText() const;
  QString microbatchesText() const;
  /// The first validation problem, empty when the plan is valid.
  QString problemText() const;
  /// The change of samples/s made by the last edit ("+12.3 %"), empty when none.
  QString deltaText() const;

 private:
  void refresh();

  QPointer<PlanSession> session_;
  QLabel* samples_;
  QLabel* iteration_;
  QLabel* bubble_;
  QLabel* microbatches_;
  QLabel* problem_;
  QLabel* delta_;
  double last_samples_per_second_ = 0;
};

}  // namespace stagecraft::gui
