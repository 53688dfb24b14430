// What a row of the device list shows: its texts, tooltips and icons (DeviceModel::data).
#include "models/device_model.h"

#include <QColor>
#include <QIcon>
#include <QPainter>
#include <QPixmap>

#include "editor/display_units.h"

namespace stagecraft::gui {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;  // a cluster file's memory_mb counts MiB, as the cost model does

/// An amber warning triangle: the worker answers every caller.
QIcon insecureIcon() {
  QPixmap pixmap(12, 12);
  pixmap.fill(Qt::transparent);
  QPainter painter(&pixmap);
  painter.setRenderHint(QPainter::Antialiasing);
  const QColor amber(0xe0, 0x9b, 0x13);
  painter.setPen(amber.darker(140));
  painter.setBrush(amber);
  const QPointF triangle[] = {{6, 0.5}, {11.5, 11}, {0.5, 11}};
  painter.drawPolygon(triangle, 3);
  painter.setPen(QPen(Qt::black, 1.4));
  painter.drawLine(QPointF(6, 4), QPointF(6, 7.5));
  painter.drawPoint(QPointF(6, 9.4));
  return QIcon(pixmap);
}

QIcon statusIcon(DeviceStatus status) {
  QColor color;
  switch (status) {
    case DeviceStatus::Reachable: color = QColor(0x2e, 0x9d, 0x4f); break;
    case DeviceStatus::Busy: color = QColor(0x1f, 0x6f, 0xd1); break;
    case DeviceStatus::Lost: color = QColor(0xd1, 0x3b, 0x2f); break;
    case DeviceStatus::Unknown: color = QColor(0x9a, 0x9a, 0x9a); break;
  }
  QPixmap pixmap(12, 12);
  pixmap.fill(Qt::transparent);
  QPainter painter(&pixmap);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setPen(color.darker(130));
  painter.setBrush(color);
  painter.drawEllipse(1, 1, 10, 10);
  return QIcon(pixmap);
}

}  // namespace

const QIcon& DeviceModel::cachedIcon(int which) const {
  // Drawn once: the view asks for them for every row each time it measures or paints one.
  QIcon& icon = icons_[static_cast<size_t>(which)];
  if (icon.isNull()) icon = which == kInsecureIcon ? insecureIcon() : statusIcon(static_cast<DeviceStatus>(which));
  return icon;
}

double DeviceModel::speedOf(const Row& row) const {
  if (row.telemetry_gflops > 0) return row.telemetry_gflops;
  if (row.measured_gflops > 0) return row.measured_gflops;
  return row.device.gflops;
}

QString DeviceModel::statusText(DeviceStatus status) const {
  switch (status) {
    case DeviceStatus::Reachable: return tr("reachable");
    case DeviceStatus::Busy: return tr("busy");
    case DeviceStatus::Lost: return tr("lost");
    case DeviceStatus::Unknown: break;
  }
  return tr("unknown");
}

QString DeviceModel::statusText(const Row& row) const {
  // What the worker does, not just that it holds a job: one whose job waits is idle.
  if (row.status == DeviceStatus::Busy) {
    return row.worker_state == QLatin1String("training") ? tr("training") : tr("idle, job deployed");
  }
  if (row.status == DeviceStatus::Unknown && row.stopped) return tr("stopped");
  if (row.status == DeviceStatus::Unknown && row.heard_only) return tr("heard, unconfirmed");
  return statusText(row.status);
}

QString DeviceModel::tooltip(const Row& row) const {
  const QString text = statusTooltip(row);
  if (!row.insecure || row.status == DeviceStatus::Lost) return text;
  return text + QLatin1Char('\n') +
         tr("Warning: this worker was started with --insecure and answers every caller: anyone who reaches it can "
            "deploy, train, read or overwrite its model. Start it with --token-file.");
}

QString DeviceModel::statusTooltip(const Row& row) const {
  const QString name = QString::fromStdString(row.device.name);
  const QString address = QString::fromStdString(row.device.address);
  switch (row.status) {
    case DeviceStatus::Reachable:
      return tr("The worker of %1 at %2 answers and is idle (%3 cores, version %4).")
          .arg(name, address)
          .arg(row.cores)
          .arg(row.version);
    case DeviceStatus::Busy:
      return row.worker_state == QLatin1String("training")
                 ? tr("The worker of %1 at %2 is training job %3.").arg(name, address, row.job)
                 : tr("The worker of %1 at %2 has job %3 deployed.").arg(name, address, row.job);
    case DeviceStatus::Lost:
      return tr("The worker of %1 at %2 stopped answering: %3").arg(name, address, row.error);
    case DeviceStatus::Unknown: break;
  }
  if (address.isEmpty()) return tr("Device %1 has no worker address.").arg(name);
  if (row.stopped) return tr("The worker of %1 at %2 was stopped from this console.").arg(name, address);
  if (row.heard_only) {
    return tr("A beacon announced %1 at %2, but its worker has not answered Describe yet: a beacon is a hint "
              "anyone on the network can send, so it cannot be planned on until then.")
        .arg(name, address);
  }
  if (!row.error.isEmpty()) return tr("The worker of %1 has not answered: %2").arg(name, row.error);
  return tr("The worker of %1 at %2 has not been asked yet.").arg(name, address);
}

QVariant DeviceModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& row = rows_[static_cast<size_t>(index.row())];
  switch (role) {
    case NameRole: return QString::fromStdString(row.device.name);
    case StatusRole: return static_cast<int>(row.status);
    case StageRole: return row.stage;
    case Qt::ToolTipRole: return tooltip(row);
    case Qt::DecorationRole:
      if (index.column() == StatusColumn || (index.column() == NameColumn && row.status == DeviceStatus::Lost)) {
        return cachedIcon(static_cast<int>(row.status));
      }
      if (index.column() == NameColumn && row.insecure) return cachedIcon(kInsecureIcon);
      return {};
    case Qt::BackgroundRole:
      if (row.fresh) return QColor(0xfd, 0xf3, 0xc4);
      return {};
    case Qt::ForegroundRole:
      // A lost device reads red across the row: the status column may be scrolled away.
      if (row.status == DeviceStatus::Lost) return QColor(0xc6, 0x28, 0x28);
      return {};
    case Qt::TextAlignmentRole:
      if (index.column() == SpeedColumn || index.column() == MemoryColumn || index.column() == StageColumn) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      }
      return {};
    case Qt::DisplayRole: break;
    default: return {};
  }
  switch (index.column()) {
    case NameColumn: return QString::fromStdString(row.device.name);
    case TierColumn: return row.device.tier == Tier::Invalid ? QString() : tierLabel(row.device.tier);
    case SpeedColumn: return QString::number(speedOf(row), 'f', 1);
    case MemoryColumn: return row.device.memory_mb > 0 ? formatBytes(row.device.memory_mb * kMiB) : QString();
    case AddressColumn: return QString::fromStdString(row.device.address);
    case StatusColumn: return statusText(row);
    case StageColumn: return row.stage >= 0 ? QString::number(row.stage) : QString();
    default: return {};
  }
}

QVariant DeviceModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn: return tr("Device");
    case TierColumn: return tr("Tier");
    case SpeedColumn: return tr("GFLOP/s");
    case MemoryColumn: return tr("Memory");
    case AddressColumn: return tr("Address");
    case StatusColumn: return tr("Status");
    case StageColumn: return tr("Stage");
    default: return {};
  }
}

}  // namespace stagecraft::gui
