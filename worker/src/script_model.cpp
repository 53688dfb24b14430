// TorchScript models: the shape probe, a stage's children, export. The only translation
// unit that includes LibTorch's JIT headers.

#include "script_model.h"

#include <torch/script.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "io/error.h"
#include "io/json_io.h"
#include "script_tool.h"
#include "model_cache.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

namespace fs = std::filesystem;
using torch::jit::Module;

/// The first line of a LibTorch error: the rest is a C++ backtrace.
std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

/// The last non-empty line of the interpreter's error ("RuntimeError: mat1 and mat2 ..."):
/// the lines before it are TorchScript tracebacks.
std::string lastLine(const std::string& text) {
  std::string last;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    if (text.find_first_not_of(" \t\r", begin) < end) last = text.substr(begin, end - begin);
    begin = end + 1;
  }
  return last;
}

Module loadFile(const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw Error(file + ": no such file");
  try {
    Module module = torch::jit::load(file, torch::kCPU);
    module.train(true);
    return module;
  } catch (const c10::Error& e) {
    throw Error(file + ": not a TorchScript file (save it with torch.jit.script(model).save(...) or "
                       "torch.jit.trace): " + firstLine(e.what()));
  }
}

/// "Conv2d" for "__torch__.torch.nn.modules.conv.___torch_mangle_3.Conv2d".
std::string typeName(const Module& module) {
  const auto name = module.type()->name();
  if (!name) return "module";
  const std::string qualified = name->qualifiedName();
  return qualified.substr(qualified.rfind('.') + 1);
}

bool isSequential(const Module& module) {
  const auto name = module.type()->name();
  if (!name) return false;
  const std::string qualified = name->qualifiedName();
  return typeName(module) == "Sequential" && qualified.find("torch.nn.modules.container") != std::string::npos;
}

/// The children of a Sequential, nested Sequentials flattened, with their dotted paths.
void flatten(const Module& module, const std::string& prefix, std::vector<std::pair<std::string, Module>>& out) {
  for (const auto& child : module.named_children()) {
    const std::string path = prefix.empty() ? child.name : prefix + "." + child.name;
    if (isSequential(child.value)) {
      flatten(child.value, path, out);
    } else {
      out.emplace_back(path, child.value);
    }
  }
}

std::optional<Module> findChild(const Module& root, const std::string& path) {
  Module at = root;
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const std::size_t dot = std::min(path.find('.', begin), path.size());
    const std::string name = path.substr(begin, dot - begin);
    std::optional<Module> next;
    for (const auto& child : at.named_children()) {
      if (child.name == name) next = child.value;
    }
    if (!next) return std::nullopt;
    at = *next;
    begin = dot + 1;
  }
  return at;
}

/// A child's mirror that also switches the script between training and eval mode, so
/// the stage's train()/eval() reach its dropout and norm layers.
class ScriptChild : public torch::nn::Module {
 public:
  ScriptChild(std::string name, torch::jit::Module script)
      : torch::nn::Module(std::move(name)), script_(std::move(script)) {}
  void train(bool on = true) override {
    torch::nn::Module::train(on);
    script_.train(on);
  }

 private:
  torch::jit::Module script_;  // (inside this class, plain `Module` names the base)
};

/// An nn::Module tree over `module`'s own tensors (not copies); the root is `root` when given.
std::shared_ptr<torch::nn::Module> mirror(const Module& module, std::shared_ptr<torch::nn::Module> root = nullptr) {
  auto out = root ? std::move(root) : std::make_shared<torch::nn::Module>(typeName(module));
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    out->register_parameter(p.name, p.value, p.value.requires_grad());
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false)) out->register_buffer(b.name, b.value);
  for (const auto& child : module.named_children()) out->register_module(child.name, mirror(child.value));
  return out;
}

torch::Tensor runChild(Module& child, const torch::Tensor& x, const std::string& path) {
  c10::IValue y;
  try {
    y = child.forward({x});
  } catch (const c10::Error& e) {
    throw Error("child '" + path + "' (" + typeName(child) + "): " + firstLine(e.what()));
  } catch (const std::runtime_error& e) {  // the interpreter's JITException
    throw Error("child '" + path + "' (" + typeName(child) + "): " + lastLine(e.what()));
  }
  if (!y.isTensor()) {
    throw Error("child '" + path + "' (" + typeName(child) + ") returns " + y.tagKind() +
                ": each child of the Sequential must take one tensor and return one");
  }
  return y.toTensor();
}

