#include "window/main_window.h"
#include "window/notice_banner.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QScreen>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLoggingCategory>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>

#include "editor/memory_bars.h"
#include "editor/partition_editor.h"
#include "editor/plan_session.h"
#include "editor/plan_summary.h"
#include "io/error.h"
#include "live/beacon_discovery.h"
#include "live/live_charts.h"
#include "live/log_panel.h"
#include "live/training_controller.h"
#include "model/zoo.h"
#include "models/compare_model.h"
#include "models/device_model.h"
#include "models/layer_table_model.h"
#include "models/log_model.h"
#include "models/stage_model.h"
#include "window/training_panel.h"

Q_LOGGING_CATEGORY(lcMainWindow, "stagecraft.gui.mainwindow")

namespace stagecraft::gui {

namespace {

constexpr int kTallScreen = 900;  // px: below, the first-start layout keeps the bottom free

QTableView* makeTable(QAbstractItemModel* model, QWidget* parent) {
  auto* view = new QTableView(parent);
  view->setModel(model);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setAlternatingRowColors(true);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setStretchLastSection(true);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->setWordWrap(false);
  return view;
}

QString fromStd(const std::string& text) { return QString::fromStdString(text); }

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName(QStringLiteral("MainWindow"));
  setDockNestingEnabled(true);
  createModels();
  createCentral();
  createDocks();
  createActions();
  createMenus();
  connectController();
  restoreLayout();
  updateTitle();
  updateActions();
}

MainWindow::~MainWindow() = default;

void MainWindow::createModels() {
  session_ = new PlanSession(this);
  controller_ = new TrainingController(this);
  discovery_ = new BeaconDiscovery(this);
  devices_ = new DeviceModel(this);
  layers_ = new LayerTableModel(session_, this);
  stages_ = new StageModel(session_, this);
  compare_ = new CompareModel(session_, this);
  log_ = new LogModel(this);

  connect(session_, &PlanSession::evaluated, this, [this] {
    const PlanEvaluation& e = session_->evaluation();
    devices_->clearStages();
    for (int d = 0; d < session_->cluster().size(); ++d) {
      const int stage = d < static_cast<int>(e.stage_of_device.size()) ? e.stage_of_device[d] : -1;
      devices_->setStageOfDevice(fromStd(session_->cluster().device(d).name), stage);
    }
    if (!controller_->deployedPlan()) showPredictedTimeline();
    updateActions();
  });
  connect(session_->undoStack(), &QUndoStack::cleanChanged, this, [this](bool clean) { setWindowModified(!clean); });
  connect(session_, &PlanSession::clusterChanged, this, &MainWindow::updateTitle);
  connect(session_, &PlanSession::modelChanged, this, &MainWindow::updateTitle);
  connect(session_, &PlanSession::modelChanged, this,
          [this] { training_->setModel(QString::fromStdString(session_->model().name())); });
  // A refused edit says why where the eye is, until the next edit that is applied.
  connect(session_, &PlanSession::editRefused, this, [this](const QString& reason) { notice_->showRefusal(reason); });
  connect(session_, &PlanSession::planChanged, this, [this] { notice_->clearRefusal(); });
  // Liveness is the device list's: the editor, Auto-plan, Compare and Deploy follow it.
  session_->setDeviceSource([this](const QString& name) { return devices_->plannableDevice(name); });
  connect(session_, &PlanSession::deviceJoined, this, [this](const QString& name) {
    log_->append(tr("console"), LogModel::Level::Info, tr("%1 joins the plan's devices.").arg(name));
  });
  connect(session_, &PlanSession::autoPlanFinished, this, [this](bool ok, const QString& message) {
    log_->append(tr("planner"), ok ? LogModel::Level::Info : LogModel::Level::Warning, message);
    statusBar()->showMessage(message, 6000);
  });
  connect(session_, &PlanSession::busyChanged, this, [this](bool busy) {
    progress_->setVisible(busy);
    progress_->setRange(0, 0);
    if (busy) state_label_->setText(tr("Planning…"));
    else state_label_->setText(TrainingController::stateText(controller_->state()));
    updateActions();
  });

  connect(discovery_, &BeaconDiscovery::deviceSeen, devices_, &DeviceModel::mergeBeacon);
  connect(devices_, &DeviceModel::deviceAdded, this, [this](const QString& name) {
    log_->append(tr("discovery"), LogModel::Level::Info, tr("Device %1 is listed.").arg(name));
  });
  connect(devices_, &DeviceModel::addFailed, this, [this](const QString& address, const QString& message) {
    showProblem(tr("Cannot add the device at %1: %2").arg(address, message));
  });
  connect(devices_, &DeviceModel::deviceDiscovered, this, [this](const QString& name, const QString& address) {
    log_->append(tr("discovery"), LogModel::Level::Info, tr("Discovered %1 at %2.").arg(name, address));
  });
  connect(devices_, &DeviceModel::beaconConflict, this,
          [this](const QString& name, const QString& known, const QString& address) {
            // Once per claim: a forged beacon repeats every second.
            const QString claim = name + QLatin1Char('@') + address;
            if (beacon_conflicts_.contains(claim)) return;
            beacon_conflicts_.insert(claim);
            log_->append(tr("discovery"), LogModel::Level::Warning,
                         tr("A beacon from %1 claims to be %2, known at %3: ignored. Add the address with Ctrl+D "
                            "if the device really moved.")
                             .arg(address, name, known));
          });
  connect(devices_, &DeviceModel::statusChanged, this, [this](const QString& name, DeviceStatus status) {
    session_->setUnavailableDevices(devices_->lostDevices());
    if (status == DeviceStatus::Lost) {
      log_->append(name, LogModel::Level::Warning, tr("Device %1 stopped answering.").arg(name));
      if (!lost_devices_.contains(name)) lost_devices_ << name;
    } else if (status != DeviceStatus::Unknown && lost_devices_.removeAll(name) > 0) {
      log_->append(name, LogModel::Level::Info, tr("Device %1 answers again.").arg(name));
      offerJoin(name);
    }
  });
}

void MainWindow::createCentral() {
  central_split_ = new QSplitter(Qt::Vertical, this);
  central_split_->setObjectName(QStringLiteral("centralSplit"));

  auto* plan_area = new QWidget(central_split_);
  auto* plan_layout = new QVBoxLayout(plan_area);
  plan_layout->setContentsMargins(6, 6, 6, 0);
  notice_ = new NoticeBanner(plan_area);
  plan_layout->addWidget(notice_);
  summary_ = new PlanSummary(plan_area);
  summary_->setSession(session_);
  plan_layout->addWidget(summary_);
  auto* editor_split = new QSplitter(Qt::Horizontal, plan_area);
  editor_split->setObjectName(QStringLiteral("editorSplit"));
  editor_ = new PartitionEditor;
  editor_->setSession(session_);
  auto* scroll = new QScrollArea(editor_split);
  scroll->setWidget(editor_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  memory_ = new MemoryBars(editor_split);
  memory_->setSession(session_);
  editor_split->addWidget(scroll);
  editor_split->addWidget(memory_);
  editor_split->setStretchFactor(0, 3);
  editor_split->setStretchFactor(1, 1);
  editor_split->setSizes({750, 260});
  plan_layout->addWidget(editor_split, 1);

  charts_ = new LiveCharts(central_split_);
  central_split_->addWidget(plan_area);
  central_split_->addWidget(charts_);
  central_split_->setStretchFactor(0, 2);
  central_split_->setStretchFactor(1, 3);
  setCentralWidget(central_split_);

  state_label_ = new QLabel(TrainingController::stateText(TrainingState::Idle), this);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(220);
  progress_->setVisible(false);
  statusBar()->addPermanentWidget(state_label_);
  statusBar()->addPermanentWidget(progress_);
}

void MainWindow::createDocks() {
  const auto make_dock = [this](const QString& title, const QString& name, QWidget* content,
                                Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(content);
    addDockWidget(area, dock);
    docks_ << dock;
    return dock;
  };

  // Devices: the list the planner plans over, and where devices are dragged from.
  auto* device_panel = new QWidget(this);
  auto* device_layout = new QVBoxLayout(device_panel);
  device_layout->setContentsMargins(0, 0, 0, 0);
  device_view_ = makeTable(devices_, device_panel);
  device_view_->setDragEnabled(true);
  device_view_->setDragDropMode(QAbstractItemView::DragOnly);
  device_layout->addWidget(device_view_);
  auto* device_buttons = new QHBoxLayout;
  auto* use_devices = new QPushButton(tr("Plan over these devices"), device_panel);
  use_devices->setToolTip(tr("Plan over the devices listed here, including discovered and added ones."));
  connect(use_devices, &QPushButton::clicked, this, [this] {
    if (devices_->rowCount() == 0) return;
    session_->setCluster(devices_->cluster());
  });
  device_buttons->addWidget(use_devices);
  device_buttons->addStretch(1);
  device_layout->addLayout(device_buttons);
  auto* devices_dock = make_dock(tr("Devices"), QStringLiteral("devicesDock"), device_panel, Qt::LeftDockWidgetArea);

  // Model: the zoo picker and the layer table.
  auto* model_panel = new QWidget(this);
  auto* model_layout = new QVBoxLayout(model_panel);
  model_layout->setContentsMargins(0, 0, 0, 0);
  model_picker_ = new QComboBox(model_panel);
  for (const std::string& name : zooModelNames()) model_picker_->addItem(fromStd(name), fromStd(name));
  model_picker_->setToolTip(tr("A model from the built-in zoo, or a TorchScript file (File → Open TorchScript Model…)."));
  connect(model_picker_, &QComboBox::activated, this,
          [this](int index) { selectModel(model_picker_->itemData(index).toString()); });
  model_layout->addWidget(model_picker_);
  layer_view_ = makeTable(layers_, model_panel);
  layer_view_->setDragEnabled(true);
  layer_view_->setDragDropMode(QAbstractItemView::DragOnly);
  model_layout->addWidget(layer_view_);
  auto* model_dock = make_dock(tr("Model"), QStringLiteral("modelDock"), model_panel, Qt::LeftDockWidgetArea);
  splitDockWidget(devices_dock, model_dock, Qt::Vertical);

  // Training settings and the plan's stages.
  training_ = new TrainingPanel(this);
  connect(training_, &TrainingPanel::requestChanged, this, [this] {
    const PlanRequest request = training_->request();
    session_->setOptimizer(training_->optimizer());
    session_->setSchedule(request.schedule);
    if (request.batch_size != session_->plan().batch_size) session_->setBatchSize(request.batch_size);
    if (request.microbatches > 0 && request.microbatches != session_->plan().microbatches) {
      session_->setMicrobatches(request.microbatches);
    }
  });
  auto* training_dock = make_dock(tr("Training"), QStringLiteral("trainingDock"), training_, Qt::RightDockWidgetArea);

  stage_view_ = makeTable(stages_, this);
  stage_view_->setAcceptDrops(true);
  stage_view_->setDragDropMode(QAbstractItemView::DropOnly);
  stage_view_->setDropIndicatorShown(true);
  auto* stages_dock = make_dock(tr("Stages"), QStringLiteral("stagesDock"), stage_view_, Qt::RightDockWidgetArea);
  splitDockWidget(training_dock, stages_dock, Qt::Vertical);

  compare_view_ = makeTable(compare_, this);
  compare_view_->setSortingEnabled(false);
  connect(compare_view_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const PlannerComparison* row = compare_->row(index.row());
    if (row != nullptr && row->plan) session_->replacePlan(*row->plan, tr("Use the %1 plan").arg(row->planner));
  });
  compare_view_->setToolTip(tr("Double-click a planner to edit its plan."));
  auto* compare_dock = make_dock(tr("Compare planners"), QStringLiteral("compareDock"), compare_view_,
                                 Qt::RightDockWidgetArea);
  tabifyDockWidget(stages_dock, compare_dock);
  stages_dock->raise();

  log_panel_ = new LogPanel(log_, this);
  make_dock(tr("Log"), QStringLiteral("logDock"), log_panel_, Qt::BottomDockWidgetArea);
}

void MainWindow::createActions() {
  const auto make = [this](const QString& text, const QKeySequence& shortcut, const QString& tip,
                           auto slot) {
    auto* action = new QAction(text, this);
    if (!shortcut.isEmpty()) action->setShortcut(shortcut);
    action->setStatusTip(tip);
    action->setToolTip(shortcut.isEmpty() ? tip : tr("%1 (%2)").arg(tip, shortcut.toString(QKeySequence::NativeText)));
    connect(action, &QAction::triggered, this, slot);
    return action;
  };
  open_cluster_ = make(tr("Open &Cluster…"), QKeySequence::Open, tr("Open a cluster file"), [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open cluster"), QFileInfo(cluster_path_).path(),
                                                      tr("Cluster files (*.json);;All files (*)"));
    if (!path.isEmpty()) openCluster(path);
  });
  open_script_ = make(tr("Open &TorchScript Model…"), QKeySequence(), tr("Plan and train your own PyTorch model"),
                      [this] { openTorchScriptModel(); });
  open_plan_ = make(tr("Open &Plan…"), QKeySequence(tr("Ctrl+Shift+O")), tr("Open a plan file"), [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open plan"), QFileInfo(plan_path_).path(),
                                                      tr("Plan files (*.json);;All files (*)"));
    if (!path.isEmpty()) openPlan(path);
  });
  save_plan_ = make(tr("&Save Plan As…"), QKeySequence::Save, tr("Save the plan for the command line and the workers"),
                    [this] { savePlanAs(); });
  export_charts_ = make(tr("&Export Charts…"), QKeySequence(tr("Ctrl+E")), tr("Export the charts to PNG or PDF"),
                        [this] { charts_->exportInteractively(); });
  quit_ = make(tr("&Quit"), QKeySequence::Quit, tr("Quit Stagecraft"), [this] { close(); });

  undo_ = session_->undoStack()->createUndoAction(this, tr("&Undo"));
  undo_->setShortcut(QKeySequence::Undo);
  redo_ = session_->undoStack()->createRedoAction(this, tr("&Redo"));
  redo_->setShortcut(QKeySequence::Redo);

  start_local_ = make(tr("Start &Local Cluster"), QKeySequence(tr("Ctrl+L")),
                      tr("Run every device of the cluster as an emulated worker on this machine"),
                      [this] { startLocalCluster(); });
  add_device_ = make(tr("&Add Device…"), QKeySequence(tr("Ctrl+D")), tr("Add a worker by its address"),
                     [this] { addDeviceByAddress(); });
  auto_plan_ = make(tr("&Auto-plan"), QKeySequence(tr("Ctrl+P")), tr("Plan with the chosen planner"),
                    [this] { session_->autoPlan(training_->planner(), training_->request().microbatches); });
  compare_all_ = make(tr("&Compare Planners"), QKeySequence(tr("Ctrl+K")), tr("Run every planner side by side"),
                      [this] {
                        session_->compare();
                        for (QDockWidget* dock : docks_) {
                          if (dock->objectName() == QLatin1String("compareDock")) dock->raise();
                        }
                      });
  deploy_ = make(tr("&Deploy"), QKeySequence(tr("F7")), tr("Send each device its stage"), [this] { deploy(); });
  start_ = make(tr("&Start Training"), QKeySequence(tr("F5")), tr("Train the deployed plan"),
                [this] { startTraining(); });
  stop_ = make(tr("S&top"), QKeySequence(tr("Shift+F5")), tr("Stop at the end of the current step"),
               [this] { stopTraining(); });
  replan_ = make(tr("&Re-plan Now"), QKeySequence(tr("Ctrl+R")),
                 tr("Plan again over the devices live now, with their measured speeds"), [this] { replanNow(); });
  export_model_ = make(tr("E&xport Trained Model…"), QKeySequence(),
                       tr("Write the trained TorchScript model for torch.jit.load"), [this] { exportTrainedModel(); });

  auto* toolbar = addToolBar(tr("Main"));
  toolbar->setObjectName(QStringLiteral("mainToolBar"));
  toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  toolbar->addActions({open_cluster_, start_local_});
  toolbar->addSeparator();
  toolbar->addActions({undo_, redo_, auto_plan_, compare_all_});
  toolbar->addSeparator();
  toolbar->addActions({deploy_, start_, stop_, replan_});
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(open_cluster_);
  file->addAction(open_script_);
  file->addAction(open_plan_);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addAction(save_plan_);
  file->addSeparator();
  file->addAction(export_charts_);
  file->addSeparator();
  file->addAction(quit_);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(undo_);
  edit->addAction(redo_);
  edit->addSeparator();
  edit->addAction(tr("Add &Stage"), this, [this] { session_->addStage(); });

  QMenu* cluster = menuBar()->addMenu(tr("&Cluster"));
  cluster->addAction(start_local_);
  cluster->addAction(tr("Stop Local Cluster"), this, [this] {
    const auto local = controller_->localCluster();
    if (!controller_->stopLocalCluster() || !local) return;
    // Stopped on purpose: not lost, nothing to offer when they are gone.
    QStringList names;
    for (const Device& device : local->devices()) names << QString::fromStdString(device.name);
    devices_->markStopped(names);
    stopping_local_ = names;  // marked again when they are down
  });
  cluster->addAction(add_device_);

  QMenu* plan = menuBar()->addMenu(tr("&Plan"));
  plan->addAction(auto_plan_);
  plan->addAction(compare_all_);

  QMenu* training = menuBar()->addMenu(tr("&Training"));
  training->addActions({deploy_, start_, stop_});
  training->addSeparator();
  training->addAction(replan_);
  training->addAction(export_model_);

  view_menu_ = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* dock : docks_) view_menu_->addAction(dock->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Stagecraft"), this, [this] { about(); });
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
  rebuildRecentMenu();
}

