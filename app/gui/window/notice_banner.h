#pragma once

#include <QFrame>
#include <functional>

class QLabel;
class QPushButton;

namespace stagecraft::gui {

/// A one-line notice across the top of the plan area, where the eye is while training: what
/// happened, one button that acts on it, and a button that dismisses it. A new notice
/// replaces the one shown.
class NoticeBanner : public QFrame {
  Q_OBJECT

 public:
  explicit NoticeBanner(QWidget* parent = nullptr);

  /// What a notice asks of the user: a Warning says something went wrong (a missed promise,
  /// a divergence) and offers the way out; an Advice offers something better (a faster plan).
  enum class Kind { Warning, Advice };

  /// Shows `text` with a button labelled `action_text` that runs `action` and closes the
  /// notice (no button when `action_text` is empty). A notice without an action does not
  /// replace a shown one that offers one, nor an Advice a shown Warning that offers one (the
  /// log keeps them): returns whether it is shown.
  bool showNotice(const QString& text, const QString& action_text = {}, std::function<void()> action = {},
                  Kind kind = Kind::Warning);
  /// A refused edit or input, in red above the notice (which it leaves alone), until
  /// clearRefusal() (the next edit that is applied) or dismiss().
  void showRefusal(const QString& text);
  void clearRefusal();
  QString refusalText() const;
  void dismiss();
  QString text() const;
  QPushButton* actionButton() const { return action_; }

 private:
  QLabel* label_ = nullptr;
  QLabel* refusal_ = nullptr;
  QPushButton* action_ = nullptr;
  QPushButton* close_ = nullptr;
  std::function<void()> on_action_;
  Kind kind_ = Kind::Warning;
};

}  // namespace stagecraft::gui