std::string shapeText(c10::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

double perSample(const torch::Tensor& t) { return static_cast<double>(t.numel()) / static_cast<double>(t.size(0)); }

/// FLOPs per sample of `child` mapping x to y by the formula for its kind; nullopt when
/// the kind has none here (the caller times it).
std::optional<double> formulaFlops(const Module& child, const std::string& type, const torch::Tensor& x,
                                   const torch::Tensor& y) {
  auto weight = [&]() -> std::optional<torch::Tensor> {
    for (const auto& p : child.named_parameters(false)) {
      if (p.name == "weight") return p.value;
    }
    return std::nullopt;
  };
  static const std::set<std::string> elementwise = {
      "ReLU", "ReLU6", "GELU", "SiLU", "Sigmoid", "Tanh", "LeakyReLU", "ELU", "Hardtanh", "Hardswish", "Mish",
      "Softmax", "LogSoftmax", "Dropout", "Dropout2d", "Embedding"};
  static const std::set<std::string> free = {"Flatten", "Unflatten", "Identity"};
  static const std::set<std::string> norms = {"BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm",
                                              "InstanceNorm2d"};
  static const std::set<std::string> pools = {"MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
                                              "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d"};
  if (type == "Linear" || type == "Conv1d" || type == "Conv2d" || type == "Conv3d") {
    const auto w = weight();
    if (!w || w->dim() < 2) return std::nullopt;
    // Every output element is a dot product over the weight's other dimensions.
    const double per_output = static_cast<double>(w->numel()) / static_cast<double>(w->size(0));
    return 2.0 * per_output * perSample(y);
  }
  if (type == "TransformerEncoderLayer" && y.dim() == 3) {
    // Every weight is used once per token (the projections and the MLP), and attention
    // multiplies T x T scores by D-wide keys and values: 2 x 2 T^2 D.
    double weights = 0;
    for (const auto& p : child.parameters()) {
      if (p.dim() >= 2) weights += static_cast<double>(p.numel());
    }
    const double tokens = static_cast<double>(y.size(1)), width = static_cast<double>(y.size(2));
    return 2.0 * weights * tokens + 4.0 * tokens * tokens * width;
  }
  if (free.count(type)) return 0.0;
  if (elementwise.count(type)) return perSample(y);
  if (norms.count(type)) return 5.0 * perSample(y);
  if (pools.count(type)) return perSample(x);
  return std::nullopt;
}

/// This machine's float32 matmul rate, FLOP/s, for converting timed children to FLOPs.
double matmulRate() {
  torch::NoGradGuard no_grad;
  const auto a = torch::ones({256, 512});
  const auto b = torch::ones({512, 512});
  (void)torch::mm(a, b);
  const auto begin = std::chrono::steady_clock::now();
  constexpr int kRepeats = 8;
  for (int i = 0; i < kRepeats; ++i) (void)torch::mm(a, b);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return kRepeats * 2.0 * 256 * 512 * 512 / std::max(s, 1e-9);
}

/// Median seconds of `child`'s forward on `x`.
double timedForward(Module& child, const torch::Tensor& x, const std::string& path) {
  torch::NoGradGuard no_grad;
  std::vector<double> times;
  for (int i = 0; i < 4; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    (void)runChild(child, x, path);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  }
  std::sort(times.begin() + 1, times.end());  // the first run compiles
  return times[2];
}

}  // namespace

std::vector<ScriptedLayer> loadScriptedLayers(const std::string& file, const std::vector<std::string>& module_paths) {
  Module root = loadFile(file);
  std::vector<ScriptedLayer> out;
  for (const std::string& path : module_paths) {
    std::optional<Module> child = findChild(root, path);
    if (!child) throw Error(file + ": has no child '" + path + "' (the model was imported from another file)");
    Module module = *child;
    out.push_back({mirror(module, std::make_shared<ScriptChild>(typeName(module), module)),
                   [module, path](torch::Tensor x) mutable { return runChild(module, x, path); }});
  }
  return out;
}