void MainWindow::addDeviceByAddress() {
  bool ok = false;
  const QString address = QInputDialog::getText(this, tr("Add device"), tr("Worker address (host:port):"),
                                                QLineEdit::Normal, QStringLiteral("127.0.0.1:50051"), &ok);
  if (!ok || address.trimmed().isEmpty()) return;
  QString error;
  if (!devices_->addByAddress(address.trimmed(), &error) && !error.isEmpty()) {
    // As an address that does not answer: a problem to fix, not a modal to dismiss.
    showProblem(tr("Cannot add the device at %1: %2").arg(address.trimmed(), error));
  }
}

void MainWindow::about() {
  QMessageBox::about(this, tr("About Stagecraft"),
                     tr("<h3>Stagecraft %1</h3><p>Plans, runs and watches hybrid-pipeline training on "
                        "heterogeneous edge devices: layers cut into stages, each stage on a group of devices, "
                        "the stages in a 1F1B pipeline.</p>")
                         .arg(QApplication::applicationVersion()));
}

void MainWindow::updateTitle() {
  if (!session_->hasDocument()) {
    setWindowTitle(tr("Stagecraft"));
    return;
  }
  // [*]: Qt marks a plan with unsaved edits there.
  setWindowTitle(tr("%1 on %2").arg(fromStd(session_->model().name()), fromStd(session_->cluster().name())) +
                 QStringLiteral("[*]"));
}

