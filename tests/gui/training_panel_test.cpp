// TrainingPanel's data choice: synthetic, MNIST, CIFAR-10 (a batch file or the folder of the
// five) and an image folder, each with the path field it needs, reaching
// control::TrainingOptions as the worker's data kinds.
#include <QComboBox>
#include <QDir>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QStandardPaths>
#include <QTest>
#include <QToolButton>

#include "window/training_panel.h"

namespace stagecraft::gui {

class TrainingPanelTest : public QObject {
  Q_OBJECT

 private:
  static QComboBox* dataBox(TrainingPanel& panel) {
    for (auto* box : panel.findChildren<QComboBox*>()) {
      if (box->findData(QStringLiteral("synthetic")) >= 0) return box;
    }
    return nullptr;
  }
  /// The form's label in front of `field` (its row holds the field and a "…" button).
  static QString labelOf(TrainingPanel& panel, QLineEdit* field) {
    auto* form = qobject_cast<QFormLayout*>(panel.layout());
    auto* label = form ? qobject_cast<QLabel*>(form->labelForField(field->parentWidget())) : nullptr;
    return label ? label->text() : QString();
  }

 private Q_SLOTS:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void offersTheImageFolderAndCifarFolderKinds() {
    TrainingPanel panel;
    QComboBox* data = dataBox(panel);
    QVERIFY(data != nullptr);
    for (const char* kind : {"synthetic", "mnist", "cifar10", "imagefolder"}) {
      QVERIFY2(data->findData(QString::fromLatin1(kind)) >= 0, kind);
    }
    const auto fields = panel.findChildren<QLineEdit*>();
    QLineEdit* path = nullptr;
    QLineEdit* labels = nullptr;
    for (QLineEdit* field : fields) {
      if (labelOf(panel, field).startsWith(QLatin1String("Labels"))) labels = field;
      else if (labelOf(panel, field).startsWith(QLatin1String("Data"))) path = field;
    }
    QVERIFY(path != nullptr);
    QVERIFY(labels != nullptr);
    // The workers' data folder for local workers is the user's home: the field says so.
    QVERIFY(path->toolTip().contains(QDir::toNativeSeparators(QDir::homePath())));

    data->setCurrentIndex(data->findData(QStringLiteral("imagefolder")));
    QCOMPARE(labelOf(panel, path), QStringLiteral("Data folder:"));
    QVERIFY(path->isEnabled());
    QVERIFY(!labels->isEnabled());
    auto* browse = path->parentWidget()->findChild<QToolButton*>();
    QVERIFY(browse != nullptr && browse->isEnabled());
    const QString folder = QDir::homePath() + QStringLiteral("/pictures/train");
    path->setText(QStringLiteral("  ") + folder + QStringLiteral(" "));
    control::TrainingOptions options = panel.trainingOptions();
    QCOMPARE(QString::fromStdString(options.data), QStringLiteral("imagefolder"));
    QCOMPARE(QString::fromStdString(options.data_path), folder);

    data->setCurrentIndex(data->findData(QStringLiteral("cifar10")));
    QCOMPARE(labelOf(panel, path), QStringLiteral("Data file or folder:"));
    QVERIFY(!labels->isEnabled());
    options = panel.trainingOptions();
    QCOMPARE(QString::fromStdString(options.data), QStringLiteral("cifar10"));

    data->setCurrentIndex(data->findData(QStringLiteral("mnist")));
    QCOMPARE(labelOf(panel, path), QStringLiteral("Data file:"));
    QVERIFY(labels->isEnabled());

    data->setCurrentIndex(data->findData(QStringLiteral("synthetic")));
    QVERIFY(!path->isEnabled());
    QVERIFY(!browse->isEnabled());
  }

  void remembersTheImageFolder() {
    const QString folder = QDir::homePath() + QStringLiteral("/pictures/train");
    {
      TrainingPanel panel;
      QComboBox* data = dataBox(panel);
      data->setCurrentIndex(data->findData(QStringLiteral("imagefolder")));
      for (QLineEdit* field : panel.findChildren<QLineEdit*>()) {
        if (labelOf(panel, field) == QLatin1String("Data folder:")) field->setText(folder);
      }
    }
    TrainingPanel panel;
    const control::TrainingOptions options = panel.trainingOptions();
    QCOMPARE(QString::fromStdString(options.data), QStringLiteral("imagefolder"));
    QCOMPARE(QString::fromStdString(options.data_path), folder);
  }
};

}  // namespace stagecraft::gui

QTEST_MAIN(stagecraft::gui::TrainingPanelTest)
#include "training_panel_test.moc"
