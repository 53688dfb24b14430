#pragma once

#include <QMainWindow>

namespace stagecraft::gui {

/// The console's main window: devices and model on the left, the partition editor and
/// the live charts in the middle, the log below.
class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// What the command line asked for; empty strings fall back to the last session's
  /// files (QSettings) and then to the shipped defaults.
  void openStartup(const QString& cluster, const QString& model, const QString& plan);
};

}  // namespace stagecraft::gui
