#pragma once

#include <QString>
#include <QStringList>
#include <vector>

class QMimeData;

namespace stagecraft::gui {

/// Layers dragged within the console (from the layer table or the partition editor):
/// UTF-8 decimal layer indices joined by ','.
inline const QString kLayersMimeType = QStringLiteral("application/x-stagecraft-layers");
/// Devices dragged within the console (from the device list or the partition editor):
/// UTF-8 device names joined by '\n'.
inline const QString kDevicesMimeType = QStringLiteral("application/x-stagecraft-devices");

/// Builds / reads the payloads above; a reader returns an empty list for a payload it
/// cannot parse, so a drop of foreign data is refused rather than misread.
QMimeData* makeLayersMimeData(const std::vector<int>& layers);
std::vector<int> layersFromMimeData(const QMimeData* data);
QMimeData* makeDevicesMimeData(const QStringList& devices);
QStringList devicesFromMimeData(const QMimeData* data);

}  // namespace stagecraft::gui
