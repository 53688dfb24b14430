#include "models/device_model.h"

#include <QLoggingCategory>
#include <QMimeData>
#include <QTimer>
#include <algorithm>
#include <set>

#include "control/net.h"
#include "io/error.h"
#include "live/device_monitor.h"
#include "models/mime_types.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcDeviceModel, "stagecraft.gui.devicemodel")

namespace {

/// Bandwidth assumed for a worker known only by Describe or a beacon (they do not say).
constexpr double kDefaultBandwidthMbps = 1000;
constexpr std::chrono::milliseconds kStoppingGrace{3000};  // a stopped worker's last answers are ignored this long
constexpr std::chrono::milliseconds kFreshFor{4000};  // how long a discovered row stays highlighted

Tier tierOf(const std::string& text) {
  if (text == "cloud") return Tier::Cloud;
  if (text == "edge") return Tier::Edge;
  if (text == "end") return Tier::End;
  return Tier::Invalid;
}

}  // namespace

DeviceModel::DeviceModel(QObject* parent) : QAbstractTableModel(parent), monitor_(new DeviceMonitor(this)) {
  connect(monitor_, &DeviceMonitor::probed, this, &DeviceModel::onProbed);
  connect(monitor_, &DeviceMonitor::described, this, &DeviceModel::onDescribed);
  monitor_->start();
}

DeviceModel::~DeviceModel() = default;

int DeviceModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DeviceModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

Qt::ItemFlags DeviceModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled;
}

QStringList DeviceModel::mimeTypes() const { return {kDevicesMimeType}; }

QMimeData* DeviceModel::mimeData(const QModelIndexList& indexes) const {
  std::set<int> rows;
  for (const QModelIndex& index : indexes) {
    if (index.isValid() && index.model() == this) rows.insert(index.row());
  }
  QStringList names;
  for (int row : rows) names << QString::fromStdString(rows_[static_cast<size_t>(row)].device.name);
  if (names.isEmpty()) return nullptr;
  return makeDevicesMimeData(names);
}

Qt::DropActions DeviceModel::supportedDragActions() const { return Qt::CopyAction; }

void DeviceModel::loadCluster(const Cluster& cluster) {
  flushRowChanges();  // the rows they name are about to move
  beginResetModel();
  rows_.clear();
  file_ = cluster.toProto();
  file_.clear_devices();
  for (const Device& device : cluster.devices()) {
    Row row;
    row.device = device;
    rows_.push_back(std::move(row));
  }
  endResetModel();
  updateTargets();
  monitor_->probeNow();
}

void DeviceModel::applyLocalCluster(const Cluster& cluster) {
  for (const Device& device : cluster.devices()) {
    const int at = rowOf(QString::fromStdString(device.name));
    if (at >= 0) {
      Row& row = rows_[static_cast<size_t>(at)];
      if (row.device.address != device.address) {
        row.device.address = device.address;
        row.status = DeviceStatus::Unknown;
        row.misses = 0;
        row.error.clear();
      }
      emitRowChanged(at);
      continue;
    }
    const int end = rowCount();
    flushRowChanges();  // the rows they name are about to move
    beginInsertRows({}, end, end);
    Row row;
    row.device = device;
    rows_.push_back(std::move(row));
    endInsertRows();
  }
  updateTargets();
  monitor_->probeNow();
}

bool DeviceModel::addByAddress(const QString& address, QString* error) {
  const QString trimmed = address.trimmed();
  if (!control::splitHostPort(trimmed.toStdString())) {
    if (error) *error = tr("%1 is not a worker address: give host:port, e.g. 192.168.1.20:50051.").arg(trimmed);
    return false;
  }
  monitor_->describe(trimmed);
  return true;
}

void DeviceModel::onDescribed(const QString& address, const control::WorkerProbe& probe) {
  if (!probe.reachable) {
    Q_EMIT addFailed(address, tr("No worker answers at %1: %2").arg(address, QString::fromStdString(probe.error)));
    return;
  }
  const int row = mergeWorker(address, probe.info);
  Q_EMIT deviceAdded(nameAt(row));
}

