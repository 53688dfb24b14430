// Deterministic, endless training data: sample g is a pure function of (config, model, g).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <numbers>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_map>

#include "data_paths.h"
#include "image_decode.h"
#include "io/error.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash3(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  return splitmix64(splitmix64(splitmix64(seed) ^ a) ^ (b * 0xd1342543de82ef95ULL));
}

/// A small generator of our own, so the data do not depend on LibTorch's RNG algorithms
/// or on any other user of its default generator.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return splitmix64(state_++); }
  /// Uniform in (0, 1).
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  void fillNormal(float* out, std::int64_t n, float scale) {
    for (std::int64_t i = 0; i < n; i += 2) {
      const double r = std::sqrt(-2.0 * std::log(uniform()));
      const double theta = 2.0 * std::numbers::pi * uniform();
      out[i] = static_cast<float>(scale * r * std::cos(theta));
      if (i + 1 < n) out[i + 1] = static_cast<float>(scale * r * std::sin(theta));
    }
  }

 private:
  std::uint64_t state_;
};

enum Stream : std::uint64_t { kLabel = 1, kNoise = 2, kPrototype = 3, kStart = 4, kRule = 5, kOrder = 6, kHoldout = 7 };

std::vector<std::int64_t> batchShape(int count, const std::vector<std::int64_t>& sample) {
  std::vector<std::int64_t> shape{count};
  shape.insert(shape.end(), sample.begin(), sample.end());
  return shape;
}

void checkRange(std::int64_t first, int count) {
  if (first < 0 || count < 0) {
    throw Error("samples [" + std::to_string(first) + ", +" + std::to_string(count) + ") are not a valid range");
  }
}

std::string modelLabel(const v1::Model& model) {
  return model.name().empty() ? std::string("model") : "model '" + model.name() + "'";
}

std::vector<std::int64_t> inputShape(const v1::Model& model) {
  std::vector<std::int64_t> shape(model.input_shape().begin(), model.input_shape().end());
  if (shape.empty()) throw Error(modelLabel(model) + ": input_shape is empty");
  for (auto d : shape) {
    if (d <= 0) throw Error(modelLabel(model) + ": input_shape has a non-positive dimension");
  }
  return shape;
}

