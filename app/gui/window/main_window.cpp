#include "window/main_window.h"

namespace stagecraft::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) { setWindowTitle(tr("Stagecraft")); }

MainWindow::~MainWindow() = default;

void MainWindow::openStartup(const QString&, const QString&, const QString&) {}

}  // namespace stagecraft::gui