void DeviceModel::applyInfo(Row& row, const v1::WorkerInfo& info) {
  if (info.measured_gflops() > 0) row.measured_gflops = info.measured_gflops();
  if (info.memory_mb() > 0) row.device.memory_mb = info.memory_mb();
  if (row.device.tier == Tier::Invalid) row.device.tier = tierOf(info.tier());
  if (row.device.bandwidth_mbps <= 0) {
    row.device.bandwidth_mbps =
        info.emulation().bandwidth_mbps() > 0 ? info.emulation().bandwidth_mbps() : kDefaultBandwidthMbps;
  }
  row.cores = info.cores();
  row.version = QString::fromStdString(info.version());
  row.worker_state = QString::fromStdString(info.state());
  row.job = QString::fromStdString(info.job());
  row.insecure = info.insecure();
  row.error.clear();
  row.misses = 0;
}

int DeviceModel::mergeWorker(const QString& address, const v1::WorkerInfo& info) { return merge(address, info, true); }

int DeviceModel::merge(const QString& address, const v1::WorkerInfo& info, bool verified) {
  const std::string addr = address.toStdString();
  int at = -1;
  for (size_t i = 0; i < rows_.size() && at < 0; ++i) {
    if (rows_[i].device.address == addr) at = static_cast<int>(i);
  }
  if (at < 0 && !info.name().empty()) at = rowOf(QString::fromStdString(info.name()));
  if (at < 0) {
    Row row;
    row.device.name = info.name().empty() ? addr : info.name();
    row.device.address = addr;
    row.device.gflops = info.measured_gflops();
    applyInfo(row, info);
    at = rowCount();
    flushRowChanges();  // the rows they name are about to move
    beginInsertRows({}, at, at);
    rows_.push_back(std::move(row));
    endInsertRows();
  } else {
    Row& row = rows_[static_cast<size_t>(at)];
    // A beacon sent while it was being stopped says nothing new.
    if (row.stopped && std::chrono::steady_clock::now() - row.stopped_at < kStoppingGrace) return at;
    row.device.address = addr;
    row.stopped = false;
    applyInfo(row, info);
    emitRowChanged(at);
  }
  Row& merged = rows_[static_cast<size_t>(at)];
  if (verified) {
    merged.heard_only = false;
    const bool busy = info.state() == "deployed" || info.state() == "training";
    setStatus(at, busy ? DeviceStatus::Busy : DeviceStatus::Reachable);
  } else if (merged.status == DeviceStatus::Unknown && !merged.heard_only) {
    merged.heard_only = true;
    emitRowChanged(at);
  }
  updateTargets();
  return at;
}

int DeviceModel::mergeBeacon(const v1::Beacon& beacon) {
  const QString address = QString::fromStdString(beacon.address());
  bool listed_here = false;
  for (const Row& row : rows_) listed_here = listed_here || row.device.address == beacon.address();
  if (const int named = rowOf(QString::fromStdString(beacon.name())); !listed_here && named >= 0) {
    const std::string& known = rows_[static_cast<size_t>(named)].device.address;
    if (!known.empty()) {
      Q_EMIT beaconConflict(QString::fromStdString(beacon.name()), QString::fromStdString(known), address);
      return -1;
    }
  }
  v1::WorkerInfo info;
  info.set_name(beacon.name());
  info.set_tier(beacon.tier());
  info.set_address(beacon.address());
  info.set_version(beacon.version());
  info.set_state(beacon.state());
  info.set_job(beacon.job());
  info.set_cores(beacon.cores());
  info.set_memory_mb(beacon.memory_mb());
  info.set_measured_gflops(beacon.measured_gflops());
  info.set_insecure(beacon.insecure());
  const int before = rowCount();
  const int at = merge(address, info, false);
  // Its Describe answer, with the token, is what counts: ask at once for one not yet heard.
  if (rowCount() > before || rows_[static_cast<size_t>(at)].status == DeviceStatus::Unknown) monitor_->probeNow();
  if (rowCount() > before) {
    // New here: highlighted for a moment, so the eye finds it in the list.
    const QString name = nameAt(at);
    rows_[static_cast<size_t>(at)].fresh = true;
    emitRowChanged(at);
    QTimer::singleShot(kFreshFor, this, [this, name] {
      const int row = rowOf(name);
      if (row < 0 || !rows_[static_cast<size_t>(row)].fresh) return;
      rows_[static_cast<size_t>(row)].fresh = false;
      emitRowChanged(row);
    });
    Q_EMIT deviceDiscovered(name, QString::fromStdString(beacon.address()));
  }
  return at;
}

void DeviceModel::clear() {
  flushRowChanges();  // the rows they name are about to move
  beginResetModel();
  rows_.clear();
  file_.Clear();
  endResetModel();
  updateTargets();
}

