// The optimizer's per-parameter state as named tensors, so a stage's training can move to
// another worker (or another split) and continue exactly: SGD's momentum buffers, Adam's
// moments and step counts. LibTorch keys that state by the parameter's TensorImpl.
#include <c10/util/string_utils.h>

#include <map>

#include "io/error.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

std::string keyOf(const torch::Tensor& parameter) { return c10::guts::to_string(parameter.unsafeGetTensorImpl()); }

std::string shapeOf(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

bool isOptimizerStateName(const std::string& name) { return name.find('#') != std::string::npos; }

std::vector<std::pair<std::string, torch::Tensor>> optimizerStateTensors(torch::optim::Optimizer& optimizer,
                                                                         StageModule& module) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  auto& state = optimizer.state();
  for (const auto& p : module->named_parameters()) {
    const auto it = state.find(keyOf(p.value()));
    if (it == state.end()) continue;  // no step taken yet
    if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      if (sgd->momentum_buffer().defined()) out.emplace_back(p.key() + "#momentum_buffer", sgd->momentum_buffer());
    } else if (auto* adam = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
      out.emplace_back(p.key() + "#step", torch::tensor(adam->step(), torch::kInt64));
      out.emplace_back(p.key() + "#exp_avg", adam->exp_avg());
      out.emplace_back(p.key() + "#exp_avg_sq", adam->exp_avg_sq());
    }
  }
  return out;
}

std::vector<v1::Tensor> optimizerState(torch::optim::Optimizer& optimizer, StageModule& module) {
  std::vector<v1::Tensor> out;
  for (const auto& [name, tensor] : optimizerStateTensors(optimizer, module)) out.push_back(toProto(tensor, name));
  return out;
}

void setOptimizerState(torch::optim::Optimizer& optimizer, StageModule& module,
                       const std::vector<const v1::Tensor*>& tensors) {
  const bool sgd = dynamic_cast<torch::optim::SGD*>(&optimizer) != nullptr;
  const bool adam = dynamic_cast<torch::optim::Adam*>(&optimizer) != nullptr;
  std::map<std::string, torch::Tensor> parameters;
  for (const auto& p : module->named_parameters()) parameters.emplace(p.key(), p.value());
  // parameter -> state name -> value; everything checked before the optimizer changes.
  std::map<std::string, std::map<std::string, torch::Tensor>> given;
  for (const v1::Tensor* t : tensors) {
    const auto hash = t->name().find('#');
    const std::string parameter = t->name().substr(0, hash);
    const std::string kind = t->name().substr(hash + 1);
    const auto p = parameters.find(parameter);
    if (p == parameters.end()) {
      throw Error("optimizer state '" + t->name() + "' is for parameter '" + parameter + "', which the stage lacks");
    }
    const bool known = sgd ? kind == "momentum_buffer" : adam && (kind == "step" || kind == "exp_avg" || kind == "exp_avg_sq");
    if (!known) {
      throw Error("optimizer state '" + t->name() + "' does not fit this stage's " + (sgd ? "SGD" : "Adam") + " optimizer");
    }
    torch::Tensor value = fromProto(*t);
    const bool shape_ok = kind == "step" ? value.numel() == 1 && value.scalar_type() == torch::kInt64
                                         : value.sizes() == p->second.sizes() && value.scalar_type() == torch::kFloat32;
    if (!shape_ok) {
      throw Error("optimizer state '" + t->name() + "': shape " + shapeOf(value.sizes()) +
                  " does not match parameter shape " + shapeOf(p->second.sizes()));
    }
    if (!given[parameter].emplace(kind, value).second) throw Error("optimizer state '" + t->name() + "' given twice");
  }
  if (adam) {
    for (const auto& [parameter, kinds] : given) {
      if (kinds.size() != 3) throw Error("Adam state of parameter '" + parameter + "' needs step, exp_avg and exp_avg_sq");
    }
  }
  auto& state = optimizer.state();
  state.clear();
  for (const auto& [parameter, kinds] : given) {
    const torch::Tensor& p = parameters.at(parameter);
    if (sgd) {
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(kinds.at("momentum_buffer").clone());
      state[keyOf(p)] = std::move(s);
    } else {
      auto s = std::make_unique<torch::optim::AdamParamState>();
      s->step(kinds.at("step").item<std::int64_t>());
      s->exp_avg(kinds.at("exp_avg").clone());
      s->exp_avg_sq(kinds.at("exp_avg_sq").clone());
      state[keyOf(p)] = std::move(s);
    }
  }
}

}  // namespace stagecraft::worker