v1::Model inspectScriptedModel(const std::string& file, const std::vector<int>& input_shape) {
  Module root = loadFile(file);
  const std::string shown = fs::path(file).filename().string();
  if (!isSequential(root)) {
    throw Error(file + ": its top level is " + typeName(root) +
                "; Stagecraft trains a TorchScript nn.Sequential (nested Sequentials are flattened): put the "
                "model's layers in an nn.Sequential before torch.jit.script or torch.jit.trace");
  }
  std::vector<std::pair<std::string, Module>> children;
  flatten(root, "", children);
  if (children.empty()) throw Error(file + ": the Sequential has no layers");
  if (input_shape.empty()) throw Error(file + ": --input-shape is needed (C,H,W for images, D for vectors, T for tokens)");
  for (int d : input_shape) {
    if (d <= 0 || d > (1 << 20)) throw Error(file + ": --input-shape has a dimension out of range: " + std::to_string(d));
  }

  v1::Model model;
  model.set_name(fs::path(file).stem().string());
  model.mutable_input_shape()->Assign(input_shape.begin(), input_shape.end());
  const bool tokens = typeName(children.front().second) == "Embedding";
  model.set_input_dtype(tokens ? "int64" : "float32");

  constexpr int kProbeBatch = 2;
  std::vector<std::int64_t> batch_shape{kProbeBatch};
  batch_shape.insert(batch_shape.end(), input_shape.begin(), input_shape.end());
  torch::manual_seed(0);
  torch::Tensor x;
  if (tokens) {
    std::int64_t vocab = 1;
    for (const auto& p : children.front().second.named_parameters(false)) vocab = p.value.size(0);
    x = torch::randint(vocab, batch_shape, torch::kInt64);
  } else {
    x = torch::randn(batch_shape);
  }

  std::optional<double> rate;
  double total_params = 0;
  for (auto& [path, child] : children) {
    const std::string type = typeName(child);
    torch::Tensor y;
    {
      torch::NoGradGuard no_grad;
      try {
        y = runChild(child, x, path);
      } catch (const Error& e) {
        throw Error(file + ": " + e.what() + " (for input " + shapeText(x.sizes().slice(1)) +
                    " per sample; is --input-shape right?)");
      }
    }
    if (y.dim() < 1 || y.size(0) != kProbeBatch) {
      throw Error(file + ": child '" + path + "' (" + type + ") returns " + shapeText(y.sizes()) +
                  " for a batch of " + std::to_string(kProbeBatch) + ": the batch must stay the first dimension");
    }
    if (!y.is_floating_point()) {
      throw Error(file + ": child '" + path + "' (" + type + ") returns " + std::string(c10::toString(y.scalar_type())) +
                  ": only the model's input may be token ids");
    }
    auto* layer = model.add_layers();
    layer->set_name(path + ":" + type);
    layer->set_kind("torchscript");
    layer->set_module_path(path);
    layer->set_module_type(type);
    for (std::int64_t i = 1; i < x.dim(); ++i) layer->add_input_shape(static_cast<int>(x.size(i)));
    for (std::int64_t i = 1; i < y.dim(); ++i) layer->add_output_shape(static_cast<int>(y.size(i)));
    std::int64_t params = 0;
    for (const auto& p : child.parameters()) {
      if (p.requires_grad()) params += p.numel();
    }
    layer->set_parameter_count(params);
    total_params += static_cast<double>(params);
    if (const auto flops = formulaFlops(child, type, x, y)) {
      layer->set_forward_flops(*flops);
      layer->set_flops_source("formula");
    } else {
      if (!rate) rate = matmulRate();
      layer->set_forward_flops(timedForward(child, x, path) * *rate / kProbeBatch);
      layer->set_flops_source("timed");
    }
    // Backward keeps the layer's input and output (a bound for the usual kinds).
    layer->set_saved_bytes(static_cast<double>(x.element_size()) * perSample(x) + 4.0 * perSample(y));
    x = y;
  }

  const auto out = x.sizes().slice(1);
  if (out.size() == 1) {
    model.set_task("classification");
  } else if (tokens && out.size() == 2 && out[0] == input_shape.front()) {
    model.set_task("language_model");
  } else {
    throw Error(file + ": a sample's output is " + shapeText(out) +
                "; Stagecraft trains classifiers (output [classes], logits) and language models (token input, "
                "output [T, vocab])");
  }
  model.set_num_classes(static_cast<int>(out.back()));
  model.set_description("TorchScript " + shown + ": " + std::to_string(children.size()) + " layers, " +
                        std::to_string(static_cast<long long>(total_params)) + " parameters");
  auto* script = model.mutable_script();
  script->set_file_name(shown);
  script->set_path(fs::absolute(file).lexically_normal().string());
  script->set_size(static_cast<std::int64_t>(fs::file_size(file)));
  script->set_sha256(sha256OfFile(file));
  return model;
}

