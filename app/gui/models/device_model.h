#pragma once

#include <QAbstractTableModel>
#include <QIcon>
#include <QString>
#include <QStringList>
#include <array>
#include <chrono>
#include <optional>
#include <vector>

#include "cluster/cluster.h"
#include "control/coordinator.h"
#include "stagecraft/v1/cluster.pb.h"
#include "stagecraft/v1/discovery.pb.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::gui {

class DeviceMonitor;

/// What the console knows of a device's worker right now.
enum class DeviceStatus {
  Unknown = 0,  ///< not asked yet, or it never answered
  Reachable,    ///< answers and holds no job
  Busy,         ///< answers and has a job deployed or is training
  Lost,         ///< answered before, then missed several heartbeats in a row
};

/// The devices the console can plan for and train on, one row each: the cluster file's,
/// workers added by address, workers heard on the LAN, and the local emulated cluster's,
/// merged by address or name. A DeviceMonitor Describes every device with an address every
/// ~2 s off the GUI thread and keeps the status column live. Rows drag as kDevicesMimeType
/// (device names), which the partition editor accepts.
class DeviceModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { NameColumn = 0, TierColumn, SpeedColumn, MemoryColumn, AddressColumn, StatusColumn, StageColumn, ColumnCount };
  enum Role {
    NameRole = Qt::UserRole + 1,  ///< QString: the device's name (any column)
    StatusRole,                   ///< int: its DeviceStatus (any column)
    StageRole,                    ///< int: its stage in the plan, -1 when it has none
  };

  explicit DeviceModel(QObject* parent = nullptr);
  ~DeviceModel() override;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QModelIndexList& indexes) const override;
  Qt::DropActions supportedDragActions() const override;

  /// Replaces every row by the devices of `cluster` (status unknown) and keeps its links
  /// and name for cluster().
  void loadCluster(const Cluster& cluster);
  /// The local emulated cluster's workers: each device of `cluster` (with its local
  /// worker's address) updates the row of the same name, or is added.
  void applyLocalCluster(const Cluster& cluster);
  /// Describes the worker at `address` ("host:port") off the GUI thread and adds it (or
  /// updates the row with its address or name): deviceAdded() or addFailed(). False, with
  /// the reason in `error`, for an address that is not host:port.
  bool addByAddress(const QString& address, QString* error = nullptr);
  /// A worker that answered Describe: updates the row with `address` or the same name,
  /// else adds a row, and marks it reachable (or busy). Returns the row.
  int mergeWorker(const QString& address, const v1::WorkerInfo& info);
  /// A worker's beacon (BeaconDiscovery::deviceSeen), which anyone on the LAN can send:
  /// a hint. It updates the row with its address, gives an address to a listed device
  /// that has none, or adds a row, but never marks a worker reachable (only its Describe
  /// answer does) and never moves a device that has an address elsewhere (that is
  /// beaconConflict, and -1). Returns the row.
  int mergeBeacon(const v1::Beacon& beacon);
  /// Removes every row.
  void clear();

  /// The stage the plan gives device `name` (-1: none); the main window sets it.
  void setStageOfDevice(const QString& name, int stage);
  void clearStages();
  /// A speed measured in training (e.g. a calibrated cluster's), shown and planned with
  /// instead of the file's or Describe's.
  void setMeasuredGflops(const QString& name, double gflops);

  /// The devices as a core Cluster for planning: the loaded file's name and links (those
  /// between devices still listed), each device with its measured speed where known.
  /// Throws Error when there is no device, or naming a device whose speed or memory is
  /// still unknown.
  Cluster cluster() const;
  /// Names of the devices whose workers answer now (reachable or busy), in row order.
  QStringList liveDevices() const;
  /// Names of the devices whose workers stopped answering (Lost), in row order.
  QStringList lostDevices() const;
  /// Device `name` as a cluster file's entry, when it can be planned on now: its speed and
  /// memory are known and its worker answers. nullopt otherwise.
  std::optional<v1::Device> plannableDevice(const QString& name) const;
  /// The console stopped these devices' workers on purpose: "stopped", not lost (no
  /// warning, nothing offered), until they answer again.
  void markStopped(const QStringList& names);
  DeviceStatus status(const QString& name) const;
  /// The training run lost this device: Lost at once, with `reason` as its error, until
  /// it answers a probe again.
  void markLost(const QString& name, const QString& reason);
  /// The row of device `name`, or -1.
  int rowOf(const QString& name) const;
  QString nameAt(int row) const;

  /// Heartbeat rounds (Describe on every device with an address): on by default, every
  /// `interval`; a device that answered before is Lost after `misses` rounds in a row
  /// without an answer.
  void setMonitoring(bool enabled);
  /// The cluster token the monitor's Describe calls carry (empty: none).
  void setToken(const std::string& token);
  void setProbeInterval(std::chrono::milliseconds interval);
  void setLostAfterMisses(int misses);
  /// One round now.
  void probeNow();

 Q_SIGNALS:
  /// addByAddress() found a worker: its row is `name`.
  void deviceAdded(const QString& name);
  /// addByAddress() could not: `message` is one sentence naming the address.
  void addFailed(const QString& address, const QString& message);
  /// A worker heard on the beacon that the list did not have: its new row, highlighted
  /// for a few seconds.
  void deviceDiscovered(const QString& name, const QString& address);
  /// A beacon from `address` named a device the list knows at `known_address`: ignored.
  void beaconConflict(const QString& name, const QString& known_address, const QString& address);
  /// A device's status changed.
  void statusChanged(const QString& name, stagecraft::gui::DeviceStatus status);
  /// A round of probes was applied to the rows (whether or not any row changed).
  void probeRoundApplied();

 private:
  struct Row {
    Device device;  // the file's values, or the worker's own
    double measured_gflops = 0;
    double telemetry_gflops = 0;
    DeviceStatus status = DeviceStatus::Unknown;
    int misses = 0;
    int stage = -1;
    QString worker_state;
    QString job;
    QString version;
    QString error;
    int cores = 0;
    bool insecure = false;  // started with --insecure
    bool fresh = false;     // just discovered: highlighted for a moment
    bool heard_only = false;  // known from beacons alone: no Describe answer confirmed it yet
    bool stopped = false;   // stopped from this console (markStopped) and not heard since
    std::chrono::steady_clock::time_point stopped_at{};
  };

  double speedOf(const Row& row) const;
  QString statusText(DeviceStatus status) const;
  QString statusText(const Row& row) const;
  v1::Device toProto(const Row& row) const;
  QString tooltip(const Row& row) const;
  QString statusTooltip(const Row& row) const;
  void setStatus(int row, DeviceStatus status);
  void emitRowChanged(int row);  // announced with the others of this event-loop pass
  void flushRowChanges();
  static bool sameDisplay(const Row& a, const Row& b);
  void applyInfo(Row& row, const v1::WorkerInfo& info);
  void updateTargets();
  void onProbed(const std::vector<control::WorkerProbe>& probes);
  void onDescribed(const QString& address, const control::WorkerProbe& probe);
  /// mergeWorker(), with `verified` false for what only a beacon says.
  int merge(const QString& address, const v1::WorkerInfo& info, bool verified);

  std::vector<Row> rows_;
  std::string token_;
  v1::Cluster file_;  // name, description, links, default latency of the loaded cluster
  DeviceMonitor* monitor_ = nullptr;
  int lost_after_misses_ = 3;
  int changed_first_ = -1, changed_last_ = -1;  // rows emitRowChanged has not announced yet
  static constexpr int kInsecureIcon = 4;  // after the four statuses' icons
  const QIcon& cachedIcon(int which) const;
  mutable std::array<QIcon, 5> icons_;
};

}  // namespace stagecraft::gui