std::int64_t product(const std::vector<std::int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

/// Classification: a fixed random prototype per class plus per-sample noise.
class SyntheticClassification final : public DataSource {
 public:
  SyntheticClassification(const v1::Model& model, std::uint64_t seed)
      : seed_(seed), classes_(model.num_classes()), shape_(inputShape(model)), elements_(product(shape_)) {
    if (classes_ <= 0) throw Error(modelLabel(model) + ": num_classes must be positive");
    prototypes_.resize(static_cast<size_t>(classes_ * elements_));
    for (int c = 0; c < classes_; ++c) {
      Rng(hash3(seed_, kPrototype, c)).fillNormal(prototypes_.data() + c * elements_, elements_, 1.0f);
    }
  }

  Samples get(std::int64_t first, int count) override {
    checkRange(first, count);
    Samples s{torch::empty(batchShape(count, shape_), torch::kFloat32), torch::empty({count}, torch::kInt64)};
    float* x = s.inputs.data_ptr<float>();
    auto* y = s.labels.data_ptr<std::int64_t>();
    for (int k = 0; k < count; ++k) {
      const auto g = static_cast<std::uint64_t>(first + k);
      const std::int64_t label = labelOf(g);
      y[k] = label;
      float* row = x + k * elements_;
      Rng(hash3(seed_, kNoise, g)).fillNormal(row, elements_, 1.0f);
      const float* proto = prototypes_.data() + label * elements_;
      for (std::int64_t i = 0; i < elements_; ++i) row[i] = (row[i] + proto[i]) * kScale;
    }
    return s;
  }

  /// The last stage's labels without the inputs (2048 normal values a sample for the mlp,
  /// which it would otherwise draw inside its timed forward pass).
  torch::Tensor labels(std::int64_t first, int count) override {
    checkRange(first, count);
    torch::Tensor labels = torch::empty({count}, torch::kInt64);
    auto* y = labels.data_ptr<std::int64_t>();
    for (int k = 0; k < count; ++k) y[k] = labelOf(static_cast<std::uint64_t>(first + k));
    return labels;
  }

 private:
  std::int64_t labelOf(std::uint64_t sample) const {
    return static_cast<std::int64_t>(hash3(seed_, kLabel, sample) % static_cast<std::uint64_t>(classes_));
  }

  // Prototype and noise are both N(0, 1); their sum is halved, giving inputs of variance
  // 0.5 like normalised images. Larger inputs make the zoo's mlp (8 plain layers, 2048
  // wide) unstable under SGD at lr 0.05 with momentum 0.9 within a few steps.
  static constexpr float kScale = 0.5f;
  std::uint64_t seed_;
  int classes_;
  std::vector<std::int64_t> shape_;
  std::int64_t elements_;
  std::vector<float> prototypes_;
};

/// Language model: token sequences following t' = (a t + b) mod vocab from a random start;
/// the labels are the next tokens.
class SyntheticSequence final : public DataSource {
 public:
  SyntheticSequence(const v1::Model& model, std::uint64_t seed) : seed_(seed), shape_(inputShape(model)) {
    if (shape_.size() != 1) throw Error(modelLabel(model) + ": token input_shape must be [sequence length]");
    vocab_ = model.num_classes();
    if (model.layers_size() > 0 && model.layers(0).vocab_size() > 0) {
      vocab_ = std::min<std::int64_t>(vocab_, model.layers(0).vocab_size());
    }
    if (vocab_ <= 1) throw Error(modelLabel(model) + ": a language model needs a vocabulary of at least 2");
    Rng rng(hash3(seed_, kRule, 0));
    do {
      a_ = 1 + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(vocab_ - 1)));
    } while (std::gcd(a_, vocab_) != 1 && vocab_ > 2);
    b_ = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(vocab_)));
  }

  Samples get(std::int64_t first, int count) override {
    checkRange(first, count);
    const std::int64_t seq = shape_[0];
    Samples s{torch::empty({count, seq}, torch::kInt64), torch::empty({count, seq}, torch::kInt64)};
    auto* x = s.inputs.data_ptr<std::int64_t>();
    auto* y = s.labels.data_ptr<std::int64_t>();
    for (int k = 0; k < count; ++k) {
      std::int64_t t = static_cast<std::int64_t>(hash3(seed_, kStart, static_cast<std::uint64_t>(first + k)) %
                                                 static_cast<std::uint64_t>(vocab_));
      for (std::int64_t i = 0; i < seq; ++i) {
        x[k * seq + i] = t;
        t = (a_ * t + b_) % vocab_;
        y[k * seq + i] = t;
      }
    }
    return s;
  }

 private:
  std::uint64_t seed_;
  std::vector<std::int64_t> shape_;
  std::int64_t vocab_ = 0, a_ = 1, b_ = 0;
};

