#include "window/notice_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

namespace stagecraft::gui {

NoticeBanner::NoticeBanner(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("noticeBanner"));
  setFrameShape(QFrame::StyledPanel);
  setStyleSheet(QStringLiteral("#noticeBanner { background: #fff4ce; border: 1px solid #e0b84a; border-radius: 3px; }"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(8, 4, 4, 4);
  label_ = new QLabel(this);
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  action_ = new QPushButton(this);
  close_ = new QPushButton(tr("Dismiss"), this);
  close_->setFlat(true);
  layout->addWidget(label_, 1);
  layout->addWidget(action_);
  layout->addWidget(close_);
  connect(action_, &QPushButton::clicked, this, [this] {
    auto act = on_action_;
    dismiss();
    if (act) act();
  });
  connect(close_, &QPushButton::clicked, this, &NoticeBanner::dismiss);
  hide();
}

bool NoticeBanner::showNotice(const QString& text, const QString& action_text, std::function<void()> action) {
  if (action_text.isEmpty() && !isHidden() && on_action_) return false;
  label_->setText(text);
  action_->setText(action_text);
  action_->setVisible(!action_text.isEmpty());
  on_action_ = std::move(action);
  show();
  return true;
}

void NoticeBanner::dismiss() {
  on_action_ = nullptr;
  hide();
}

QString NoticeBanner::text() const { return label_->text(); }

}  // namespace stagecraft::gui
