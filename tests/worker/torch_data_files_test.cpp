// File-backed training data: image folders (PNG, JPEG), CIFAR-10's folder of five batches,
// every sample once per epoch in a seeded order, and where a worker may read them from.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "data_paths.h"
#include "image_files.h"
#include "io/error.h"
#include "torch_stage.h"
#include "worker_error.h"

namespace stagecraft::worker::testing {
namespace {

namespace fs = std::filesystem;

v1::Model imageModel(int channels, int height, int width, int classes) {
  v1::Model m;
  m.set_name("images");
  m.set_task("classification");
  m.set_input_dtype("float32");
  for (int d : {channels, height, width}) m.add_input_shape(d);
  m.set_num_classes(classes);
  return m;
}

v1::DataConfig folderData(const fs::path& dir, std::uint64_t seed) {
  v1::DataConfig d;
  d.set_kind("imagefolder");
  d.set_path(dir.string());
  d.set_seed(seed);
  return d;
}

void writeBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

/// The message of the stagecraft::Error or WorkerError `f` throws.
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const WorkerError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Over two epochs of `n` samples: each sample (as `id` names it) once in each epoch; the
/// two epochs' orders differ, and so do those of `other` (another seed). The labels alone
/// are the same as get()'s.
void expectEveryEpochAPermutation(DataSource& data, DataSource& other, int n,
                                  const std::function<std::int64_t(const torch::Tensor&)>& id) {
  const Samples s = data.get(0, 2 * n);
  EXPECT_TRUE(torch::equal(data.labels(0, 2 * n), s.labels));
  std::vector<std::int64_t> epochs[2];
  for (int g = 0; g < 2 * n; ++g) epochs[g / n].push_back(id(s.inputs[g]));
  for (auto& e : epochs) {
    std::vector<std::int64_t> sorted = e;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all) << "an epoch visits every sample once";
  }
  EXPECT_NE(epochs[0], epochs[1]) << "each epoch has an order of its own";
  std::vector<std::int64_t> others;
  const Samples o = other.get(0, n);
  for (int g = 0; g < n; ++g) others.push_back(id(o.inputs[g]));
  EXPECT_NE(others, epochs[0]) << "another seed, another order";
  // Any range reads the same samples as one long read (what each worker reads of a batch).
  const Samples part = data.get(n - 2, 5);
  EXPECT_TRUE(torch::equal(part.inputs, s.inputs.slice(0, n - 2, n + 3)));
  EXPECT_TRUE(torch::equal(part.labels, s.labels.slice(0, n - 2, n + 3)));
}

/// `n` grey 2x2 PNG images whose first pixel is their number, in `classes` class folders
/// (image i in class i % classes).
void writeNumberedFolder(const fs::path& dir, int n, int classes) {
  for (int i = 0; i < n; ++i) {
    const fs::path cls = dir / ("class" + std::to_string(i % classes));
    fs::create_directories(cls);
    TestImage image = patternImage(2, 2, 1, i);
    image.pixels[0] = static_cast<std::uint8_t>(i);
    writePng(cls / ("img" + std::to_string(100 + i) + ".png"), image);
  }
}

std::int64_t firstPixel(const torch::Tensor& x) { return std::lround(x.flatten()[0].item<float>() * 255.0f); }

TEST(ImageFolderData, DecodesImagesToFloatChwInZeroToOneWithLabelsFromFolderOrder) {
  TempFolder dir("imagefolder");
  // Classes by name: ant (0), bee (1), cat (2). Model input 3x4x5 (C, H, W).
  for (const char* cls : {"cat", "ant", "bee"}) fs::create_directories(dir / cls);
  struct Expected {
    TestImage image;
    int label;
    bool jpeg;
  };
  std::map<std::string, Expected> files;
  auto add = [&](const std::string& cls, const std::string& name, const TestImage& image, int label) {
    const bool jpeg = name.ends_with(".jpg");
    if (jpeg) {
      writeJpeg(dir / cls / name, image, 95);
    } else {
      writePng(dir / cls / name, image);
    }
    files[cls + "/" + name] = {image, label, jpeg};
  };
  add("ant", "rgb.png", patternImage(5, 4, 3, 1), 0);
  add("ant", "rgba.png", patternImage(5, 4, 4, 2), 0);
  add("bee", "grey.png", patternImage(5, 4, 1, 3), 1);
  add("bee", "photo.jpg", smoothImage(5, 4, 3, 4), 1);
  add("cat", "grey.jpg", smoothImage(5, 4, 1, 5), 2);
  add("cat", "ga.png", patternImage(5, 4, 2, 6), 2);
  const int n = static_cast<int>(files.size());

  auto data = DataSource::create(folderData(dir.path(), 4), imageModel(3, 4, 5, 3));
  const Samples s = data->get(0, n);
  ASSERT_EQ(s.inputs.sizes().vec(), (std::vector<std::int64_t>{n, 3, 4, 5}));
  ASSERT_EQ(s.inputs.dtype(), torch::kFloat32);
  EXPECT_GE(s.inputs.min().item<float>(), 0.0f);
  EXPECT_LE(s.inputs.max().item<float>(), 1.0f);
  std::set<std::string> seen;
  for (int k = 0; k < n; ++k) {
    const torch::Tensor x = s.inputs[k];
    // The file this sample is: the one of its label that it matches best (in levels of 1/255).
    std::string best;
    double best_error = 1e9;
    for (const auto& [name, e] : files) {
      if (e.label != s.labels[k].item<std::int64_t>()) continue;
      double worst = 0;
      for (int c = 0; c < 3; ++c) {
        for (int r = 0; r < 4; ++r) {
          for (int col = 0; col < 5; ++col) {
            const int from = e.image.channels >= 3 ? c : 0;  // grey replicated, alpha dropped
            const double got = x[c][r][col].item<float>() * 255.0;
            worst = std::max(worst, std::abs(got - e.image.at(r, col, from)));
          }
        }
      }
      if (worst < best_error) best_error = worst, best = name;
    }
    ASSERT_FALSE(best.empty());
    if (files[best].jpeg) {
      EXPECT_LE(best_error, 8.0) << best;
    } else {
      EXPECT_LE(best_error, 1e-4) << best << ": PNG pixels are exact (v / 255 as float)";
    }
    seen.insert(best);
  }
  EXPECT_EQ(seen.size(), files.size()) << "every image once in the first epoch";
}

TEST(ImageFolderData, EveryEpochVisitsEveryImageOnceInASeededOrder) {
  TempFolder dir("epochs");
  constexpr int kImages = 12;
  writeNumberedFolder(dir.path(), kImages, 3);
  const v1::Model model = imageModel(1, 2, 2, 3);
  auto data = DataSource::create(folderData(dir.path(), 1), model);
  auto other = DataSource::create(folderData(dir.path(), 2), model);
  expectEveryEpochAPermutation(*data, *other, kImages, firstPixel);
  // Labels follow the files: image i is in class i % 3.
  const Samples s = data->get(0, kImages);
  for (int k = 0; k < kImages; ++k) EXPECT_EQ(s.labels[k].item<std::int64_t>(), firstPixel(s.inputs[k]) % 3);
  // A pure function of (config, model, g): another worker's source reads the same.
  auto again = DataSource::create(folderData(dir.path(), 1), model);
  const Samples t = again->get(17, 9);
  const Samples u = data->get(17, 9);
  EXPECT_TRUE(torch::equal(t.inputs, u.inputs));
  EXPECT_TRUE(torch::equal(t.labels, u.labels));
}

TEST(ImageFolderData, ImagesAreDecodedOnlyWhenReadAndABrokenOneIsAnErrorNamingIt) {
  TempFolder dir("lazy");
  writeNumberedFolder(dir.path(), 4, 2);
  fs::create_directories(dir / "zz-broken");
  const fs::path broken = dir / "zz-broken" / "bad.png";
  writeBytes(broken, "\x89PNG\r\n\x1a\n but nothing after");
  // Class folders zz-broken sorts last: class 2, the only image with that label. The first
  // image (class0) is decoded at create; the broken one only when read.
  auto data = DataSource::create(folderData(dir.path(), 3), imageModel(1, 2, 2, 3));
  const torch::Tensor labels = data->labels(0, 5);  // no decoding
  int broken_g = -1;
  for (int g = 0; g < 5; ++g) {
    if (labels[g].item<std::int64_t>() == 2) broken_g = g;
  }
  ASSERT_GE(broken_g, 0);
  for (int g = 0; g < 5; ++g) {
    if (g == broken_g) continue;
    EXPECT_EQ(data->get(g, 1).inputs.sizes().vec(), (std::vector<std::int64_t>{1, 1, 2, 2}));
  }
  const std::string message = errorOf([&] { data->get(broken_g, 1); });
  EXPECT_TRUE(contains(message, "image '" + broken.string() + "'")) << message;
  EXPECT_TRUE(contains(message, "not a valid PNG file")) << message;
}

TEST(ImageFolderData, MismatchesAreErrorsNamingTheFolderOrTheFile) {
  TempFolder dir("mismatch");
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  writePng(dir / "a" / "1.png", patternImage(6, 4, 3, 0));
  writePng(dir / "b" / "1.png", patternImage(6, 4, 3, 1));
  const auto config = folderData(dir.path(), 1);
  const std::string first = (dir / "a" / "1.png").string();

  // The size: found at create from the first image, named with both sizes.
  std::string message = errorOf([&] { DataSource::create(config, imageModel(3, 8, 8, 2)); });
  EXPECT_TRUE(contains(message, "'" + first + "' is 6x4")) << message;
  EXPECT_TRUE(contains(message, "the model takes 8x8")) << message;
  EXPECT_TRUE(contains(message, "not resized")) << message;
  // A colour image for a grey model.
  message = errorOf([&] { DataSource::create(config, imageModel(1, 4, 6, 2)); });
  EXPECT_TRUE(contains(message, "'" + first + "' is a colour image")) << message;
  // Fewer classes in the model than class folders.
  message = errorOf([&] { DataSource::create(config, imageModel(3, 4, 6, 1)); });
  EXPECT_TRUE(contains(message, "has 2 class folders")) << message;
  EXPECT_TRUE(contains(message, "num_classes 1")) << message;
  // A flat input or token ids take no images.
  v1::Model flat = imageModel(3, 4, 6, 2);
  flat.clear_input_shape();
  flat.add_input_shape(72);
  message = errorOf([&] { DataSource::create(config, flat); });
  EXPECT_TRUE(contains(message, "1 or 3 channels, CxHxW")) << message;
  v1::Model tokens = imageModel(3, 4, 6, 2);
  tokens.set_input_dtype("int64");
  EXPECT_TRUE(contains(errorOf([&] { DataSource::create(config, tokens); }), "float32 model input"));
  // The labels are the folders.
  auto with_labels = config;
  with_labels.set_labels_path(first);
  EXPECT_TRUE(contains(errorOf([&] { DataSource::create(with_labels, imageModel(3, 4, 6, 2)); }), "no labels path"));
  // What the listing refuses reaches the caller.
  fs::create_directories(dir / "c");
  message = errorOf([&] { DataSource::create(config, imageModel(3, 4, 6, 3)); });
  EXPECT_TRUE(contains(message, "class folder '" + (dir / "c").string() + "' holds no images")) << message;
  TempFolder empty("empty-images");
  message = errorOf([&] { DataSource::create(folderData(empty.path(), 1), imageModel(3, 4, 6, 3)); });
  EXPECT_TRUE(contains(message, "holds no class folders")) << message;

  // Right: trains.
  fs::remove(dir / "c");
  auto data = DataSource::create(config, imageModel(3, 4, 6, 2));
  EXPECT_EQ(data->get(0, 4).inputs.sizes().vec(), (std::vector<std::int64_t>{4, 3, 4, 6}));
}

/// CIFAR-10 records numbered from `first`: label id % 10, first pixel id % 256.
std::string cifarRecords(int first, int n) {
  std::string bytes;
  for (int i = first; i < first + n; ++i) {
    bytes.push_back(static_cast<char>(i % 10));
    for (int p = 0; p < 3072; ++p) bytes.push_back(static_cast<char>(p == 0 ? i % 256 : (p * 3 + i) % 256));
  }
  return bytes;
}

/// CIFAR-10's binary folder, shrunk: five training batches of 4 records (ids 0..19) and a
/// test batch (ids 200..203) that is not training data.
void writeCifarFolder(const fs::path& dir) {
  fs::create_directories(dir);
  for (int b = 1; b <= 5; ++b) writeBytes(dir / ("data_batch_" + std::to_string(b) + ".bin"), cifarRecords((b - 1) * 4, 4));
  writeBytes(dir / "test_batch.bin", cifarRecords(200, 4));
}

v1::DataConfig cifarData(const fs::path& path, std::uint64_t seed) {
  v1::DataConfig d;
  d.set_kind("cifar10");
  d.set_path(path.string());
  d.set_seed(seed);
  return d;
}

TEST(CifarFolderData, ReadsAllFiveTrainingBatchesAndNotTheTestBatch) {
  TempFolder dir("cifar");
  writeCifarFolder(dir / "cifar-10-batches-bin");
  v1::Model model = imageModel(3, 32, 32, 10);
  auto data = DataSource::create(cifarData(dir / "cifar-10-batches-bin", 5), model);
  auto other = DataSource::create(cifarData(dir / "cifar-10-batches-bin", 6), model);
  expectEveryEpochAPermutation(*data, *other, 20, firstPixel);  // ids 0..19: no test record
  const Samples s = data->get(0, 20);
  for (int k = 0; k < 20; ++k) {
    const auto id = firstPixel(s.inputs[k]);
    EXPECT_EQ(s.labels[k].item<std::int64_t>(), id % 10);
    EXPECT_FLOAT_EQ(s.inputs[k][1][0][1].item<float>(), static_cast<float>((3 * 1025 + id) % 256) / 255.0f);
  }
  // One batch file still works alone.
  auto one = DataSource::create(cifarData(dir / "cifar-10-batches-bin" / "data_batch_3.bin", 5), model);
  std::set<std::int64_t> ids;
  const Samples t = one->get(0, 4);
  for (int k = 0; k < 4; ++k) ids.insert(firstPixel(t.inputs[k]));
  EXPECT_EQ(ids, (std::set<std::int64_t>{8, 9, 10, 11}));
  // A folder without one of the five is an error naming it.
  fs::remove(dir / "cifar-10-batches-bin" / "data_batch_4.bin");
  const std::string message = errorOf([&] { DataSource::create(cifarData(dir / "cifar-10-batches-bin", 5), model); });
  EXPECT_TRUE(contains(message, "data_batch_4.bin")) << message;
}

TEST(MnistData, EveryEpochVisitsEveryImageOnceInASeededOrder) {
  TempFolder dir("mnist-epochs");
  constexpr int kImages = 10;
  std::string images, labels;
  auto put32 = [](std::string& out, std::uint32_t v) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  put32(images, 2051);
  put32(images, kImages);
  put32(images, 2);
  put32(images, 2);
  put32(labels, 2049);
  put32(labels, kImages);
  for (int i = 0; i < kImages; ++i) {
    for (int p = 0; p < 4; ++p) images.push_back(static_cast<char>(p == 0 ? i : 7 * p));
    labels.push_back(static_cast<char>(i % 3));
  }
  writeBytes(dir / "images", images);
  writeBytes(dir / "labels", labels);
  v1::DataConfig config;
  config.set_kind("mnist");
  config.set_path((dir / "images").string());
  config.set_labels_path((dir / "labels").string());
  config.set_seed(1);
  auto data = DataSource::create(config, imageModel(1, 2, 2, 3));
  config.set_seed(2);
  auto other = DataSource::create(config, imageModel(1, 2, 2, 3));
  expectEveryEpochAPermutation(*data, *other, kImages, firstPixel);
}

TEST(HeldOutData, AHoldoutIsNeverTrainedOnAndTheEvaluationSplitVisitsOnlyIt) {
  TempFolder dir("cifar-holdout");
  writeCifarFolder(dir / "cifar-10-batches-bin");
  const v1::Model model = imageModel(3, 32, 32, 10);
  v1::DataConfig config = cifarData(dir / "cifar-10-batches-bin", 5);  // 20 records, ids 0..19
  config.set_holdout(0.25);
  auto train = DataSource::create(config, model);
  auto held = DataSource::create(config, model, DataSource::Split::Eval);
  std::set<std::int64_t> trained, evaluated;
  const Samples t = train->get(0, 30);  // an epoch and a half of the 15 left to train on
  for (int k = 0; k < 30; ++k) trained.insert(firstPixel(t.inputs[k]));
  const Samples e = held->get(0, 10);  // the 5 held out, twice
  for (int k = 0; k < 10; ++k) evaluated.insert(firstPixel(e.inputs[k]));
  EXPECT_EQ(trained.size(), 15u);
  EXPECT_EQ(evaluated.size(), 5u);
  for (const auto id : evaluated) EXPECT_EQ(trained.count(id), 0u) << "sample " << id << " is in both splits";
  // The labels of the evaluation split are those of its images.
  const torch::Tensor labels = held->labels(0, 10);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(labels[k].item<std::int64_t>(), firstPixel(e.inputs[k]) % 10);
  // The split depends on the seed, not on the run: another DataSource agrees.
  auto again = DataSource::create(config, model, DataSource::Split::Eval);
  EXPECT_TRUE(torch::equal(again->get(0, 10).inputs, e.inputs));
  // Without a holdout every sample trains and nothing is there to evaluate on.
  config.set_holdout(0);
  const std::string message = errorOf([&] { DataSource::create(config, model, DataSource::Split::Eval); });
  EXPECT_TRUE(contains(message, "holdout is 0")) << message;
  config.set_holdout(0.9);
  EXPECT_TRUE(contains(errorOf([&] { DataSource::create(config, model); }), "not within 0 to 0.5"));
}

TEST(HeldOutData, SyntheticDataEvaluatesOnSamplesFarFromTraining) {
  const v1::Model model = imageModel(3, 8, 8, 10);
  v1::DataConfig config;
  config.set_kind("synthetic");
  config.set_seed(4);
  auto train = DataSource::create(config, model);
  auto held = DataSource::create(config, model, DataSource::Split::Eval);
  EXPECT_TRUE(torch::equal(held->get(3, 2).inputs, train->get(kSyntheticEvalOffset + 3, 2).inputs));
  EXPECT_FALSE(torch::equal(held->get(0, 2).inputs, train->get(0, 2).inputs));
}

/// What confineDataPaths throws for `data` (WorkerError's code), and its message.
ErrorCode confineError(v1::DataConfig data, const std::string& root, std::string* message) {
  try {
    confineDataPaths(data, root);
  } catch (const WorkerError& e) {
    *message = e.what();
    return e.code();
  }
  *message = "(accepted)";
  return ErrorCode::Invalid;
}

TEST(DataFolders, ImageAndCifarFoldersMustLieInsideTheDataFolder) {
  TempFolder outside("outside");
  writePng(outside / "secret.png", patternImage(2, 2, 1, 0));
  writeCifarFolder(outside / "cifar");
  TempFolder root("data-dir");
  writeNumberedFolder(root / "images", 4, 2);
  writeCifarFolder(root / "cifar");
  char real[PATH_MAX];
  ASSERT_TRUE(::realpath(root.path().c_str(), real));
  const std::string real_root = real;

  // Inside, relative or absolute: rewritten to the real path.
  for (const std::string& given : {std::string("images"), (root / "images").string(), std::string("./images/")}) {
    auto data = folderData(given, 1);
    confineDataPaths(data, root.path().string());
    EXPECT_EQ(data.path(), real_root + "/images") << given;
  }
  auto cifar = cifarData("cifar", 1);
  confineDataPaths(cifar, root.path().string());
  EXPECT_EQ(cifar.path(), real_root + "/cifar");
  auto batch = cifarData("cifar/data_batch_2.bin", 1);
  confineDataPaths(batch, root.path().string());
  EXPECT_EQ(batch.path(), real_root + "/cifar/data_batch_2.bin");

  std::string message;
  // Folders outside, named or through a link.
  EXPECT_EQ(confineError(folderData(outside.path(), 1), root.path().string(), &message), ErrorCode::PermissionDenied);
  EXPECT_TRUE(contains(message, "outside this worker's data folder")) << message;
  fs::create_directory_symlink(outside.path(), root / "elsewhere");
  EXPECT_EQ(confineError(folderData("elsewhere", 1), root.path().string(), &message), ErrorCode::PermissionDenied);
  EXPECT_EQ(confineError(cifarData("elsewhere/cifar", 1), root.path().string(), &message), ErrorCode::PermissionDenied);
  // An image inside that leads outside.
  fs::create_symlink(outside / "secret.png", root / "images" / "class0" / "zz.png");
  EXPECT_EQ(confineError(folderData("images", 1), root.path().string(), &message), ErrorCode::PermissionDenied);
  EXPECT_TRUE(contains(message, "zz.png' leads outside this worker's data folder")) << message;
  EXPECT_FALSE(contains(message, "secret")) << message;
  fs::remove(root / "images" / "class0" / "zz.png");
  // A FIFO named like an image is refused (it would block the decoder); named otherwise, skipped.
  ASSERT_EQ(::mkfifo((root / "images" / "class1" / "pipe.jpg").c_str(), 0600), 0);
  EXPECT_EQ(confineError(folderData("images", 1), root.path().string(), &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "pipe.jpg' is not a regular file")) << message;
  fs::rename(root / "images" / "class1" / "pipe.jpg", root / "images" / "class1" / "pipe");
  EXPECT_EQ(confineError(folderData("images", 1), root.path().string(), &message), ErrorCode::Invalid) << message;
  // An image folder must be a folder; an empty one is refused at Deploy.
  EXPECT_EQ(confineError(folderData("cifar/data_batch_1.bin", 1), root.path().string(), &message),
            ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "is not a folder")) << message;
  fs::create_directories(root / "nothing");
  EXPECT_EQ(confineError(folderData("nothing", 1), root.path().string(), &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "holds no class folders")) << message;
  // A CIFAR batch in the folder that leads outside, or is missing.
  fs::remove(root / "cifar" / "data_batch_2.bin");
  fs::create_symlink(outside / "cifar" / "data_batch_2.bin", root / "cifar" / "data_batch_2.bin");
  EXPECT_EQ(confineError(cifarData("cifar", 1), root.path().string(), &message), ErrorCode::PermissionDenied);
  EXPECT_TRUE(contains(message, "data_batch_2.bin")) << message;
  fs::remove(root / "cifar" / "data_batch_2.bin");
  EXPECT_EQ(confineError(cifarData("cifar", 1), root.path().string(), &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "no such file")) << message;
  // Other kinds still take files only.
  v1::DataConfig mnist;
  mnist.set_kind("mnist");
  mnist.set_path("images");
  EXPECT_EQ(confineError(mnist, root.path().string(), &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "not a regular file")) << message;
}

}  // namespace
}  // namespace stagecraft::worker::testing