void DeviceModel::setStageOfDevice(const QString& name, int stage) {
  const int at = rowOf(name);
  if (at < 0 || rows_[static_cast<size_t>(at)].stage == stage) return;
  rows_[static_cast<size_t>(at)].stage = stage;
  emitRowChanged(at);
}

void DeviceModel::clearStages() {
  for (size_t i = 0; i < rows_.size(); ++i) setStageOfDevice(nameAt(static_cast<int>(i)), -1);
}

void DeviceModel::setMeasuredGflops(const QString& name, double gflops) {
  const int at = rowOf(name);
  if (at < 0 || gflops <= 0) return;
  rows_[static_cast<size_t>(at)].telemetry_gflops = gflops;
  emitRowChanged(at);
}

v1::Device DeviceModel::toProto(const Row& row) const {
  v1::Device d;
  d.set_name(row.device.name);
  d.set_tier(std::string(tierName(row.device.tier == Tier::Invalid ? Tier::Edge : row.device.tier)));
  d.set_gflops(speedOf(row));
  d.set_memory_mb(row.device.memory_mb);
  d.set_bandwidth_mbps(row.device.bandwidth_mbps > 0 ? row.device.bandwidth_mbps : kDefaultBandwidthMbps);
  d.set_address(row.device.address);
  return d;
}

std::optional<v1::Device> DeviceModel::plannableDevice(const QString& name) const {
  const int at = rowOf(name);
  if (at < 0) return std::nullopt;
  const Row& row = rows_[static_cast<size_t>(at)];
  // Planning needs a speed and a memory, and a worker that answers to train on.
  if (speedOf(row) <= 0 || row.device.memory_mb <= 0 || row.device.address.empty()) return std::nullopt;
  if (row.status != DeviceStatus::Reachable && row.status != DeviceStatus::Busy) return std::nullopt;
  return toProto(row);
}

QStringList DeviceModel::lostDevices() const {
  QStringList names;
  for (const Row& row : rows_) {
    if (row.status == DeviceStatus::Lost) names << QString::fromStdString(row.device.name);
  }
  return names;
}

void DeviceModel::markStopped(const QStringList& names) {
  for (const QString& name : names) {
    const int at = rowOf(name);
    if (at < 0) continue;
    Row& row = rows_[static_cast<size_t>(at)];
    row.stopped = true;
    row.stopped_at = std::chrono::steady_clock::now();
    row.misses = 0;
    row.error.clear();
    emitRowChanged(at);
    setStatus(at, DeviceStatus::Unknown);
  }
}

Cluster DeviceModel::cluster() const {
  if (rows_.empty()) throw Error("no devices to plan for: open a cluster or add workers first");
  v1::Cluster proto = file_;
  if (proto.name().empty()) proto.set_name("console");
  proto.clear_devices();
  proto.clear_links();
  std::set<std::string> names;
  for (const Row& row : rows_) {
    *proto.add_devices() = toProto(row);
    names.insert(row.device.name);
  }
  for (const v1::Link& link : file_.links()) {
    if (names.count(link.a()) && names.count(link.b())) *proto.add_links() = link;
  }
  return Cluster::fromProto(proto);
}

QStringList DeviceModel::liveDevices() const {
  QStringList names;
  for (const Row& row : rows_) {
    if (row.status == DeviceStatus::Reachable || row.status == DeviceStatus::Busy) {
      names << QString::fromStdString(row.device.name);
    }
  }
  return names;
}

DeviceStatus DeviceModel::status(const QString& name) const {
  const int at = rowOf(name);
  return at < 0 ? DeviceStatus::Unknown : rows_[static_cast<size_t>(at)].status;
}

int DeviceModel::rowOf(const QString& name) const {
  const std::string key = name.toStdString();
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].device.name == key) return static_cast<int>(i);
  }
  return -1;
}

QString DeviceModel::nameAt(int row) const {
  if (row < 0 || row >= rowCount()) return {};
  return QString::fromStdString(rows_[static_cast<size_t>(row)].device.name);
}

void DeviceModel::setMonitoring(bool enabled) {
  if (enabled) {
    monitor_->start();
  } else {
    monitor_->stop();
  }
}

void DeviceModel::setProbeInterval(std::chrono::milliseconds interval) {
  monitor_->setInterval(interval);
  monitor_->setCallTimeout(std::min(interval, std::chrono::milliseconds(1500)));
}

void DeviceModel::setLostAfterMisses(int misses) { lost_after_misses_ = std::max(1, misses); }

void DeviceModel::probeNow() { monitor_->probeNow(); }

