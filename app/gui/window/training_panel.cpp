#include "window/training_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSettings>
#include <QSpinBox>
#include <QToolButton>
#include <algorithm>

#include "control/assignments.h"

namespace stagecraft::gui {

namespace {
const QString kGroup = QStringLiteral("training");

/// `field` with a "…" button after it, in one row of the form.
QWidget* withBrowseButton(QWidget* parent, QLineEdit* field, QToolButton* button) {
  auto* row = new QWidget(parent);
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(field, 1);
  layout->addWidget(button);
  return row;
}

/// Where a chooser opens: the folder of `current`, else the user's home (local workers
/// read data files under it).
QString startFolder(const QString& current) {
  if (current.trimmed().isEmpty()) return QDir::homePath();
  const QFileInfo info(current.trimmed());
  return info.isDir() ? info.absoluteFilePath() : info.absolutePath();
}
}  // namespace

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
  data_->addItem(tr("CIFAR-10 (batch file or folder)"), QStringLiteral("cifar10"));
  data_->addItem(tr("Image folder (a sub-folder per class)"), QStringLiteral("imagefolder"));
  data_->setItemData(data_->findData(QStringLiteral("cifar10")),
                     tr("One binary batch file, or the folder of the binary version whose data_batch_1.bin … "
                        "data_batch_5.bin are read in order."),
                     Qt::ToolTipRole);
  data_->setItemData(data_->findData(QStringLiteral("imagefolder")),
                     tr("A folder with one sub-folder of PNG or JPEG images per class (class ids in name order); "
                        "every image must have the model's input size."),
                     Qt::ToolTipRole);
  form->addRow(tr("&Data:"), data_);
  data_path_ = new QLineEdit(this);
  data_path_->setToolTip(
      tr("As the workers see it: a relative path is read from their data folder. The console's local workers "
         "read data under your home folder (%1); other workers only inside their --data-dir.")
          .arg(QDir::toNativeSeparators(QDir::homePath())));
  browse_data_ = new QToolButton(this);
  browse_data_->setText(QStringLiteral("…"));
  connect(browse_data_, &QToolButton::clicked, this, &TrainingPanel::browseData);
  QWidget* data_row = withBrowseButton(this, data_path_, browse_data_);
  form->addRow(tr("Data file:"), data_row);
  data_path_label_ = qobject_cast<QLabel*>(form->labelForField(data_row));
  if (data_path_label_) {
    // Wide enough for each kind's label, so the form does not shift when the kind changes.
    int width = 0;
    for (const QString& text : {tr("Data file:"), tr("Data folder:"), tr("Data file or folder:")}) {
      width = std::max(width, data_path_label_->fontMetrics().horizontalAdvance(text));
    }
    data_path_label_->setMinimumWidth(width);
  }
  labels_path_ = new QLineEdit(this);
  labels_path_->setPlaceholderText(tr("MNIST labels file"));
  labels_path_->setToolTip(data_path_->toolTip());
  browse_labels_ = new QToolButton(this);
  browse_labels_->setText(QStringLiteral("…"));
  browse_labels_->setToolTip(tr("Choose the MNIST labels file"));
  connect(browse_labels_, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("MNIST labels file"), startFolder(labels_path_->text()),
                                                      tr("IDX files (*-ubyte *.idx1-ubyte);;All files (*)"));
    if (!path.isEmpty()) labels_path_->setText(QDir::toNativeSeparators(path));
  });
  form->addRow(tr("Labels file:"), withBrowseButton(this, labels_path_, browse_labels_));
  seed_ = new QSpinBox(this);
  seed_->setRange(0, 1'000'000);
  seed_->setValue(1);
  form->addRow(tr("S&eed:"), seed_);
  eval_every_ = new QSpinBox(this);
  eval_every_->setRange(0, 1'000'000);
  eval_every_->setValue(10);
  eval_every_->setSpecialValueText(tr("never"));
  eval_every_->setSuffix(tr(" steps"));
  eval_every_->setToolTip(tr("Measure accuracy on held-out samples this often (a forward pass between steps); a "
                             "tenth of a data set's files is then kept out of training."));
  form->addRow(tr("E&valuate every:"), eval_every_);
  profile_ = new QCheckBox(tr("Profile the workers before deploying"), this);
  profile_->setToolTip(tr("Each worker times every layer first, so the predicted samples/s use measured speeds."));
  profile_->setChecked(true);
  form->addRow(profile_);

  connect(data_, &QComboBox::currentIndexChanged, this, &TrainingPanel::updateDataFields);

  restore();
  updateDataFields();
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

