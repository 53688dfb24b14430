#pragma once

// qcustomplot.h declares its signals with `signals:` and loops with `foreach`, which
// stagecraft_gui's QT_NO_KEYWORDS removes. Include QCustomPlot only through this header:
// it lends the keywords for the include and takes them back afterwards.
#ifdef QT_NO_KEYWORDS
#include <QtGlobal>
#include <QObject>
#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
#else
#include <qcustomplot.h>
#endif