void DeviceModel::setStatus(int row, DeviceStatus status) {
  Row& r = rows_[static_cast<size_t>(row)];
  if (r.status == status) return;
  r.status = status;
  qCInfo(lcDeviceModel) << "device" << QString::fromStdString(r.device.name) << "is now" << statusText(status);
  emitRowChanged(row);
  Q_EMIT statusChanged(QString::fromStdString(r.device.name), status);
}

void DeviceModel::markLost(const QString& name, const QString& reason) {
  const int at = rowOf(name);
  if (at < 0) return;
  Row& row = rows_[static_cast<size_t>(at)];
  row.error = reason;
  row.misses = std::max(row.misses, lost_after_misses_);
  emitRowChanged(at);
  setStatus(at, DeviceStatus::Lost);
}

void DeviceModel::emitRowChanged(int row) {
  // Coalesced: one dataChanged for every row changed in this pass of the event loop. A view
  // that sizes its columns to their contents measures every row again on each dataChanged,
  // and a re-plan over 64 devices changed each row twice (~4 ms apiece here).
  const bool scheduled = changed_first_ >= 0;
  changed_first_ = scheduled ? std::min(changed_first_, row) : row;
  changed_last_ = std::max(changed_last_, row);
  if (!scheduled) QTimer::singleShot(0, this, &DeviceModel::flushRowChanges);
}

void DeviceModel::flushRowChanges() {
  if (changed_first_ < 0) return;
  const int last = std::min(changed_last_, rowCount() - 1);
  if (changed_first_ <= last) Q_EMIT dataChanged(index(changed_first_, 0), index(last, ColumnCount - 1));
  changed_first_ = changed_last_ = -1;
}

void DeviceModel::setToken(const std::string& token) {
  if (token == token_) return;
  token_ = token;
  updateTargets();
}

void DeviceModel::updateTargets() {
  std::vector<control::WorkerEndpoint> targets;
  for (const Row& row : rows_) {
    if (!row.device.address.empty()) targets.push_back({row.device.name, row.device.address, token_});
  }
  monitor_->setTargets(std::move(targets));
}

void DeviceModel::onProbed(const std::vector<control::WorkerProbe>& probes) {
  // Only rows whose shown values changed are announced: a round over 64 busy workers usually
  // changes none (announcing all 64 took the GUI thread ~0.1-0.3 s a round, emitRowChanged).
  for (const control::WorkerProbe& probe : probes) {
    const int at = rowOf(QString::fromStdString(probe.endpoint.name));
    // The row may have been removed or moved to another address since the round began.
    if (at < 0 || rows_[static_cast<size_t>(at)].device.address != probe.endpoint.address) continue;
    Row& row = rows_[static_cast<size_t>(at)];
    const Row before = row;
    if (probe.reachable) {
      // An answer to a probe sent while it was being stopped says nothing new.
      if (row.stopped && std::chrono::steady_clock::now() - row.stopped_at < kStoppingGrace) continue;
      applyInfo(row, probe.info);
      row.stopped = false;
      row.heard_only = false;
      const bool busy = probe.info.state() == "deployed" || probe.info.state() == "training";
      if (!sameDisplay(before, row)) emitRowChanged(at);
      setStatus(at, busy ? DeviceStatus::Busy : DeviceStatus::Reachable);
      continue;
    }
    row.error = QString::fromStdString(probe.error);
    ++row.misses;
    if (row.status != DeviceStatus::Unknown && row.status != DeviceStatus::Lost && row.misses >= lost_after_misses_) {
      setStatus(at, DeviceStatus::Lost);
    } else if (!sameDisplay(before, row)) {
      emitRowChanged(at);
    }
  }
  Q_EMIT probeRoundApplied();
}

bool DeviceModel::sameDisplay(const Row& a, const Row& b) {
  // What data() shows of a row, in any role.
  return a.device.name == b.device.name && a.device.address == b.device.address && a.device.tier == b.device.tier &&
         a.device.memory_mb == b.device.memory_mb && a.device.gflops == b.device.gflops &&
         a.measured_gflops == b.measured_gflops && a.telemetry_gflops == b.telemetry_gflops &&
         a.status == b.status && a.stage == b.stage && a.worker_state == b.worker_state && a.job == b.job &&
         a.version == b.version && a.error == b.error && a.cores == b.cores && a.insecure == b.insecure &&
         a.fresh == b.fresh && a.heard_only == b.heard_only && a.stopped == b.stopped;
}

}  // namespace stagecraft::gui