std::int64_t TrainingPanel::evalEvery() const { return eval_every_->value(); }

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
  settings.setValue(QStringLiteral("evalEvery"), eval_every_->value());
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
  eval_every_->setValue(settings.value(QStringLiteral("evalEvery"), 10).toInt());
  select(data_, settings.value(QStringLiteral("data"), QStringLiteral("synthetic")));
  data_path_->setText(settings.value(QStringLiteral("data_path")).toString());
  labels_path_->setText(settings.value(QStringLiteral("labels_path")).toString());
  seed_->setValue(settings.value(QStringLiteral("seed"), 1).toInt());
  profile_->setChecked(settings.value(QStringLiteral("profile"), true).toBool());
}

void TrainingPanel::updateDataFields() {
  const QString kind = data_->currentData().toString();
  const bool files = kind != QLatin1String("synthetic");
  const bool mnist = kind == QLatin1String("mnist");
  data_path_->setEnabled(files);
  browse_data_->setEnabled(files);
  labels_path_->setEnabled(mnist);
  browse_labels_->setEnabled(mnist);
  if (kind == QLatin1String("imagefolder")) {
    if (data_path_label_) data_path_label_->setText(tr("Data folder:"));
    data_path_->setPlaceholderText(tr("folder with a sub-folder of images per class"));
    browse_data_->setToolTip(tr("Choose the image folder"));
  } else if (kind == QLatin1String("cifar10")) {
    if (data_path_label_) data_path_label_->setText(tr("Data file or folder:"));
    data_path_->setPlaceholderText(tr("batch file, or the folder of data_batch_*.bin"));
    browse_data_->setToolTip(tr("Choose the CIFAR-10 folder or one batch file"));
  } else {
    if (data_path_label_) data_path_label_->setText(tr("Data file:"));
    data_path_->setPlaceholderText(tr("MNIST images file"));
    browse_data_->setToolTip(tr("Choose the MNIST images file"));
  }
}

void TrainingPanel::browseData() {
  const QString kind = data_->currentData().toString();
  const QString start = startFolder(data_path_->text());
  QString path;
  if (kind == QLatin1String("imagefolder")) {
    path = QFileDialog::getExistingDirectory(this, tr("Image folder (a sub-folder per class)"), start);
  } else if (kind == QLatin1String("cifar10")) {
    QMenu menu(this);
    QAction* folder = menu.addAction(tr("The &folder of the five batches…"));
    QAction* file = menu.addAction(tr("One &batch file…"));
    QAction* chosen = menu.exec(browse_data_->mapToGlobal(QPoint(0, browse_data_->height())));
    if (chosen == folder) {
      path = QFileDialog::getExistingDirectory(this, tr("CIFAR-10 folder (data_batch_1.bin … data_batch_5.bin)"), start);
    } else if (chosen == file) {
      path = QFileDialog::getOpenFileName(this, tr("CIFAR-10 batch file"), start,
                                          tr("CIFAR-10 batches (*.bin);;All files (*)"));
    }
  } else {
    path = QFileDialog::getOpenFileName(this, tr("MNIST images file"), start,
                                        tr("IDX files (*-ubyte *.idx3-ubyte);;All files (*)"));
  }
  if (!path.isEmpty()) data_path_->setText(QDir::toNativeSeparators(path));
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
