// PNG and JPEG decoding and image-folder listing (worker/src/image_decode.h): no Torch.
#include "image_decode.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include "image_files.h"
#include "io/error.h"
#include "worker_error.h"

namespace stagecraft::worker::testing {
namespace {

namespace fs = std::filesystem;

void writeBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

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

template <typename F>
ErrorCode workerErrorCode(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const WorkerError& e) {
    if (message) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no WorkerError thrown";
  return ErrorCode::Invalid;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ImageDecode, PngOfEveryLayoutDecodesExactly) {
  TempFolder dir("png");
  for (int channels : {1, 2, 3, 4}) {
    const TestImage want = patternImage(5, 3, channels, channels);
    const fs::path path = dir / ("c" + std::to_string(channels) + ".png");
    writePng(path, want);
    const DecodedImage got = decodeImage(path.string());
    EXPECT_EQ(got.width, 5);
    EXPECT_EQ(got.height, 3);
    ASSERT_EQ(got.channels, channels);
    EXPECT_EQ(got.pixels, want.pixels) << channels << " channels";
  }
}

TEST(ImageDecode, JpegDecodesWithinAFewLevels) {
  TempFolder dir("jpeg");
  for (int channels : {1, 3}) {
    const TestImage want = smoothImage(16, 8, channels, 2);
    const fs::path path = dir / ("c" + std::to_string(channels) + ".jpg");
    writeJpeg(path, want, 95);
    const DecodedImage got = decodeImage(path.string());
    EXPECT_EQ(got.width, 16);
    EXPECT_EQ(got.height, 8);
    ASSERT_EQ(got.channels, channels);
    ASSERT_EQ(got.pixels.size(), want.pixels.size());
    int worst = 0;
    for (size_t i = 0; i < want.pixels.size(); ++i) worst = std::max(worst, std::abs(got.pixels[i] - want.pixels[i]));
    EXPECT_LE(worst, 8) << channels << " channels";
  }
}

TEST(ImageDecode, TheSignatureNotTheNameTellsTheFormat) {
  TempFolder dir("signature");
  const TestImage want = patternImage(4, 4, 3, 0);
  writePng(dir / "really-a-png.jpg", want);
  EXPECT_EQ(decodeImage((dir / "really-a-png.jpg").string()).pixels, want.pixels);
}

TEST(ImageDecode, PlanesReplicateGreyAndDropAlpha) {
  TempFolder dir("planes");
  const TestImage grey = patternImage(3, 2, 1, 1);
  writePng(dir / "grey.png", grey);
  const auto planes = toPlanes(decodeImage((dir / "grey.png").string()), 3, "grey.png");
  ASSERT_EQ(planes.size(), 3u * 6);
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 6; ++i) EXPECT_EQ(planes[c * 6 + i], grey.pixels[i]) << c << " " << i;
  }
  const TestImage rgba = patternImage(3, 2, 4, 2);
  writePng(dir / "rgba.png", rgba);
  const auto rgb = toPlanes(decodeImage((dir / "rgba.png").string()), 3, "rgba.png");
  ASSERT_EQ(rgb.size(), 3u * 6);
  for (int c = 0; c < 3; ++c) {
    for (int r = 0; r < 2; ++r) {
      for (int col = 0; col < 3; ++col) EXPECT_EQ(rgb[c * 6 + r * 3 + col], rgba.at(r, col, c));
    }
  }
  const TestImage ga = patternImage(3, 2, 2, 3);
  writePng(dir / "ga.png", ga);
  const auto one = toPlanes(decodeImage((dir / "ga.png").string()), 1, "ga.png");
  ASSERT_EQ(one.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(one[i], ga.pixels[i * 2]);

  const std::string colour = errorOf([&] { toPlanes(decodeImage((dir / "rgba.png").string()), 1, "rgba.png"); });
  EXPECT_TRUE(contains(colour, "'rgba.png' is a colour image")) << colour;
  const std::string four = errorOf([&] { toPlanes(decodeImage((dir / "rgba.png").string()), 4, "rgba.png"); });
  EXPECT_TRUE(contains(four, "1 (grey) or 3 (RGB) channels")) << four;
}

TEST(ImageDecode, AWrongSizeIsRefusedNamingTheFileAndBothSizes) {
  TempFolder dir("size");
  writePng(dir / "wide.png", patternImage(6, 4, 3, 0));
  writeJpeg(dir / "wide.jpg", smoothImage(6, 4, 3, 0));
  for (const char* name : {"wide.png", "wide.jpg"}) {
    const std::string path = (dir / name).string();
    const std::string message = errorOf([&] { decodeImage(path, 4, 4); });
    EXPECT_TRUE(contains(message, "'" + path + "' is 6x4")) << message;
    EXPECT_TRUE(contains(message, "the model takes 4x4")) << message;
    EXPECT_TRUE(contains(message, "not resized")) << message;
    EXPECT_EQ(decodeImage(path, 6, 4).width, 6);
  }
}

TEST(ImageDecode, BrokenFilesAreErrorsNamingThem) {
  TempFolder dir("broken");
  writePng(dir / "good.png", patternImage(8, 8, 3, 0));
  writeJpeg(dir / "good.jpg", smoothImage(16, 16, 3, 0));
  const std::string png = readBytes(dir / "good.png"), jpeg = readBytes(dir / "good.jpg");
  std::string corrupt_png = png;
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  corrupt_png[idat + 6] = static_cast<char>(corrupt_png[idat + 6] ^ 0x5a);  // the pixel data: its CRC fails
  struct Case {
    std::string name, bytes, says;
  };
  for (const Case& c : std::vector<Case>{{"truncated.png", png.substr(0, png.size() / 2), "not a valid PNG file"},
                                         {"corrupt.png", corrupt_png, "not a valid PNG file"},
                                         {"truncated.jpg", jpeg.substr(0, jpeg.size() / 2), "not a valid JPEG file"},
                                         {"header-only.jpg", jpeg.substr(0, 3), "not a valid JPEG file"},
                                         {"text.png", "hello, not an image", "neither a PNG nor a JPEG"},
                                         {"empty.jpg", "", "neither a PNG nor a JPEG"}}) {
    const std::string path = (dir / c.name).string();
    writeBytes(path, c.bytes);
    const std::string message = errorOf([&] { decodeImage(path); });
    EXPECT_TRUE(contains(message, "image '" + path + "'")) << message;
    EXPECT_TRUE(contains(message, c.says)) << c.name << ": " << message;
  }
  const std::string missing = (dir / "missing.png").string();
  EXPECT_TRUE(contains(errorOf([&] { decodeImage(missing); }), missing));
}

TEST(ImageDecode, ImageNamesAreThePngAndJpegExtensions) {
  for (const char* yes : {"a.png", "a.PNG", "b.jpg", "c.JpEg", "x.y.jpeg"}) EXPECT_TRUE(isImageFileName(yes)) << yes;
  for (const char* no : {"png", ".png", "a.gif", "a.png.txt", "README", "a.jpe"}) EXPECT_FALSE(isImageFileName(no)) << no;
}

TEST(ImageFolderListing, ClassesAreSubFoldersSortedBytewise) {
  TempFolder dir("listing");
  // Bytewise: 'B' (0x42) < '_' (0x5f) < 'a' (0x61) < "\xc3\xa9" (UTF-8 e-acute).
  for (const char* cls : {"a", "B", "\xc3\xa9t\xc3\xa9", "_x"}) fs::create_directories(dir / cls);
  fs::create_directories(dir / ".hidden");
  writePng(dir / ".hidden" / "0.png", patternImage(2, 2, 1, 0));
  writePng(dir / "a" / "2.png", patternImage(2, 2, 1, 0));
  writeJpeg(dir / "a" / "10.jpg", smoothImage(2, 2, 1, 0));
  writePng(dir / "B" / "x.png", patternImage(2, 2, 1, 0));
  writePng(dir / "_x" / "y.PNG", patternImage(2, 2, 1, 0));
  writePng(dir / "\xc3\xa9t\xc3\xa9" / "z.jpeg", patternImage(2, 2, 1, 0));
  // Not images: skipped.
  writeBytes(dir / "a" / "notes.txt", "x");
  writePng(dir / "a" / ".secret.png", patternImage(2, 2, 1, 0));
  fs::create_directories(dir / "a" / "deeper.png");
  writeBytes(dir / "labels.csv", "x");  // beside the classes

  const ImageFolderListing listing = listImageFolder(dir.path().string());
  EXPECT_EQ(listing.classes, (std::vector<std::string>{"B", "_x", "a", "\xc3\xa9t\xc3\xa9"}));
  const std::string d = dir.path().string();
  EXPECT_EQ(listing.files, (std::vector<std::string>{d + "/B/x.png", d + "/_x/y.PNG", d + "/a/10.jpg", d + "/a/2.png",
                                                     d + "/\xc3\xa9t\xc3\xa9/z.jpeg"}));
  EXPECT_EQ(listing.labels, (std::vector<int>{0, 1, 2, 2, 3}));
}

TEST(ImageFolderListing, EmptyFoldersAreErrorsSayingSo) {
  TempFolder dir("empty");
  std::string message;
  EXPECT_EQ(workerErrorCode([&] { listImageFolder(dir.path().string()); }, &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "holds no class folders")) << message;
  fs::create_directories(dir / "cat");
  fs::create_directories(dir / "dog");
  writePng(dir / "cat" / "1.png", patternImage(2, 2, 1, 0));
  writeBytes(dir / "dog" / "readme.txt", "no images here");
  EXPECT_EQ(workerErrorCode([&] { listImageFolder(dir.path().string()); }, &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "class folder '" + (dir / "dog").string() + "' holds no images")) << message;
  EXPECT_EQ(workerErrorCode([&] { listImageFolder((dir / "cat" / "1.png").string()); }, &message),
            ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "is not a folder")) << message;
}

