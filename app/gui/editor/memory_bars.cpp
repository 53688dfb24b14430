#include "editor/memory_bars.h"

#include <QHelpEvent>
#include <QLoggingCategory>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

#include "editor/display_units.h"
#include "editor/plan_session.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcMemoryBars, "stagecraft.gui.memorybars")

namespace {
constexpr int kRow = 24;
constexpr int kMargin = 10;
constexpr int kMinBarWidth = 40;
}  // namespace

MemoryBars::MemoryBars(QWidget* parent) : QWidget(parent) {}

void MemoryBars::setSession(PlanSession* session) {
  if (session_) disconnect(session_, nullptr, this, nullptr);
  session_ = session;
  if (session_) {
    connect(session_, &PlanSession::evaluated, this, [this] { update(); });
    connect(session_, &PlanSession::clusterChanged, this, [this] {
      updateGeometry();
      update();
    });
  }
  updateGeometry();
  update();
}

QSize MemoryBars::sizeHint() const {
  const int devices = session_ && session_->hasDocument() ? session_->cluster().size() : 3;
  return QSize(360, 2 * kMargin + devices * kRow);
}

QSize MemoryBars::minimumSizeHint() const { return QSize(220, sizeHint().height()); }

int MemoryBars::deviceAt(const QPoint& pos) const {
  if (!session_ || !session_->hasDocument()) return -1;
  const int row = (pos.y() - kMargin) / kRow;
  return pos.y() >= kMargin && row < session_->cluster().size() ? row : -1;
}

void MemoryBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().base());
  if (!session_ || !session_->hasDocument()) return;
  const PlanEvaluation& ev = session_->evaluation();
  const Cluster& cluster = session_->cluster();
  const QFontMetrics fm = fontMetrics();
  int name_w = 0;
  for (const Device& d : cluster.devices()) name_w = std::max(name_w, fm.horizontalAdvance(QString::fromStdString(d.name)));
  const int full_w = fm.horizontalAdvance(tr("%1 / %2").arg(formatBytes(999.9 * 1024 * 1024), formatBytes(99.9 * 1024 * 1024 * 1024))) + 8;
  const int short_w = fm.horizontalAdvance(formatBytes(999.9 * 1024 * 1024)) + 8;
  const int bar_left = kMargin + 14 + name_w + 10;
  // A narrow panel shows what each device uses, not its limit (the tooltip has both).
  const bool full = width() - bar_left - full_w - kMargin >= kMinBarWidth;
  const int value_w = full ? full_w : short_w;
  const int bar_w = std::max(width() - bar_left - value_w - kMargin, kMinBarWidth);
  for (int d = 0; d < cluster.size() && d < static_cast<int>(ev.memory_bytes.size()); ++d) {
    const int y = kMargin + d * kRow;
    const bool used = ev.stage_of_device[d] >= 0;
    const bool over = ev.device_over_memory[d];
    const double limit = ev.memory_limit_bytes[d];
    const double fraction = limit > 0 ? ev.memory_bytes[d] / limit : 0.0;
    p.setPen(Qt::NoPen);
    p.setBrush(used ? tierColor(cluster.device(d).tier) : QColor(0xb0, 0xb6, 0xbf));
    p.drawEllipse(QPointF(kMargin + 4.5, y + kRow / 2.0), 4, 4);
    p.setPen(used ? palette().color(QPalette::Text) : QColor(0x8a, 0x8f, 0x98));
    p.drawText(QRect(kMargin + 14, y, name_w + 4, kRow), Qt::AlignVCenter | Qt::AlignLeft,
               QString::fromStdString(cluster.device(d).name));
    const QRectF track(bar_left, y + 6, bar_w, kRow - 12);
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(0xec, 0xef, 0xf3));
    p.drawRoundedRect(track, 3, 3);
    if (used) {
      QRectF fill = track;
      fill.setWidth(track.width() * std::clamp(fraction, 0.0, 1.0));
      p.setBrush(over ? QColor(0xd3, 0x2f, 0x2f) : (fraction > 0.85 ? QColor(0xe0, 0x9b, 0x1f) : QColor(0x3b, 0x82, 0xf6)));
      p.drawRoundedRect(fill, 3, 3);
    }
    p.setPen(over ? QColor(0xd3, 0x2f, 0x2f) : (used ? palette().color(QPalette::Text) : QColor(0x8a, 0x8f, 0x98)));
    const QString value = !used  ? tr("unused")
                          : full ? tr("%1 / %2").arg(formatBytes(ev.memory_bytes[d]), formatBytes(limit))
                                 : formatBytes(ev.memory_bytes[d]);
    p.drawText(QRect(bar_left + bar_w + 8, y, value_w, kRow), Qt::AlignVCenter | Qt::AlignLeft, value);
  }
}

bool MemoryBars::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip && session_ && session_->hasDocument()) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int d = deviceAt(help->pos());
    const PlanEvaluation& ev = session_->evaluation();
    if (d < 0 || d >= static_cast<int>(ev.memory_bytes.size())) {
      QToolTip::hideText();
      return true;
    }
    const QString name = session_->deviceName(d);
    QString text;
    if (ev.stage_of_device[d] < 0) {
      text = tr("%1 is in no stage.").arg(name);
    } else if (ev.device_over_memory[d]) {
      text = tr("%1 needs %2 in stage %3 but has %4.")
                 .arg(name, formatBytes(ev.memory_bytes[d]))
                 .arg(ev.stage_of_device[d])
                 .arg(formatBytes(ev.memory_limit_bytes[d]));
    } else {
      text = tr("%1 peaks at %2 of %3 in stage %4.")
                 .arg(name, formatBytes(ev.memory_bytes[d]), formatBytes(ev.memory_limit_bytes[d]))
                 .arg(ev.stage_of_device[d]);
    }
    QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(event);
}

}  // namespace stagecraft::gui
