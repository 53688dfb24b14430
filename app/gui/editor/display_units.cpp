#include "editor/display_units.h"

#include <QCoreApplication>
#include <cmath>

namespace stagecraft::gui {
namespace {

QString withPrefix(double value, const char* const* prefixes, int count, double step, const QString& unit) {
  int i = 0;
  double v = std::fabs(value);
  while (v >= step && i + 1 < count) {
    v /= step;
    ++i;
  }
  if (value < 0) v = -v;
  const int decimals = (i == 0 || std::fabs(v) >= 100) ? 0 : 1;
  QString number = QString::number(v, 'f', decimals);
  QString prefix = QString::fromLatin1(prefixes[i]);
  QString space = QStringLiteral(" ");
  if (unit.isEmpty() && prefix.isEmpty()) return number;
  return number + space + prefix + unit;
}

}  // namespace

QString formatFlops(double flops) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  return withPrefix(flops, kPrefixes, 6, 1000.0, QStringLiteral("FLOP"));
}

QString formatCount(double count) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T"};
  return withPrefix(count, kPrefixes, 5, 1000.0, QString());
}

QString formatBytes(double bytes) {
  static const char* const kPrefixes[] = {"", "Ki", "Mi", "Gi", "Ti"};
  return withPrefix(bytes, kPrefixes, 5, 1024.0, QStringLiteral("B"));
}

QString formatMs(double ms) {
  if (ms >= 1000) return QCoreApplication::translate("DisplayUnits", "%1 s").arg(ms / 1000, 0, 'f', 2);
  return QCoreApplication::translate("DisplayUnits", "%1 ms").arg(ms, 0, 'f', ms >= 100 ? 0 : 1);
}

QColor tierColor(Tier tier) {
  switch (tier) {
    case Tier::Cloud: return QColor(0x2f, 0x6f, 0xd6);
    case Tier::Edge: return QColor(0x2e, 0x9e, 0x5b);
    case Tier::End: return QColor(0xe0, 0x7b, 0x1f);
    case Tier::Invalid: break;
  }
  return QColor(0x8a, 0x8f, 0x98);
}

QString tierLabel(Tier tier) {
  switch (tier) {
    case Tier::Cloud: return QCoreApplication::translate("DisplayUnits", "cloud");
    case Tier::Edge: return QCoreApplication::translate("DisplayUnits", "edge");
    case Tier::End: return QCoreApplication::translate("DisplayUnits", "end");
    case Tier::Invalid: break;
  }
  return QCoreApplication::translate("DisplayUnits", "unknown");
}

QString layerKindLabel(const std::string& kind) {
  struct Name {
    const char* kind;
    const char* label;
  };
  static const Name kNames[] = {
      {"conv2d", QT_TRANSLATE_NOOP("DisplayUnits", "Convolution")},
      {"linear", QT_TRANSLATE_NOOP("DisplayUnits", "Fully connected")},
      {"maxpool2d", QT_TRANSLATE_NOOP("DisplayUnits", "Max pooling")},
      {"global_avgpool", QT_TRANSLATE_NOOP("DisplayUnits", "Global average pooling")},
      {"basic_block", QT_TRANSLATE_NOOP("DisplayUnits", "Residual block")},
      {"inverted_residual", QT_TRANSLATE_NOOP("DisplayUnits", "Inverted residual block")},
      {"transformer_block", QT_TRANSLATE_NOOP("DisplayUnits", "Transformer block")},
      {"embedding", QT_TRANSLATE_NOOP("DisplayUnits", "Embedding")},
      {"lm_head", QT_TRANSLATE_NOOP("DisplayUnits", "Language-model head")},
  };
  for (const Name& n : kNames) {
    if (kind == n.kind) return QCoreApplication::translate("DisplayUnits", n.label);
  }
  return QString::fromStdString(kind);
}

QString layerKindLabel(const v1::Layer& layer) {
  if (layer.kind() == "torchscript" && !layer.module_type().empty()) return QString::fromStdString(layer.module_type());
  return layerKindLabel(layer.kind());
}

QString costSourceLabel(CostSource source) {
  switch (source) {
    case CostSource::Profiled: return QCoreApplication::translate("DisplayUnits", "profiled");
    case CostSource::Calibrated: return QCoreApplication::translate("DisplayUnits", "calibrated from training");
    case CostSource::Specs: break;
  }
  return QCoreApplication::translate("DisplayUnits", "from specs");
}

}  // namespace stagecraft::gui
