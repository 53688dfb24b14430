#include "window/training_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>

#include "control/assignments.h"

namespace stagecraft::gui {

namespace {
const QString kGroup = QStringLiteral("training");
}

TrainingPanel::TrainingPanel(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

  planner_ = new QComboBox(this);
  for (const std::string& name : plannerNames()) {
    const auto planner = makePlanner(name);
    planner_->addItem(QString::fromStdString(name), QString::fromStdString(name));
    planner_->setItemData(planner_->count() - 1, QString::fromUtf8(planner->description().data(),
                                                                   static_cast<qsizetype>(planner->description().size())),
                          Qt::ToolTipRole);
  }
  form->addRow(tr("&Planner:"), planner_);

  batch_ = new QSpinBox(this);
  batch_->setRange(1, 65536);
  batch_->setValue(64);
  batch_->setToolTip(tr("Samples per training step, over all devices."));
  form->addRow(tr("&Batch:"), batch_);

  microbatches_ = new QSpinBox(this);
  microbatches_->setRange(0, 1024);
  microbatches_->setSpecialValueText(tr("auto"));
  microbatches_->setToolTip(tr("Micro-batches per step; auto lets the planner choose a divisor of the batch."));
  form->addRow(tr("&Micro-batches:"), microbatches_);

  schedule_ = new QComboBox(this);
  schedule_->addItem(tr("1F1B"), QStringLiteral("1f1b"));
  schedule_->addItem(tr("GPipe"), QStringLiteral("gpipe"));
  form->addRow(tr("&Schedule:"), schedule_);

  optimizer_ = new QComboBox(this);
  optimizer_->addItem(tr("SGD with momentum"), QStringLiteral("sgd"));
  optimizer_->addItem(tr("Adam"), QStringLiteral("adam"));
  form->addRow(tr("&Optimizer:"), optimizer_);

  lr_ = new QDoubleSpinBox(this);
  lr_->setDecimals(5);
  lr_->setRange(0.00001, 10.0);
  lr_->setSingleStep(0.01);
  lr_->setValue(0.02);
  form->addRow(tr("&Learning rate:"), lr_);

  steps_ = new QSpinBox(this);
  steps_->setRange(1, 10'000'000);
  steps_->setValue(200);
  form->addRow(tr("S&teps:"), steps_);

  data_ = new QComboBox(this);
  data_->addItem(tr("Synthetic (learnable)"), QStringLiteral("synthetic"));
  data_->addItem(tr("MNIST (IDX files)"), QStringLiteral("mnist"));
  data_->addItem(tr("CIFAR-10 (binary batch)"), QStringLiteral("cifar10"));
  form->addRow(tr("&Data:"), data_);
  data_path_ = new QLineEdit(this);
  data_path_->setPlaceholderText(tr("images file, as the workers see it"));
  form->addRow(tr("Data file:"), data_path_);
  labels_path_ = new QLineEdit(this);
  labels_path_->setPlaceholderText(tr("MNIST labels file"));
  form->addRow(tr("Labels file:"), labels_path_);
  seed_ = new QSpinBox(this);
  seed_->setRange(0, 1'000'000);
  seed_->setValue(1);
  form->addRow(tr("S&eed:"), seed_);
  profile_ = new QCheckBox(tr("Profile the workers before deploying"), this);
  profile_->setToolTip(tr("Each worker times every layer first, so the predicted samples/s use measured speeds."));
  profile_->setChecked(true);
  form->addRow(profile_);

  const auto update_data_fields = [this] {
    const QString kind = data_->currentData().toString();
    data_path_->setEnabled(kind != QLatin1String("synthetic"));
    labels_path_->setEnabled(kind == QLatin1String("mnist"));
  };
  connect(data_, &QComboBox::currentIndexChanged, this, update_data_fields);

  restore();
  update_data_fields();
  // Another optimizer works at another scale: its default rate for the model.
  connect(optimizer_, &QComboBox::currentIndexChanged, this, [this] {
    lr_->setValue(control::defaultLearningRate(model_.toStdString(), optimizer()));
    lr_is_default_ = true;
  });
  connect(lr_, &QDoubleSpinBox::valueChanged, this, [this] { lr_is_default_ = false; });
  for (QSpinBox* box : {batch_, microbatches_}) {
    connect(box, &QSpinBox::valueChanged, this, &TrainingPanel::requestChanged);
  }
  for (QComboBox* box : {schedule_, optimizer_}) {
    connect(box, &QComboBox::currentIndexChanged, this, &TrainingPanel::requestChanged);
  }
}

TrainingPanel::~TrainingPanel() { save(); }

QString TrainingPanel::planner() const { return planner_->currentData().toString(); }

PlanRequest TrainingPanel::request() const {
  PlanRequest request;
  request.batch_size = batch_->value();
  request.microbatches = microbatches_->value();
  request.schedule = parseSchedule(schedule_->currentData().toString().toStdString());
  return request;
}

Optimizer TrainingPanel::optimizer() const { return parseOptimizer(optimizer_->currentData().toString().toStdString()); }

control::TrainingOptions TrainingPanel::trainingOptions() const {
  control::TrainingOptions options;
  options.lr = lr_->value();
  options.data = data_->currentData().toString().toStdString();
  options.data_path = data_path_->text().trimmed().toStdString();
  options.labels_path = labels_path_->text().trimmed().toStdString();
  options.seed = static_cast<std::uint64_t>(seed_->value());
  return options;
}

std::int64_t TrainingPanel::steps() const { return steps_->value(); }

bool TrainingPanel::profileBeforeDeploy() const { return profile_->isChecked(); }

void TrainingPanel::setPlanner(const QString& name) {
  const int index = planner_->findData(name);
  if (index >= 0) planner_->setCurrentIndex(index);
}

void TrainingPanel::setRequest(const PlanRequest& request) {
  const QSignalBlocker block_batch(batch_);
  const QSignalBlocker block_micro(microbatches_);
  const QSignalBlocker block_schedule(schedule_);
  batch_->setValue(request.batch_size);
  microbatches_->setValue(request.microbatches);
  schedule_->setCurrentIndex(schedule_->findData(QString::fromUtf8(scheduleName(request.schedule).data())));
}

void TrainingPanel::save() const {
  QSettings settings;
  settings.beginGroup(kGroup);
  settings.setValue(QStringLiteral("planner"), planner());
  settings.setValue(QStringLiteral("batch"), batch_->value());
  settings.setValue(QStringLiteral("microbatches"), microbatches_->value());
  settings.setValue(QStringLiteral("schedule"), schedule_->currentData());
  settings.setValue(QStringLiteral("optimizer"), optimizer_->currentData());
  settings.setValue(QStringLiteral("lr"), lr_->value());
  settings.setValue(QStringLiteral("lrIsDefault"), lr_is_default_);
  settings.setValue(QStringLiteral("steps"), steps_->value());
  settings.setValue(QStringLiteral("data"), data_->currentData());
  settings.setValue(QStringLiteral("data_path"), data_path_->text());
  settings.setValue(QStringLiteral("labels_path"), labels_path_->text());
  settings.setValue(QStringLiteral("seed"), seed_->value());
  settings.setValue(QStringLiteral("profile"), profile_->isChecked());
}

void TrainingPanel::restore() {
  QSettings settings;
  settings.beginGroup(kGroup);
  const auto select = [](QComboBox* box, const QVariant& value) {
    const int index = box->findData(value);
    if (index >= 0) box->setCurrentIndex(index);
  };
  select(planner_, settings.value(QStringLiteral("planner"), QStringLiteral("hybrid")));
  batch_->setValue(settings.value(QStringLiteral("batch"), 64).toInt());
  microbatches_->setValue(settings.value(QStringLiteral("microbatches"), 0).toInt());
  select(schedule_, settings.value(QStringLiteral("schedule"), QStringLiteral("1f1b")));
  select(optimizer_, settings.value(QStringLiteral("optimizer"), QStringLiteral("sgd")));
  lr_->setValue(settings.value(QStringLiteral("lr"), 0.02).toDouble());
  // Settings from before per-model defaults: the rate was the user's unless it was the
  // optimizer's old default.
  const bool old_default = qFuzzyCompare(lr_->value(), optimizer() == Optimizer::Adam ? 0.001 : 0.02);
  lr_is_default_ = settings.value(QStringLiteral("lrIsDefault"), old_default).toBool();
  steps_->setValue(settings.value(QStringLiteral("steps"), 200).toInt());
  select(data_, settings.value(QStringLiteral("data"), QStringLiteral("synthetic")));
  data_path_->setText(settings.value(QStringLiteral("data_path")).toString());
  labels_path_->setText(settings.value(QStringLiteral("labels_path")).toString());
  seed_->setValue(settings.value(QStringLiteral("seed"), 1).toInt());
  profile_->setChecked(settings.value(QStringLiteral("profile"), true).toBool());
}

void TrainingPanel::setLearningRate(double lr) {
  lr_->setValue(lr);
  save();
}

void TrainingPanel::setModel(const QString& model) {
  model_ = model;
  if (!lr_is_default_) return;
  lr_->setValue(control::defaultLearningRate(model.toStdString(), optimizer()));
  lr_is_default_ = true;
}

}  // namespace stagecraft::gui
