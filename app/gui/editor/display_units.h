#pragma once

#include <QColor>
#include <QString>

#include "cluster/cluster.h"
#include "cost/cost_basis.h"
#include "stagecraft/v1/model.pb.h"

namespace stagecraft::gui {

/// "1.2 GFLOP": FLOPs with an SI prefix.
QString formatFlops(double flops);
/// "11.2 M": a count with an SI prefix (k, M, G).
QString formatCount(double count);
/// "392 KiB": bytes with a binary prefix.
QString formatBytes(double bytes);
/// "12.3 ms" / "1.24 s".
QString formatMs(double ms);

/// The console's colour of a tier: cloud blue, edge green, end orange (grey when invalid).
QColor tierColor(Tier tier);
/// "cloud", "edge", "end", translated.
QString tierLabel(Tier tier);
/// A layer kind as a model file spells it ("conv2d"), in words ("Convolution"), translated;
/// an unknown kind as it is.
QString layerKindLabel(const std::string& kind);
/// The label of `layer`'s kind; a TorchScript child shows its PyTorch class ("Conv2d").
QString layerKindLabel(const v1::Layer& layer);
/// Where a prediction comes from, as every figure says it: "from specs", "profiled",
/// "calibrated from training", translated.
QString costSourceLabel(CostSource source);

}  // namespace stagecraft::gui