std::string readFile(const std::string& path, const std::string& what) {
  if (path.empty()) throw Error(what + ": no file given");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw environmentError(what + " '" + path + "': cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw environmentError(what + " '" + path + "': read error");
  return std::move(bytes).str();
}

std::uint32_t bigEndian32(const std::string& bytes, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + offset);
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

/// Sample g of a data set of n samples in a seeded order that is a fresh permutation of
/// the training samples in every epoch (epoch g / their count): every one once per epoch.
/// The order is a Fisher-Yates shuffle with our own generator, seeded by (seed, epoch).
/// With a holdout, that share of the n (at least one, chosen by the seed alone) is kept out
/// of training: the evaluation split visits those, in a fixed order. Not thread-safe.
class EpochOrder {
 public:
  EpochOrder(std::size_t n, std::uint64_t seed, double holdout = 0, bool eval = false) : seed_(seed), eval_(eval) {
    if (!(holdout >= 0 && holdout <= 0.5)) throw Error("holdout " + std::to_string(holdout) + " is not within 0 to 0.5");
    std::vector<std::uint32_t> all(n);
    std::iota(all.begin(), all.end(), 0u);
    std::size_t held = 0;
    if (holdout > 0) {
      held = std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(holdout * static_cast<double>(n))));
      if (held >= n) throw Error("a holdout of " + std::to_string(holdout) + " leaves no training samples of " + std::to_string(n));
      Rng rng(hash3(seed, kHoldout, 0));
      for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
    }
    if (eval) {
      if (held == 0) throw Error("no samples are held out for evaluation (holdout is 0)");
      members_.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(held));
    } else if (held > 0) {
      members_.assign(all.begin() + static_cast<std::ptrdiff_t>(held), all.end());
      std::sort(members_.begin(), members_.end());
    } else {
      members_ = std::move(all);
    }
  }
  std::size_t operator()(std::int64_t g) {
    const auto n = static_cast<std::int64_t>(members_.size());
    if (eval_) return members_[static_cast<size_t>(g % n)];
    return members_[order(g / n)[static_cast<size_t>(g % n)]];
  }

 private:
  const std::vector<std::uint32_t>& order(std::int64_t epoch) {
    auto it = orders_.find(epoch);
    if (it != orders_.end()) return it->second;
    if (orders_.size() >= 4) orders_.erase(orders_.begin());
    std::vector<std::uint32_t> perm(members_.size());
    std::iota(perm.begin(), perm.end(), 0u);
    Rng rng(hash3(seed_, kOrder, static_cast<std::uint64_t>(epoch)));
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
    return orders_.emplace(epoch, std::move(perm)).first->second;
  }

  std::uint64_t seed_;
  bool eval_;
  std::vector<std::uint32_t> members_;  // the split's sample indices
  std::map<std::int64_t, std::vector<std::uint32_t>> orders_;
};

/// The synthetic stream from `offset` on: samples never trained on, for evaluation.
class Shifted final : public DataSource {
 public:
  Shifted(std::unique_ptr<DataSource> inner, std::int64_t offset) : inner_(std::move(inner)), offset_(offset) {}
  Samples get(std::int64_t first, int count) override {
    checkRange(first, count);
    return inner_->get(first + offset_, count);
  }
  torch::Tensor labels(std::int64_t first, int count) override {
    checkRange(first, count);
    return inner_->labels(first + offset_, count);
  }

 private:
  std::unique_ptr<DataSource> inner_;
  std::int64_t offset_;
};

/// Images of one byte per value and one label byte each (MNIST, CIFAR-10), held in memory,
/// in EpochOrder.
class FileSamples final : public DataSource {
 public:
  FileSamples(std::vector<std::uint8_t> pixels, std::vector<std::uint8_t> labels, std::vector<std::int64_t> shape,
              const v1::DataConfig& config, bool eval)
      : pixels_(std::move(pixels)), labels_(std::move(labels)), shape_(std::move(shape)),
        elements_(product(shape_)), order_(labels_.size(), config.seed(), config.holdout(), eval) {}

  Samples get(std::int64_t first, int count) override {
    checkRange(first, count);
    Samples s{torch::empty(batchShape(count, shape_), torch::kFloat32), torch::empty({count}, torch::kInt64)};
    float* x = s.inputs.data_ptr<float>();
    auto* y = s.labels.data_ptr<std::int64_t>();
    std::lock_guard lock(mutex_);
    for (int k = 0; k < count; ++k) {
      const auto index = static_cast<std::int64_t>(order_(first + k));
      const std::uint8_t* image = pixels_.data() + index * elements_;
      for (std::int64_t i = 0; i < elements_; ++i) x[k * elements_ + i] = image[i] * (1.0f / 255.0f);
      y[k] = labels_[static_cast<size_t>(index)];
    }
    return s;
  }

