#pragma once

#include "cluster/cluster.h"
#include "sim/simulator.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft {

v1::SimulationReport toSimulationReport(const SimulationResult& result, const Plan& plan,
                                        const CostModel& cost, bool with_timeline);

v1::ChromeTrace toChromeTrace(const SimulationResult& result, const Cluster& cluster);

}  // namespace stagecraft
