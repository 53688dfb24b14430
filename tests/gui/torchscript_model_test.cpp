// A TorchScript model opened through the main window: with its sample shape remembered
// (QSettings torchscript/shape/<path>), --model FILE.pt imports it through
// stagecraft-worker's shape probe, lists it in the model picker as "<name> (TorchScript)",
// the layer table names each child by its PyTorch class with its shape and FLOPs, and the
// editor places stages. Needs STAGECRAFT_WORKER and a /usr/bin/python3 that imports torch
// (it writes the .pt); skips without them.
#include <QComboBox>
#include <QFileInfo>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "editor/plan_session.h"
#include "models/layer_table_model.h"
#include "window/main_window.h"

namespace stagecraft::gui {

namespace {

const char* const kMakeModel = R"(
import sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(4 * 4 * 4, 16), nn.ReLU(), nn.Linear(16, 10))
torch.jit.script(model).save(sys.argv[1])
)";

}  // namespace

class TorchScriptModelTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void opensATorchScriptFileIntoThePickerAndTheLayerTable() {
    if (qEnvironmentVariableIsEmpty("STAGECRAFT_WORKER")) QSKIP("needs STAGECRAFT_WORKER (set by CTest)");
    if (!QFileInfo(QStringLiteral("/usr/bin/python3")).isExecutable()) QSKIP("needs /usr/bin/python3");
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const QString path = folder.filePath(QStringLiteral("tiny_net.pt"));
    QProcess python;
    python.start(QStringLiteral("/usr/bin/python3"), {QStringLiteral("-c"), QString::fromUtf8(kMakeModel), path});
    QVERIFY(python.waitForFinished(120'000));
    if (python.exitStatus() != QProcess::NormalExit || python.exitCode() != 0) {
      QSKIP(qPrintable(QStringLiteral("/usr/bin/python3 cannot write a TorchScript model (no torch?): ") +
                       QString::fromLocal8Bit(python.readAllStandardError()).trimmed().section(QLatin1Char('\n'), -1)));
    }
    QVERIFY(QFileInfo::exists(path));
    // The shape File → Open TorchScript Model… would have asked for and remembered.
    QSettings().setValue(QStringLiteral("torchscript/shape/") + path, QStringLiteral("1,8,8"));

    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), path, {});
    PlanSession* session = window.session();
    QVERIFY(session->hasDocument());
    QVERIFY(session->model().proto().has_script());
    QCOMPARE(QString::fromStdString(session->model().name()), QStringLiteral("tiny_net"));
    QCOMPARE(session->model().layerCount(), 7);
    QVERIFY(session->evaluation().valid);
    QVERIFY(session->plan().stageCount() >= 1);

    // The picker lists the file by its name and selects it; the path is its data.
    QComboBox* picker = nullptr;
    for (auto* box : window.findChildren<QComboBox*>()) {
      if (box->findData(path) >= 0) picker = box;
    }
    QVERIFY(picker != nullptr);
    QCOMPARE(picker->currentData().toString(), path);
    QCOMPARE(picker->currentText(), QStringLiteral("tiny_net (TorchScript)"));

    // The layer table: PyTorch class names, the probe's shapes, FLOPs for the convolution.
    auto* layers = window.findChild<LayerTableModel*>();
    QVERIFY(layers != nullptr);
    QCOMPARE(layers->rowCount(), 7);
    QStringList kinds;
    for (int row = 0; row < layers->rowCount(); ++row) {
      kinds << layers->index(row, LayerTableModel::Kind).data().toString();
    }
    QCOMPARE(kinds, (QStringList{QStringLiteral("Conv2d"), QStringLiteral("ReLU"), QStringLiteral("MaxPool2d"),
                                 QStringLiteral("Flatten"), QStringLiteral("Linear"), QStringLiteral("ReLU"),
                                 QStringLiteral("Linear")}));
    const QString conv_shape = layers->index(0, LayerTableModel::OutputShape).data().toString();
    QVERIFY2(conv_shape.contains(QLatin1Char('4')) && conv_shape.contains(QLatin1Char('8')), qPrintable(conv_shape));
    QVERIFY(layers->index(0, LayerTableModel::ForwardFlops).data(LayerTableModel::kRawRole).toDouble() > 0);
    QCOMPARE(layers->index(6, LayerTableModel::Parameters).data(LayerTableModel::kRawRole).toLongLong(), 16 * 10 + 10);
  }

  void aTorchScriptFileWithoutItsShapeFallsBackToTheDefaultModel() {
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const QString path = folder.filePath(QStringLiteral("unknown.pt"));
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), path, {});
    QVERIFY(window.session()->hasDocument());
    QCOMPARE(QString::fromStdString(window.session()->model().name()), QStringLiteral("vgg11"));
  }
};

}  // namespace stagecraft::gui

QTEST_MAIN(stagecraft::gui::TorchScriptModelTest)
#include "torchscript_model_test.moc"