  torch::Tensor labels(std::int64_t first, int count) override {
    checkRange(first, count);
    torch::Tensor labels = torch::empty({count}, torch::kInt64);
    auto* y = labels.data_ptr<std::int64_t>();
    std::lock_guard lock(mutex_);
    for (int k = 0; k < count; ++k) y[k] = labels_[order_(first + k)];
    return labels;
  }

 private:
  std::vector<std::uint8_t> pixels_, labels_;
  std::vector<std::int64_t> shape_;
  std::int64_t elements_;
  std::mutex mutex_;
  EpochOrder order_;
};

/// A folder of PNG and JPEG images, one sub-folder per class, decoded as asked for (a
/// worker decodes only the samples it reads) and kept in a cache of bounded size.
class ImageFolder final : public DataSource {
 public:
  ImageFolder(ImageFolderListing listing, std::vector<std::int64_t> shape, const v1::DataConfig& config, bool eval)
      : listing_(std::move(listing)), shape_(std::move(shape)), elements_(product(shape_)),
        order_(listing_.files.size(), config.seed(), config.holdout(), eval) {
    // One image decoded now, so that images of the wrong size or channels (most often all
    // of them) are refused at Deploy, not at the first step; the rest as they are read.
    image(0);
  }

  Samples get(std::int64_t first, int count) override {
    checkRange(first, count);
    Samples s{torch::empty(batchShape(count, shape_), torch::kFloat32), torch::empty({count}, torch::kInt64)};
    float* x = s.inputs.data_ptr<float>();
    auto* y = s.labels.data_ptr<std::int64_t>();
    std::lock_guard lock(mutex_);
    for (int k = 0; k < count; ++k) {
      const std::size_t index = order_(first + k);
      const std::vector<std::uint8_t>& planes = image(index);
      for (std::int64_t i = 0; i < elements_; ++i) x[k * elements_ + i] = planes[static_cast<size_t>(i)] * (1.0f / 255.0f);
      y[k] = listing_.labels[index];
    }
    return s;
  }

  torch::Tensor labels(std::int64_t first, int count) override {
    checkRange(first, count);
    torch::Tensor labels = torch::empty({count}, torch::kInt64);
    auto* y = labels.data_ptr<std::int64_t>();
    std::lock_guard lock(mutex_);
    for (int k = 0; k < count; ++k) y[k] = listing_.labels[order_(first + k)];
    return labels;
  }

 private:
  /// Decoded images kept, least recently used dropped first: at most this many bytes (or
  /// one image, were one larger).
  static constexpr std::size_t kCacheBytes = 256u << 20;

  const std::vector<std::uint8_t>& image(std::size_t index) {
    auto it = cache_.find(index);
    if (it != cache_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second.second);
      return it->second.first;
    }
    const std::string& path = listing_.files[index];
    const DecodedImage decoded = decodeImage(path, static_cast<int>(shape_[2]), static_cast<int>(shape_[1]));
    std::vector<std::uint8_t> planes = toPlanes(decoded, static_cast<int>(shape_[0]), path);
    while (!recent_.empty() && cached_bytes_ + planes.size() > kCacheBytes) {
      auto old = cache_.find(recent_.back());
      cached_bytes_ -= old->second.first.size();
      cache_.erase(old);
      recent_.pop_back();
    }
    cached_bytes_ += planes.size();
    recent_.push_front(index);
    return cache_.emplace(index, std::make_pair(std::move(planes), recent_.begin())).first->second.first;
  }

  ImageFolderListing listing_;
  std::vector<std::int64_t> shape_;
  std::int64_t elements_;
  std::mutex mutex_;
  EpochOrder order_;
  std::list<std::size_t> recent_;  ///< cached images, most recently used first
  std::unordered_map<std::size_t, std::pair<std::vector<std::uint8_t>, std::list<std::size_t>::iterator>> cache_;
  std::size_t cached_bytes_ = 0;
};

