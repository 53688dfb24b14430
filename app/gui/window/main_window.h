#pragma once

#include <QMainWindow>
#include <QSet>
#include <QStringList>
#include <deque>
#include <optional>
#include <vector>

#include "cluster/cluster.h"
#include "sim/simulator.h"

class QAction;
class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QSplitter;
class QTableView;

namespace stagecraft::gui {

class BeaconDiscovery;
class ChartFeed;
class CompareModel;
class DeviceModel;
class LayerTableModel;
class LiveCharts;
class LogModel;
class LogPanel;
class MemoryBars;
class NoticeBanner;
class PartitionEditor;
class PlanSession;
class PlanSummary;
class StageModel;
class TrainingController;
class TrainingPanel;

/// The console's main window: devices and the model on the left, the partition editor
/// over the live charts in the middle, training settings, stages and the planner
/// comparison on the right, the log below. Every action goes through PlanSession (the
/// plan) or TrainingController (the workers); the window only wires them.
class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// What the command line asked for; empty strings fall back to the last session's
  /// files (QSettings) and then to the shipped defaults.
  void openStartup(const QString& cluster, const QString& model, const QString& plan);

  /// Lists workers announcing themselves on UDP `port` (their --beacon-port).
  void startDiscovery(quint16 port);

  /// Calls to workers carry the cluster token in `path` (empty: the file the last session
  /// used, if any), remembered for the next session. False, with the reason in the log,
  /// when the file cannot be used (missing, not private).
  bool useTokenFile(const QString& path);
  /// Calls to workers use mutual TLS with this certificate, key and cluster CA (all empty:
  /// the files the last session used, if any). Logs and returns false when they cannot be
  /// used; calls then stay as they were.
  bool useTls(const QString& cert, const QString& key, const QString& ca);

  PlanSession* session() const { return session_; }
  TrainingController* controller() const { return controller_; }
  LiveCharts* charts() const { return charts_; }
  DeviceModel* devices() const { return devices_; }

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void createModels();
  void createCentral();
  void createDocks();
  void createActions();
  void createMenus();
  void connectController();
  void restoreLayout();
  void saveLayout() const;

  bool openCluster(const QString& name_or_path);
  bool openPlan(const QString& path);
  void selectModel(const QString& name_or_path);
  /// Asks for a TorchScript file and its sample shape, imports it through the worker's shape
  /// probe and makes it the model (listed in the model picker from then on).
  void openTorchScriptModel();
  /// Asks where to write the deployed TorchScript model with the weights trained so far.
  void exportTrainedModel();
  /// The model picker's entry for a TorchScript file, added when missing.
  void listTorchScriptModel(const QString& path, const QString& name);
  void savePlanAs();
  void addDeviceByAddress();
  void startLocalCluster();
  void deploy();
  void startTraining();
  void stopTraining();
  void replanNow();
  void about();

  /// The session's cluster with the device list's worker addresses.
  Cluster clusterWithAddresses() const;
  void showPredictedTimeline();
  /// A device that answers again (or was started) while training and is not in the running
  /// plan: offered for a re-plan in the notice banner.
  void offerJoin(const QString& name);
  /// The editor shows the plan the run trains (so what training measures is its figure).
  bool showsDeployedPlan() const;
  /// The editor's cluster is the run's, device for device (rows line up).
  bool editorShowsDeployedDevices() const;
  static QString durationText(double seconds);
  /// A problem the user can fix (a refused address, a refused edit): the log and the notice
  /// banner, no modal.
  void showProblem(const QString& message);
  /// Before quitting: false when the user keeps the window to save plan edits.
  bool confirmUnsavedPlan();

  void addRecent(const QString& key, const QString& path);
  void rebuildRecentMenu();
  void updateTitle();
  void updateActions();
  void showError(const QString& title, const QString& message);

  // Documents and engines.
  PlanSession* session_ = nullptr;
  TrainingController* controller_ = nullptr;
  BeaconDiscovery* discovery_ = nullptr;
  ChartFeed* chart_feed_ = nullptr;  ///< controller -> live charts

  // Item models.
  DeviceModel* devices_ = nullptr;
  LayerTableModel* layers_ = nullptr;
  StageModel* stages_ = nullptr;
  CompareModel* compare_ = nullptr;
  LogModel* log_ = nullptr;

  // Widgets.
  PartitionEditor* editor_ = nullptr;
  MemoryBars* memory_ = nullptr;
  PlanSummary* summary_ = nullptr;
  NoticeBanner* notice_ = nullptr;  ///< stragglers, devices that come back
  LiveCharts* charts_ = nullptr;
  TrainingPanel* training_ = nullptr;
  LogPanel* log_panel_ = nullptr;
  QComboBox* model_picker_ = nullptr;
  QTableView* device_view_ = nullptr;
  QTableView* layer_view_ = nullptr;
  QTableView* stage_view_ = nullptr;
  QTableView* compare_view_ = nullptr;
  QSplitter* central_split_ = nullptr;
  QLabel* state_label_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QList<QDockWidget*> docks_;
  QStringList lost_devices_;  ///< lost while training; offered again when they answer
  QSet<QString> beacon_conflicts_;  // claims already logged (name@address)
  QStringList stopping_local_;  ///< local workers the user stopped, until they are down
  struct RecentStep {
    qint64 step = 0;
    double seconds = 0;
    double samples_per_second = 0;
  };
  std::deque<RecentStep> recent_steps_;  ///< the last steps of the deployment, for rates

  // Actions.
  QAction* open_cluster_ = nullptr;
  QAction* open_plan_ = nullptr;
  QAction* open_script_ = nullptr;
  QAction* export_model_ = nullptr;
  QAction* save_plan_ = nullptr;
  QAction* export_charts_ = nullptr;
  QAction* quit_ = nullptr;
  QAction* undo_ = nullptr;
  QAction* redo_ = nullptr;
  QAction* start_local_ = nullptr;
  QAction* add_device_ = nullptr;
  QAction* auto_plan_ = nullptr;
  QAction* compare_all_ = nullptr;
  QAction* deploy_ = nullptr;
  QAction* start_ = nullptr;
  QAction* stop_ = nullptr;
  QAction* replan_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QMenu* view_menu_ = nullptr;

  QString cluster_path_;
  QString plan_path_;
  QString pending_model_;  ///< the model to open with the first cluster

};

}  // namespace stagecraft::gui