void MainWindow::showProblem(const QString& message) {
  log_->append(tr("console"), LogModel::Level::Warning, message);
  notice_->showRefusal(message);
}

void MainWindow::showError(const QString& title, const QString& message) {
  log_->append(tr("console"), LogModel::Level::Error, message);
  QMessageBox::warning(this, title, message);
}

void MainWindow::restoreLayout() {
  QSettings settings;
  if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
    // First start: most of the screen, the editor and charts in the middle getting the room.
    const QRect screen = QGuiApplication::primaryScreen() != nullptr
                             ? QGuiApplication::primaryScreen()->availableGeometry()
                             : QRect(0, 0, 1600, 1000);
    resize(std::min(screen.width(), 1920), std::min(screen.height(), 1200));
    move(screen.topLeft());
  }
  if (!restoreState(settings.value(QStringLiteral("window/state")).toByteArray())) {
    QList<QDockWidget*> left, right;
    QDockWidget* log_dock = nullptr;
    QDockWidget* compare_dock = nullptr;
    for (QDockWidget* dock : docks_) {
      const Qt::DockWidgetArea area = dockWidgetArea(dock);
      if (area == Qt::LeftDockWidgetArea) left << dock;
      if (area == Qt::RightDockWidgetArea) right << dock;
      if (area == Qt::BottomDockWidgetArea) log_dock = dock;
      if (dock->objectName() == QLatin1String("compareDock")) compare_dock = dock;
    }
    // On a laptop screen the log joins the stages and the planners' tabs on the right, so
    // the editor and the charts keep the height.
    if (height() < kTallScreen && log_dock != nullptr && compare_dock != nullptr) {
      tabifyDockWidget(compare_dock, log_dock);
      log_dock = nullptr;
      for (QDockWidget* dock : docks_) {
        if (dock->objectName() == QLatin1String("stagesDock")) dock->raise();
      }
    }
    if (!left.isEmpty()) resizeDocks({left.first()}, {width() / 5}, Qt::Horizontal);
    if (!right.isEmpty()) resizeDocks({right.first()}, {width() / 5}, Qt::Horizontal);
    if (log_dock != nullptr) resizeDocks({log_dock}, {height() / 7}, Qt::Vertical);
  }
  if (!central_split_->restoreState(settings.value(QStringLiteral("window/centralSplit")).toByteArray())) {
    central_split_->setSizes({height() / 2, height() / 2});
  }
}

void MainWindow::saveLayout() const {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("window/centralSplit"), central_split_->saveState());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!confirmUnsavedPlan()) {
    event->ignore();
    return;
  }
  saveLayout();
  QMainWindow::closeEvent(event);
}

}  // namespace stagecraft::gui
