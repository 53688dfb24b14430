#pragma once

#include <QPointer>
#include <QWidget>

class QLabel;

namespace stagecraft::gui {

class PlanSession;

/// The plan's headline figures in one compact row: predicted samples/s (saying what it is
/// predicted from, and next to it what training measures), iteration time, bubble and
/// micro-batches, and the first problem (red) when the plan is invalid.
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
  /// Where the predicted figures come from: "from specs", "profiled", "calibrated from training".
  QString sourceText() const;
  /// Training measures `samples_per_second` of the plan shown (0: not training it): shown
  /// next to the prediction with their ratio.
  void setMeasured(double samples_per_second);
  QString measuredText() const;

 private:
  void refresh();
  void showMeasured();

  QPointer<PlanSession> session_;
  QLabel* samples_;
  QLabel* samples_caption_ = nullptr;
  QLabel* measured_ = nullptr;
  double measured_sps_ = 0;
  QLabel* iteration_;
  QLabel* bubble_;
  QLabel* microbatches_;
  QLabel* problem_;
  QLabel* delta_;
  double last_samples_per_second_ = 0;
};

}  // namespace stagecraft::gui
