// LayerTableModel: one row per layer with formatted costs, drags layers as the console's
// MIME type, and a drag dropped on the StageModel moves the boundary.
#include <QAbstractItemModelTester>
#include <QMimeData>
#include <QTest>
#include <memory>

#include "editor/plan_edits.h"
#include "editor/plan_session.h"
#include "model/zoo.h"
#include "models/layer_table_model.h"
#include "models/mime_types.h"
#include "models/stage_model.h"

using namespace stagecraft;
using namespace stagecraft::gui;

class LayerTableModelTest : public QObject {
  Q_OBJECT

 private:
  void open(PlanSession& session, const char* model) {
    session.setDocument(ModelSpec::fromProto(zooModel(model)),
                        Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/jetson-edge.json"));
  }

 private Q_SLOTS:
  void passesTheModelTesterThroughEdits() {
    PlanSession session;
    LayerTableModel model(&session);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    open(session, "vgg11");
    QCOMPARE(model.rowCount(), session.model().layerCount());
    QVERIFY(session.moveBoundary(0, session.plan().stages[0].layer_end + 1));
    open(session, "mlp");
    QCOMPARE(model.rowCount(), 8);
  }

  void showsCostsInUnitsAndRawValuesForSorting() {
    PlanSession session;
    open(session, "mlp");
    LayerTableModel model(&session);
    const QModelIndex flops = model.index(1, LayerTableModel::ForwardFlops);
    // fc2: 2048 x 2048 multiply-adds = 8.4 MFLOP per sample.
    QVERIFY2(model.data(flops).toString().endsWith(QStringLiteral("MFLOP")), qPrintable(model.data(flops).toString()));
    QCOMPARE(model.data(flops, LayerTableModel::kRawRole).toDouble(), session.model().cost(1).forward_flops);
    QVERIFY(model.data(model.index(1, LayerTableModel::Parameters)).toString().endsWith(QStringLiteral(" M")));
    QCOMPARE(model.data(model.index(1, LayerTableModel::Activation)).toString(), QStringLiteral("8.0 KiB"));
    QCOMPARE(model.data(model.index(1, LayerTableModel::Name)).toString(), QStringLiteral("fc2"));
    QCOMPARE(model.data(model.index(1, LayerTableModel::OutputShape)).toString(), QStringLiteral("2048"));
    QVERIFY(!model.data(model.index(1, LayerTableModel::Name), Qt::ToolTipRole).toString().isEmpty());
    QCOMPARE(model.data(model.index(0, LayerTableModel::StageColumn), Qt::EditRole).toInt(), 0);
  }

  void layersDragOntoTheNeighbouringStageOnly() {
    PlanSession session;
    open(session, "vgg11");
    QVERIFY(session.plan().stageCount() >= 2);
    LayerTableModel layers(&session);
    StageModel stages(&session);
    QCOMPARE(layers.supportedDragActions(), Qt::MoveAction);
    QVERIFY(layers.flags(layers.index(0, 0)) & Qt::ItemIsDragEnabled);

    // The first layer of stage 1 dropped on stage 0 joins it.
    const int first = session.plan().stages[1].layer_begin;
    if (session.plan().stages[1].layer_end - first < 2) QVERIFY(session.moveBoundary(0, first - 1));
    const int layer = session.plan().stages[1].layer_begin;
    std::unique_ptr<QMimeData> data(layers.mimeData({layers.index(layer, 0), layers.index(layer, 3)}));
    QVERIFY(data);
    QVERIFY(data->hasFormat(kLayersMimeType));
    QCOMPARE(layersFromMimeData(data.get()), std::vector<int>{layer});
    QVERIFY(stages.canDropMimeData(data.get(), Qt::MoveAction, -1, 0, stages.index(0, 0)));
    QVERIFY(stages.dropMimeData(data.get(), Qt::MoveAction, -1, 0, stages.index(0, 0)));
    QCOMPARE(session.plan().stages[0].layer_end, layer + 1);
    QCOMPARE(layers.data(layers.index(layer, LayerTableModel::StageColumn), Qt::EditRole).toInt(), 0);

    // Layer 0 dropped on a stage that does not border stage 0 is refused.
    while (session.plan().stageCount() < 3) QVERIFY(session.addStage());
    const Plan before = session.plan();
    std::unique_ptr<QMimeData> far(layers.mimeData({layers.index(0, 0)}));
    QVERIFY(!stages.canDropMimeData(far.get(), Qt::MoveAction, -1, 0, stages.index(2, 0)));
    QVERIFY(!stages.dropMimeData(far.get(), Qt::MoveAction, -1, 0, stages.index(2, 0)));
    QVERIFY(samePlan(session.plan(), before));
  }
};

QTEST_MAIN(LayerTableModelTest)
#include "layer_table_model_test.moc"
