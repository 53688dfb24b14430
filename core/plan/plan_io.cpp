#include "plan/plan_io.h"

#include "cluster/cluster.h"
#include "io/error.h"
#include "model/zoo.h"

namespace stagecraft {

v1::Plan planToProto(const Plan& plan, const ModelSpec& model, const Cluster& cluster) {
  v1::Plan p;
  p.set_model(model.name());
  if (!isZooModel(model.name())) *p.mutable_model_spec() = model.proto();
  p.set_cluster(cluster.name());
  p.set_planner(plan.planner);
  p.set_batch_size(plan.batch_size);
  p.set_microbatches(plan.microbatches);
  p.set_schedule(std::string(scheduleName(plan.schedule)));
  p.set_optimizer(std::string(optimizerName(plan.optimizer)));
  for (const auto& st : plan.stages) {
    auto* out = p.add_stages();
    out->set_layer_begin(st.layer_begin);
    out->set_layer_end(st.layer_end);
    for (const auto& m : st.members) {
      auto* share = out->add_devices();
      share->set_device(m.device >= 0 && m.device < cluster.size() ? cluster.device(m.device).name : "?");
      share->set_samples(m.samples);
    }
  }
  return p;
}

Plan planFromProto(const v1::Plan& proto, const Cluster& cluster) {
  Plan plan;
  plan.model = proto.model();
  plan.cluster = proto.cluster();
  plan.planner = proto.planner();
  plan.batch_size = proto.batch_size();
  plan.microbatches = proto.microbatches();
  plan.schedule = proto.schedule().empty() ? Schedule::OneFOneB : parseSchedule(proto.schedule());
  if (plan.schedule == Schedule::Invalid) {
    throw Error("plan: schedule must be 1f1b or gpipe, got '" + proto.schedule() + "'");
  }
  plan.optimizer = proto.optimizer().empty() ? Optimizer::Sgd : parseOptimizer(proto.optimizer());
  if (plan.optimizer == Optimizer::Invalid) {
    throw Error("plan: optimizer must be sgd or adam, got '" + proto.optimizer() + "'");
  }
  for (int s = 0; s < proto.stages_size(); ++s) {
    const auto& in = proto.stages(s);
    Stage st;
    st.layer_begin = in.layer_begin();
    st.layer_end = in.layer_end();
    for (const auto& share : in.devices()) {
      const auto d = cluster.find(share.device());
      if (!d) {
        throw Error("plan: stage " + std::to_string(s) + " names device '" + share.device() +
                    "', which is not in cluster '" + cluster.name() + "'");
      }
      st.members.push_back({*d, share.samples()});
    }
    plan.stages.push_back(std::move(st));
  }
  return plan;
}

ModelSpec modelOfPlan(const v1::Plan& proto) {
  if (proto.has_model_spec()) return ModelSpec::fromProto(proto.model_spec());
  if (proto.model().empty()) throw Error("plan: names no model");
  return ModelSpec::fromProto(zooModel(proto.model()));
}

}  // namespace stagecraft
