#include "window/notice_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace stagecraft::gui {

NoticeBanner::NoticeBanner(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("noticeBanner"));
  setFrameShape(QFrame::StyledPanel);
  setStyleSheet(QStringLiteral("#noticeBanner { background: #fff4ce; border: 1px solid #e0b84a; border-radius: 3px; }"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(8, 4, 4, 4);
  auto* texts = new QVBoxLayout;
  texts->setSpacing(2);
  label_ = new QLabel(this);
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  refusal_ = new QLabel(this);
  refusal_->setObjectName(QStringLiteral("refusal"));
  refusal_->setWordWrap(true);
  refusal_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  refusal_->setStyleSheet(QStringLiteral("color: #b3261e; font-weight: 600;"));
  refusal_->hide();
  texts->addWidget(refusal_);
  texts->addWidget(label_);
  action_ = new QPushButton(this);
  close_ = new QPushButton(tr("Dismiss"), this);
  close_->setFlat(true);
  layout->addLayout(texts, 1);
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

bool NoticeBanner::showNotice(const QString& text, const QString& action_text, std::function<void()> action,
                              Kind kind) {
  const bool offering = !isHidden() && on_action_;
  if (offering && (action_text.isEmpty() || (kind == Kind::Advice && kind_ == Kind::Warning))) return false;
  kind_ = kind;
  label_->setText(text);
  label_->show();
  action_->setText(action_text);
  action_->setVisible(!action_text.isEmpty());
  on_action_ = std::move(action);
  show();
  return true;
}

void NoticeBanner::showRefusal(const QString& text) {
  refusal_->setText(text);
  refusal_->show();
  if (label_->text().isEmpty()) {
    label_->hide();
    action_->hide();
  }
  show();
}

void NoticeBanner::clearRefusal() {
  if (refusal_->isHidden()) return;
  refusal_->clear();
  refusal_->hide();
  if (label_->text().isEmpty()) hide();
}

void NoticeBanner::dismiss() {
  on_action_ = nullptr;
  label_->clear();
  refusal_->clear();
  refusal_->hide();
  hide();
}

QString NoticeBanner::refusalText() const { return refusal_->isHidden() ? QString() : refusal_->text(); }

QString NoticeBanner::text() const { return label_->text(); }

}  // namespace stagecraft::gui