/// The model's input shape when it holds `elements` values, else an Error naming `file`.
std::vector<std::int64_t> imageShape(const v1::Model& model, std::int64_t elements, const std::string& file,
                                     const std::string& sample_shape) {
  if (model.input_dtype() == "int64") {
    throw Error("'" + file + "': images need a float32 model input, " + modelLabel(model) + " takes token ids");
  }
  auto shape = inputShape(model);
  if (product(shape) != elements) {
    std::string text;
    for (auto d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
    throw Error("'" + file + "': samples are " + sample_shape + " (" + std::to_string(elements) + " values), " +
                modelLabel(model) + " takes " + text + " (" + std::to_string(product(shape)) + ")");
  }
  return shape;
}

void checkLabels(const std::vector<std::uint8_t>& labels, const v1::Model& model, const std::string& file) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= model.num_classes()) {
      throw Error("'" + file + "': label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                  " is not below num_classes " + std::to_string(model.num_classes()));
    }
  }
}

std::unique_ptr<DataSource> mnist(const v1::DataConfig& config, const v1::Model& model, bool eval) {
  const std::string& images_path = config.path();
  const std::string& labels_path = config.labels_path();
  const std::string images = readFile(images_path, "MNIST images");
  if (images.size() < 16 || bigEndian32(images, 0) != 2051) {
    throw Error("MNIST images '" + images_path + "': not an IDX3 image file (magic 2051)");
  }
  const std::uint64_t n = bigEndian32(images, 4), rows = bigEndian32(images, 8), cols = bigEndian32(images, 12);
  if (n == 0 || rows == 0 || cols == 0) throw Error("MNIST images '" + images_path + "': holds no images");
  if (images.size() != 16 + n * rows * cols) {
    throw Error("MNIST images '" + images_path + "': " + std::to_string(images.size()) + " bytes, the header (" +
                std::to_string(n) + " images of " + std::to_string(rows) + "x" + std::to_string(cols) + ") needs " +
                std::to_string(16 + n * rows * cols));
  }
  const std::string labels = readFile(labels_path, "MNIST labels");
  if (labels.size() < 8 || bigEndian32(labels, 0) != 2049) {
    throw Error("MNIST labels '" + labels_path + "': not an IDX1 label file (magic 2049)");
  }
  if (bigEndian32(labels, 4) != n || labels.size() != 8 + n) {
    throw Error("MNIST labels '" + labels_path + "': " + std::to_string(bigEndian32(labels, 4)) +
                " labels in " + std::to_string(labels.size()) + " bytes, '" + images_path + "' holds " +
                std::to_string(n) + " images");
  }
  auto shape = imageShape(model, static_cast<std::int64_t>(rows * cols), images_path,
                          std::to_string(rows) + "x" + std::to_string(cols));
  std::vector<std::uint8_t> label_bytes(labels.begin() + 8, labels.end());
  checkLabels(label_bytes, model, labels_path);
  return std::make_unique<FileSamples>(std::vector<std::uint8_t>(images.begin() + 16, images.end()),
                                       std::move(label_bytes), std::move(shape), config, eval);
}

