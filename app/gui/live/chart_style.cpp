#include "live/chart_style.h"

#include "editor/display_units.h"

#include <QApplication>
#include "live/qcustomplot_include.h"

#include <array>

namespace stagecraft::gui {

QColor ChartStyle::measuredColor() { return QColor(0x1f, 0x77, 0xb4); }
QColor ChartStyle::predictedColor() { return QColor(0xe6, 0x7e, 0x22); }
QColor ChartStyle::lossColor() { return QColor(0x9e, 0xc5, 0xe8); }
QColor ChartStyle::lossSmoothedColor() { return QColor(0x1f, 0x4e, 0x9c); }
QColor ChartStyle::accuracyColor() { return QColor(0x2c, 0xa0, 0x2c); }
QColor ChartStyle::warningColor() { return QColor(0xf0, 0x8c, 0x1e); }
QColor ChartStyle::overLimitColor() { return QColor(0xd6, 0x27, 0x28); }

QColor ChartStyle::deviceColor(int index) {
  static const std::array<QColor, 10> kColors = {
      QColor(0x4e, 0x79, 0xa7), QColor(0x59, 0xa1, 0x4f), QColor(0xb0, 0x7a, 0xa1),
      QColor(0x76, 0xb7, 0xb2), QColor(0xed, 0xc9, 0x48), QColor(0x9c, 0x75, 0x5f),
      QColor(0xff, 0x9d, 0xa7), QColor(0x86, 0xbc, 0xb6), QColor(0xba, 0xb0, 0xac),
      QColor(0x8c, 0xd1, 0x7d)};
  if (index < 0) return kColors[0];
  const QColor base = kColors[static_cast<std::size_t>(index) % kColors.size()];
  const int round = index / static_cast<int>(kColors.size());
  return round == 0 ? base : base.lighter(100 + 15 * round);
}

QColor ChartStyle::tierColor(Tier tier) { return stagecraft::gui::tierColor(tier); }

QColor ChartStyle::eventColor(EventKind kind, int micro_batch) {
  // Two shades per compute kind: adjacent micro-batches differ, the kind stays obvious.
  const bool odd = micro_batch >= 0 && micro_batch % 2 == 1;
  switch (kind) {
    case EventKind::Forward:
      return odd ? QColor(0x6b, 0xae, 0xd6) : QColor(0x21, 0x71, 0xb5);
    case EventKind::Backward:
      return odd ? QColor(0x74, 0xc4, 0x76) : QColor(0x23, 0x8b, 0x45);
    case EventKind::Send:
      return QColor(0x9e, 0x6e, 0xc8);
    case EventKind::Receive:
      return QColor(0xf4, 0xa5, 0x82);
    case EventKind::AllReduce:
      return QColor(0xd6, 0x27, 0x28);
    case EventKind::Update:
      return QColor(0x7f, 0x7f, 0x7f);
    case EventKind::Invalid:
      break;
  }
  return QColor(0x99, 0x99, 0x99);
}

QColor ChartStyle::textColorOn(const QColor& background) {
  const double luminance =
      0.299 * background.redF() + 0.587 * background.greenF() + 0.114 * background.blueF();
  return luminance > 0.6 ? QColor(Qt::black) : QColor(Qt::white);
}

QFont ChartStyle::titleFont() {
  QFont font = QApplication::font();
  font.setBold(true);
  font.setPointSizeF(font.pointSizeF() + 1);
  return font;
}

void ChartStyle::setHeader(QCustomPlot* plot, QCPTextElement* title, int legend_columns) {
  auto* header = new QCPLayoutGrid;
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, header);
  plot->axisRect()->insetLayout()->take(plot->legend);
  header->addElement(0, 0, title);
  header->addElement(0, 1, plot->legend);
  header->setColumnStretchFactor(0, 1);
  header->setColumnStretchFactor(1, 0.01);
  // Entries the plot already has are laid out again with the wrap.
  plot->legend->setWrap(legend_columns);
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst, true);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setVisible(true);
}

void ChartStyle::setAxisLabel(QCPAxis* axis, const QString& label) {
  axis->setLabel(label);
  QFont font = QApplication::font();
  axis->setLabelFont(font);
  font.setPointSizeF(font.pointSizeF() - 1);
  axis->setTickLabelFont(font);
}

void ChartStyle::apply(QCustomPlot* plot) {
  plot->setBackground(QBrush(Qt::white));
  plot->setNoAntialiasingOnDrag(true);
  if (plot->legend != nullptr) {
    QFont legend_font = QApplication::font();
    legend_font.setPointSizeF(legend_font.pointSizeF() - 1);
    plot->legend->setFont(legend_font);
    plot->legend->setBrush(QBrush(QColor(255, 255, 255, 220)));
    plot->legend->setBorderPen(QPen(QColor(0xc8, 0xc8, 0xc8)));
  }
  if (plot->axisRect() == nullptr) return;
  const QPen grid(QColor(0xe4, 0xe4, 0xe4), 0, Qt::SolidLine);
  for (QCPAxis* axis : plot->axisRect()->axes()) {
    axis->grid()->setPen(grid);
    axis->grid()->setZeroLinePen(grid);
    axis->setBasePen(QPen(QColor(0x88, 0x88, 0x88)));
    axis->setTickPen(QPen(QColor(0x88, 0x88, 0x88)));
    axis->setSubTickPen(QPen(QColor(0xaa, 0xaa, 0xaa)));
    axis->setTickLabelColor(QColor(0x33, 0x33, 0x33));
    axis->setLabelColor(QColor(0x22, 0x22, 0x22));
  }
}

}  // namespace stagecraft::gui