void exportScriptedModel(const v1::Checkpoint& checkpoint, const std::string& file, const std::string& out) {
  const v1::Model& model = checkpoint.model();
  if (!model.has_script()) throw Error("the checkpoint's model '" + model.name() + "' is not a TorchScript model");
  if (const std::string sha = sha256OfFile(file); sha != model.script().sha256()) {
    throw Error(file + ": is not the file the model was imported from (its SHA-256 differs)");
  }
  Module root = loadFile(file);
  std::map<std::string, torch::Tensor> named;
  for (const auto& p : root.named_parameters(true)) named.emplace(p.name, p.value);
  for (const auto& b : root.named_buffers(true)) named.emplace(b.name, b.value);

  torch::NoGradGuard no_grad;
  int written = 0;
  for (const v1::Tensor& tensor : checkpoint.weights().tensors()) {
    const std::string& name = tensor.name();
    if (name.find('#') != std::string::npos) continue;  // optimizer state
    // A stage names a tensor "<layer index>.<name within the child>".
    const auto dot = name.find('.');
    int index = -1;
    try {
      index = std::stoi(name.substr(0, dot));
    } catch (const std::exception&) {
    }
    if (dot == std::string::npos || index < 0 || index >= model.layers_size()) {
      throw Error("checkpoint tensor '" + name + "' names no layer of model '" + model.name() + "'");
    }
    const std::string user_name = model.layers(index).module_path() + name.substr(dot);
    const auto found = named.find(user_name);
    if (found == named.end()) throw Error(file + ": has no tensor '" + user_name + "' (checkpoint '" + name + "')");
    const torch::Tensor value = fromProto(tensor);
    if (!value.sizes().equals(found->second.sizes())) {
      throw Error("'" + user_name + "': the checkpoint's shape " + shapeText(value.sizes()) + " is not the file's " +
                  shapeText(found->second.sizes()));
    }
    found->second.copy_(value.to(found->second.scalar_type()));
    ++written;
  }
  if (written == 0) throw Error("the checkpoint holds no weights");
  try {
    root.save(out);
  } catch (const c10::Error& e) {
    throw Error(out + ": cannot write: " + firstLine(e.what()));
  }
}

}  // namespace stagecraft::worker

// ---- the model commands (script_tool.h) ----------------------------------------------

namespace stagecraft::worker {
namespace {

constexpr const char* kModelCommandsUsage =
    "usage: stagecraft-worker inspect-model FILE.pt --input-shape C,H,W|D|T\n"
    "       stagecraft-worker export-model CHECKPOINT --out FILE.pt [--script SOURCE.pt]\n"
    "\n"
    "inspect-model  the shape probe of a TorchScript nn.Sequential: prints the model as\n"
    "               Stagecraft plans it (JSON of stagecraft.v1.Model) on stdout\n"
    "export-model   writes a checkpoint's trained weights (CHECKPOINT: a run's\n"
    "               --checkpoint-dir or its checkpoint.pb) into the TorchScript file the\n"
    "               model came from (SOURCE.pt, by default the path the checkpoint names)\n";

std::vector<int> parseShape(const std::string& text) {
  std::vector<int> shape;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string part = text.substr(begin, comma - begin);
    int value = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || value <= 0) {
      throw Error("--input-shape: '" + text + "' is not a list of positive sizes such as 3,32,32");
    }
    shape.push_back(value);
    begin = comma + 1;
  }
  return shape;
}

v1::Checkpoint readCheckpointFile(const std::string& given) {
  std::error_code ec;
  const std::string path = fs::is_directory(given, ec) ? (fs::path(given) / "checkpoint.pb").string() : given;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot be read");
  v1::Checkpoint checkpoint;
  if (!checkpoint.ParseFromIstream(&in)) throw Error(path + ": not a Stagecraft checkpoint");
  return checkpoint;
}

}  // namespace

bool isModelCommand(const std::string& first_argument) {
  return first_argument == "inspect-model" || first_argument == "export-model";
}

int runModelCommand(const std::vector<std::string>& args) {
  try {
    std::string positional, input_shape, out, script;
    for (std::size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size()) throw Error(a + ": needs a value");
        return args[++i];
      };
      if (a == "--help" || a == "-h") {
        std::fputs(kModelCommandsUsage, stdout);
        return 0;
      } else if (a == "--input-shape") {
        input_shape = value();
      } else if (a == "--out") {
        out = value();
      } else if (a == "--script") {
        script = value();
      } else if (a.rfind("--", 0) == 0 || !positional.empty()) {
        throw Error("unexpected argument '" + a + "'\n" + kModelCommandsUsage);
      } else {
        positional = a;
      }
    }
    if (positional.empty()) throw Error(std::string("a file is needed\n") + kModelCommandsUsage);
    if (args[0] == "inspect-model") {
      const v1::Model model = inspectScriptedModel(positional, parseShape(input_shape));
      std::fputs(io::toJson(model).c_str(), stdout);
      std::fputc('\n', stdout);
      return 0;
    }
    if (out.empty()) throw Error("export-model: --out FILE.pt is needed");
    const v1::Checkpoint checkpoint = readCheckpointFile(positional);
    exportScriptedModel(checkpoint, script.empty() ? checkpoint.model().script().path() : script, out);
    std::fprintf(stderr, "stagecraft-worker: wrote %s (step %lld)\n", out.c_str(),
                 static_cast<long long>(checkpoint.step()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stagecraft-worker: %s\n", e.what());
    return 2;
  }
}

}  // namespace stagecraft::worker