TEST(ImageFolderListing, ConfinedListingsRefuseLinksLeadingOutside) {
  TempFolder outside("outside");
  writePng(outside / "stolen.png", patternImage(2, 2, 1, 0));
  fs::create_directories(outside / "class");
  writePng(outside / "class" / "1.png", patternImage(2, 2, 1, 0));
  TempFolder root("root");
  fs::create_directories(root / "data" / "cat");
  writePng(root / "data" / "cat" / "1.png", patternImage(2, 2, 1, 0));
  writePng(root / "shared.png", patternImage(2, 2, 1, 0));
  // A link inside the data folder (to a file beside the image folder) is fine.
  fs::create_symlink(root / "shared.png", root / "data" / "cat" / "2.png");
  const std::string data = (root / "data").string();
  char real_root[PATH_MAX];
  ASSERT_TRUE(::realpath(root.path().c_str(), real_root));
  EXPECT_EQ(listImageFolder(data, real_root).files.size(), 2u);

  fs::create_symlink(outside / "stolen.png", root / "data" / "cat" / "3.png");
  std::string message;
  EXPECT_EQ(workerErrorCode([&] { listImageFolder(data, real_root); }, &message), ErrorCode::PermissionDenied);
  EXPECT_TRUE(contains(message, "'" + data + "/cat/3.png' leads outside this worker's data folder")) << message;
  EXPECT_FALSE(contains(message, "stolen")) << message;  // nothing about the target
  // Unconfined (as DataSource::create lists a folder confineDataPaths passed), it is listed.
  EXPECT_EQ(listImageFolder(data).files.size(), 3u);
  fs::remove(root / "data" / "cat" / "3.png");

  fs::create_directory_symlink(outside / "class", root / "data" / "dog");
  EXPECT_EQ(workerErrorCode([&] { listImageFolder(data, real_root); }, &message), ErrorCode::PermissionDenied);
  EXPECT_TRUE(contains(message, "'" + data + "/dog' leads outside")) << message;
  fs::remove(root / "data" / "dog");

  ASSERT_EQ(::mkfifo((root / "data" / "cat" / "pipe.png").c_str(), 0600), 0);
  EXPECT_EQ(workerErrorCode([&] { listImageFolder(data, real_root); }, &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "pipe.png' is not a regular file")) << message;
  fs::remove(root / "data" / "cat" / "pipe.png");
  ASSERT_EQ(::mkfifo((root / "data" / "cat" / "pipe.txt").c_str(), 0600), 0);  // not an image name: skipped
  EXPECT_EQ(listImageFolder(data, real_root).files.size(), 2u);

  fs::create_symlink(root / "gone.png", root / "data" / "cat" / "dangling.png");
  EXPECT_EQ(workerErrorCode([&] { listImageFolder(data, real_root); }, &message), ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(message, "dangling.png")) << message;
}

}  // namespace
}  // namespace stagecraft::worker::testing
