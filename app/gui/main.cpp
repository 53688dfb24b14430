// stagecraft: the Qt 6 console. Command line: --cluster FILE, --plan FILE, --model NAME (or FILE.pt),
// --lang LOCALE (e.g. zh_CN; default: the system's), --beacon-port PORT, --token-file FILE,
// --tls-cert FILE --tls-key FILE --tls-ca FILE.
#include <QApplication>
#include <QCommandLineParser>
#include <QLibraryInfo>
#include <QLocale>
#include <QTranslator>
#include <cstdio>

#include "control/cluster_token.h"
#include "control/transport_security.h"
#include "control/discovery.h"
#include "window/main_window.h"

int main(int argc, char* argv[]) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Stagecraft"));
  QApplication::setApplicationName(QStringLiteral("stagecraft"));
  QApplication::setApplicationDisplayName(QStringLiteral("Stagecraft"));
  QApplication::setApplicationVersion(QStringLiteral(STAGECRAFT_VERSION));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/stagecraft.svg")));
  QApplication::setDesktopFileName(QStringLiteral("stagecraft"));

  // --lang is read before the parser so --help is already translated.
  QString lang = QLocale::system().name();
  const QStringList args = QApplication::arguments();
  for (qsizetype i = 1; i < args.size(); ++i) {
    if (args[i] == QLatin1String("--lang") && i + 1 < args.size()) lang = args[i + 1];
    if (args[i].startsWith(QLatin1String("--lang="))) lang = args[i].mid(7);
  }
  const QLocale locale(lang);
  QLocale::setDefault(locale);
  QTranslator qt_translator;
  if (qt_translator.load(locale, QStringLiteral("qtbase"), QStringLiteral("_"),
                         QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
    QApplication::installTranslator(&qt_translator);
  }
  QTranslator translator;
  if (translator.load(locale, QStringLiteral("stagecraft"), QStringLiteral("_"), QStringLiteral(":/i18n"))) {
    QApplication::installTranslator(&translator);
  }

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QApplication::translate("main", "Plan, run and watch hybrid-pipeline training on heterogeneous edge devices."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption cluster_option(
      QStringLiteral("cluster"),
      QApplication::translate("main", "Open the cluster <file> (or a shipped cluster's name)."),
      QApplication::translate("main", "file"));
  const QCommandLineOption plan_option(QStringLiteral("plan"),
                                       QApplication::translate("main", "Open the plan <file>."),
                                       QApplication::translate("main", "file"));
  const QCommandLineOption model_option(QStringLiteral("model"),
                                        QApplication::translate("main", "Select the model <name> from the zoo, or a TorchScript file whose sample shape was given before."),
                                        QApplication::translate("main", "name"));
  const QCommandLineOption lang_option(QStringLiteral("lang"),
                                       QApplication::translate("main", "User interface language, e.g. zh_CN."),
                                       QApplication::translate("main", "locale"));
  const QCommandLineOption beacon_option(
      QStringLiteral("beacon-port"),
      QApplication::translate("main", "Listen for worker beacons on UDP <port> (default %1).")
          .arg(stagecraft::control::kDefaultBeaconPort),
      QApplication::translate("main", "port"), QString::number(stagecraft::control::kDefaultBeaconPort));
  const QCommandLineOption token_option(
      QStringLiteral("token-file"),
      QApplication::translate("main",
                              "The cluster token workers ask for, in a private <file> (default: $%1, else the last "
                              "session's, else the one local workers get).")
          .arg(QString::fromLatin1(stagecraft::control::kTokenFileVariable)),
      QApplication::translate("main", "file"));
  const auto tls_option = [](const char* name, const QString& text, const char* variable) {
    return QCommandLineOption(QString::fromLatin1(name), text.arg(QString::fromLatin1(variable)),
                              QApplication::translate("main", "file"));
  };
  const QCommandLineOption tls_cert_option = tls_option(
      "tls-cert",
      QApplication::translate("main", "This console's certificate <file>, signed by the cluster CA, for workers "
                                      "started with --tls-* (default: $%1, else the last session's)."),
      stagecraft::control::kTlsCertVariable);
  const QCommandLineOption tls_key_option = tls_option(
      "tls-key", QApplication::translate("main", "The certificate's private key <file>, mode 0600 (default: $%1)."),
      stagecraft::control::kTlsKeyVariable);
  const QCommandLineOption tls_ca_option = tls_option(
      "tls-ca",
      QApplication::translate("main", "The cluster CA's certificate <file>, which signed the workers' (default: $%1)."),
      stagecraft::control::kTlsCaVariable);
  parser.addOptions({cluster_option, plan_option, model_option, lang_option, beacon_option, token_option,
                     tls_cert_option, tls_key_option, tls_ca_option});
  parser.process(app);
  QString token_file = parser.value(token_option);
  if (token_file.isEmpty()) token_file = qEnvironmentVariable(stagecraft::control::kTokenFileVariable);
  if (!token_file.isEmpty()) {
    try {
      stagecraft::control::readTokenFile(token_file.toStdString());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stagecraft: %s\n", e.what());
      return 2;
    }
  }
  bool port_ok = false;
  const uint beacon_port = parser.value(beacon_option).toUInt(&port_ok);
  if (!port_ok || beacon_port == 0 || beacon_port > 65535) {
    std::fprintf(stderr, "%s\n", qPrintable(QApplication::translate("main", "--beacon-port takes a port between 1 and 65535.")));
    return 2;
  }

  stagecraft::gui::MainWindow window;
  window.show();
  window.startDiscovery(static_cast<quint16>(beacon_port));
  window.useTokenFile(token_file);
  const stagecraft::control::TlsFiles tls = stagecraft::control::tlsFilesOrEnvironment(
      {parser.value(tls_cert_option).toStdString(), parser.value(tls_key_option).toStdString(),
       parser.value(tls_ca_option).toStdString()});
  window.useTls(QString::fromStdString(tls.cert), QString::fromStdString(tls.key), QString::fromStdString(tls.ca));
  window.openStartup(parser.value(cluster_option), parser.value(model_option), parser.value(plan_option));
  return QApplication::exec();
}
