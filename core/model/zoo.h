#pragma once

#include <string>
#include <vector>

#include "model/model_spec.h"

namespace stagecraft {

/// Names of the built-in models: mlp, vgg11, resnet18, mobilenetv2, gpt-mini.
std::vector<std::string> zooModelNames();

bool isZooModel(const std::string& name);

/// The built-in model `name`; throws Error listing the known names otherwise.
v1::Model zooModel(const std::string& name);

/// A zoo model's name, or the path of a model JSON file (protobuf JSON of v1::Model).
ModelSpec loadModel(const std::string& name_or_path);

}  // namespace stagecraft
