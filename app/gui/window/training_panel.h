#pragma once

#include <QWidget>
#include <cstdint>

#include "control/assignments.h"
#include "planner/planner.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QToolButton;

namespace stagecraft::gui {

/// The "Training" form: how to plan (planner, batch, micro-batches, schedule, optimizer)
/// and how to train (steps, learning rate, data: synthetic, MNIST, CIFAR-10 or an image
/// folder, with a chooser for its path). Values persist in QSettings.
class TrainingPanel : public QWidget {
  Q_OBJECT

 public:
  explicit TrainingPanel(QWidget* parent = nullptr);
  ~TrainingPanel() override;

  QString planner() const;
  /// Batch, micro-batches (0 = let the planner choose) and schedule.
  PlanRequest request() const;
  Optimizer optimizer() const;
  /// Learning rate, data set and seed, as the coordinator takes them.
  control::TrainingOptions trainingOptions() const;
  std::int64_t steps() const;
  /// Steps between evaluations on held-out samples; 0: never.
  std::int64_t evalEvery() const;
  /// Time every layer on the workers before deploying, so predictions use measured speeds.
  bool profileBeforeDeploy() const;

  void setPlanner(const QString& name);
  void setLearningRate(double lr);
  /// The model trained: its optimizer's default learning rate (control::defaultLearningRate)
  /// when the user has not set one of their own.
  void setModel(const QString& model);
  void setRequest(const PlanRequest& request);

 Q_SIGNALS:
  /// Batch, micro-batches, schedule or optimizer changed: the plan must follow.
  void requestChanged();

 private:
  void save() const;
  void restore();
  /// The path fields for the data kind chosen: enabled or not, label, hint, chooser.
  void updateDataFields();
  /// The data path's chooser: a folder for an image folder, a folder or a batch file for
  /// CIFAR-10, a file for MNIST.
  void browseData();

  QComboBox* planner_ = nullptr;
  QSpinBox* batch_ = nullptr;
  QSpinBox* microbatches_ = nullptr;
  QComboBox* schedule_ = nullptr;
  QComboBox* optimizer_ = nullptr;
  QDoubleSpinBox* lr_ = nullptr;
  QString model_;
  bool lr_is_default_ = true;  // the rate shown is the default for the model and optimizer
  QSpinBox* steps_ = nullptr;
  QComboBox* data_ = nullptr;
  QLineEdit* data_path_ = nullptr;
  QLabel* data_path_label_ = nullptr;  // "Data file:" or "Data folder:", by the kind
  QToolButton* browse_data_ = nullptr;
  QLineEdit* labels_path_ = nullptr;
  QToolButton* browse_labels_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QSpinBox* eval_every_ = nullptr;
  QCheckBox* profile_ = nullptr;
};

}  // namespace stagecraft::gui