std::unique_ptr<DataSource> cifar10(const v1::DataConfig& config, const v1::Model& model, bool eval) {
  constexpr size_t kPixels = 3 * 32 * 32, kRecord = 1 + kPixels;
  const std::string& path = config.path();
  std::vector<std::string> files;
  std::error_code ec;
  if (!path.empty() && std::filesystem::is_directory(path, ec)) {
    // test_batch.bin is no training data.
    for (int b = 1; b <= kCifarTrainingBatches; ++b) {
      files.push_back((std::filesystem::path(path) / ("data_batch_" + std::to_string(b) + ".bin")).string());
    }
  } else {
    files.push_back(path);
  }
  auto shape = imageShape(model, kPixels, path, "3x32x32");
  std::vector<std::uint8_t> pixels, labels;
  for (const std::string& file : files) {
    const std::string bytes = readFile(file, "CIFAR-10 batch");
    if (bytes.empty() || bytes.size() % kRecord != 0) {
      throw Error("CIFAR-10 batch '" + file + "': " + std::to_string(bytes.size()) +
                  " bytes is not a whole number of 3073-byte records");
    }
    const size_t n = bytes.size() / kRecord, before = labels.size();
    pixels.resize((before + n) * kPixels);
    labels.resize(before + n);
    for (size_t i = 0; i < n; ++i) {
      labels[before + i] = static_cast<std::uint8_t>(bytes[i * kRecord]);
      std::memcpy(pixels.data() + (before + i) * kPixels, bytes.data() + i * kRecord + 1, kPixels);
    }
    std::vector<std::uint8_t> these(labels.begin() + static_cast<std::ptrdiff_t>(before), labels.end());
    checkLabels(these, model, file);
  }
  return std::make_unique<FileSamples>(std::move(pixels), std::move(labels), std::move(shape), config, eval);
}

std::unique_ptr<DataSource> imageFolder(const v1::DataConfig& config, const v1::Model& model, bool eval) {
  const std::string& dir = config.path();
  if (dir.empty()) throw Error("imagefolder data: no folder given (its data path)");
  if (!config.labels_path().empty()) {
    throw Error("imagefolder '" + dir + "': the labels are the class folders; give no labels path");
  }
  if (model.input_dtype() == "int64") {
    throw Error("imagefolder '" + dir + "': images need a float32 model input, " + modelLabel(model) +
                " takes token ids");
  }
  const auto shape = inputShape(model);
  if (shape.size() != 3 || (shape[0] != 1 && shape[0] != 3)) {
    std::string text;
    for (auto d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
    throw Error("imagefolder '" + dir + "': images need a model input of 1 or 3 channels, CxHxW; " +
                modelLabel(model) + " takes " + text);
  }
  ImageFolderListing listing = listImageFolder(dir);
  if (static_cast<std::int64_t>(listing.classes.size()) > model.num_classes()) {
    throw Error("imagefolder '" + dir + "' has " + std::to_string(listing.classes.size()) + " class folders, " +
                modelLabel(model) + " has num_classes " + std::to_string(model.num_classes()));
  }
  if (listing.files.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw Error("imagefolder '" + dir + "': more than 2^32 images");
  }
  return std::make_unique<ImageFolder>(std::move(listing), shape, config, eval);
}

}  // namespace

std::unique_ptr<DataSource> DataSource::create(const v1::DataConfig& config, const v1::Model& model, Split split) {
  const std::string& kind = config.kind();
  const bool eval = split == Split::Eval;
  if (kind == "synthetic" || kind.empty()) {
    const bool tokens = model.input_dtype() == "int64" || model.task() == "language_model";
    if (tokens && model.input_dtype() != "int64") {
      throw Error(modelLabel(model) + ": a language model's input_dtype must be int64");
    }
    std::unique_ptr<DataSource> stream;
    if (tokens) {
      stream = std::make_unique<SyntheticSequence>(model, config.seed());
    } else {
      stream = std::make_unique<SyntheticClassification>(model, config.seed());
    }
    // Held-out synthetic samples: the same task, far past any sample a run trains on.
    if (eval) return std::make_unique<Shifted>(std::move(stream), kSyntheticEvalOffset);
    return stream;
  }
  if (kind == "mnist") return mnist(config, model, eval);
  if (kind == "cifar10") return cifar10(config, model, eval);
  if (kind == "imagefolder") return imageFolder(config, model, eval);
  throw Error("data kind '" + kind + "' is unknown (synthetic, mnist, cifar10 or imagefolder)");
}

}  // namespace stagecraft::worker
