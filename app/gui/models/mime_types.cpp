#include "models/mime_types.h"

#include <QMimeData>

namespace stagecraft::gui {

QMimeData* makeLayersMimeData(const std::vector<int>& layers) {
  QStringList parts;
  for (int layer : layers) parts << QString::number(layer);
  auto* data = new QMimeData;
  data->setData(kLayersMimeType, parts.join(QLatin1Char(',')).toUtf8());
  return data;
}

std::vector<int> layersFromMimeData(const QMimeData* data) {
  if (data == nullptr || !data->hasFormat(kLayersMimeType)) return {};
  std::vector<int> layers;
  const QString text = QString::fromUtf8(data->data(kLayersMimeType));
  for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    bool ok = false;
    const int layer = part.trimmed().toInt(&ok);
    if (!ok || layer < 0) return {};
    layers.push_back(layer);
  }
  return layers;
}

QMimeData* makeDevicesMimeData(const QStringList& devices) {
  auto* data = new QMimeData;
  data->setData(kDevicesMimeType, devices.join(QLatin1Char('\n')).toUtf8());
  return data;
}

QStringList devicesFromMimeData(const QMimeData* data) {
  if (data == nullptr || !data->hasFormat(kDevicesMimeType)) return {};
  QStringList devices = QString::fromUtf8(data->data(kDevicesMimeType)).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  for (const QString& d : devices) {
    if (d.trimmed().isEmpty()) return {};
  }
  return devices;
}

}  // namespace stagecraft::gui
