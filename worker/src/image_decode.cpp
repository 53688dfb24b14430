#include "image_decode.h"

#include <cstdio>  // before jpeglib.h, which uses FILE
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "io/error.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

// libpng and libjpeg report errors through callbacks that must not return; they longjmp
// back into the C-style readers below, whose locals are plain data and whose results live
// in the caller's objects (nothing with a destructor is jumped over).

struct PngSource {
  const unsigned char* data;
  size_t size;
  size_t pos;
  char message[256];
  std::jmp_buf jump;
};

void pngError(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof source->message, "%s", message);
  std::longjmp(source->jump, 1);
}

void pngWarning(png_structp, png_const_charp) {}  // e.g. an odd colour profile: the pixels are fine

void pngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > source->size - source->pos) png_error(png, "the file ends too early (truncated)");
  std::memcpy(out, source->data + source->pos, n);
  source->pos += n;
}

enum class Read { Done, Failed, WrongSize, TooLarge };

/// Rows of the caller's image, as libpng wants them.
struct PngTarget {
  DecodedImage* image;
  std::vector<png_bytep> rows;
};

Read readPng(PngSource* source, int want_width, int want_height, PngTarget* target) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, source, pngError, pngWarning);
  if (!png) {
    std::snprintf(source->message, sizeof source->message, "out of memory");
    return Read::Failed;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(source->message, sizeof source->message, "out of memory");
    return Read::Failed;
  }
  if (setjmp(source->jump)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return Read::Failed;
  }
  png_set_read_fn(png, source, pngRead);
  png_read_info(png, info);
  target->image->width = static_cast<int>(png_get_image_width(png, info));
  target->image->height = static_cast<int>(png_get_image_height(png, info));
  const long long pixels = static_cast<long long>(png_get_image_width(png, info)) * png_get_image_height(png, info);
  Read verdict = Read::Done;
  if (want_width > 0 && want_height > 0 &&
      (png_get_image_width(png, info) != static_cast<png_uint_32>(want_width) ||
       png_get_image_height(png, info) != static_cast<png_uint_32>(want_height))) {
    verdict = Read::WrongSize;
  } else if (pixels > kMaxImagePixels) {
    verdict = Read::TooLarge;
  }
  if (verdict != Read::Done) {
    png_destroy_read_struct(&png, &info, nullptr);
    return verdict;
  }
  // Palettes to RGB, 1/2/4-bit grey to 8 bits, tRNS to alpha; 16-bit samples rounded to 8.
  png_set_expand(png);
  png_set_scale_16(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  const size_t width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  if (png_get_rowbytes(png, info) != width * static_cast<size_t>(channels) || channels < 1 || channels > 4) {
    png_error(png, "unexpected pixel layout after expansion");
  }
  target->image->channels = channels;
  target->image->pixels.resize(width * height * static_cast<size_t>(channels));
  target->rows.resize(height);
  for (size_t r = 0; r < height; ++r) target->rows[r] = target->image->pixels.data() + r * width * channels;
  png_read_image(png, target->rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return Read::Done;
}

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpegFail(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

/// Warnings (level -1: corrupt data, a premature end) fail the image: libjpeg would go on
/// and fill the rest with grey.
void jpegMessage(j_common_ptr cinfo, int level) {
  if (level < 0) jpegFail(cinfo);
}

Read readJpeg(const unsigned char* data, size_t size, int want_width, int want_height, JpegErrors* errors,
              DecodedImage* image) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);  // so that destroying it before it was made is safe
  cinfo.err = jpeg_std_error(&errors->manager);
  errors->manager.error_exit = jpegFail;
  errors->manager.emit_message = jpegMessage;
  if (setjmp(errors->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return Read::Failed;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  image->width = static_cast<int>(cinfo.image_width);
  image->height = static_cast<int>(cinfo.image_height);
  Read verdict = Read::Done;
  if (want_width > 0 && want_height > 0 &&
      (cinfo.image_width != static_cast<JDIMENSION>(want_width) ||
       cinfo.image_height != static_cast<JDIMENSION>(want_height))) {
    verdict = Read::WrongSize;
  } else if (static_cast<long long>(cinfo.image_width) * cinfo.image_height > kMaxImagePixels) {
    verdict = Read::TooLarge;
  }
  if (verdict != Read::Done) {
    jpeg_destroy_decompress(&cinfo);
    return verdict;
  }
  cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const size_t stride = static_cast<size_t>(cinfo.output_width) * cinfo.output_components;
  image->channels = cinfo.output_components;
  image->pixels.resize(stride * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image->pixels.data() + static_cast<size_t>(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return Read::Done;
}

std::string readImageFile(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw environmentError("image '" + path + "': cannot read the file (" + ec.message() + ")");
  if (size > static_cast<std::uintmax_t>(kMaxImageFileBytes)) {
    throw Error("image '" + path + "' is larger than " + std::to_string(kMaxImageFileBytes >> 20) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw environmentError("image '" + path + "': cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw environmentError("image '" + path + "': read error");
  return std::move(bytes).str();
}

std::string sizeText(int width, int height) { return std::to_string(width) + "x" + std::to_string(height); }

bool realInside(const std::string& real, const std::string& root) {
  if (root == "/") return true;
  return real == root || (real.size() > root.size() && real.compare(0, root.size(), root) == 0 &&
                          real[root.size()] == '/');
}

/// The names in `dir` not starting with '.', sorted bytewise.
std::vector<std::string> sortedNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.empty() && name[0] != '.') names.push_back(std::move(name));
  }
  if (ec) throw WorkerError(ErrorCode::InvalidArgument, "image folder '" + dir + "': cannot list it (" + ec.message() + ")");
  std::sort(names.begin(), names.end());
  return names;
}

/// Refuses `path` when it leads (through symbolic links) outside `root`; nothing about
/// the target is said.
void checkConfined(const std::string& path, const std::string& root) {
  if (root.empty()) return;
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) {
    throw WorkerError(ErrorCode::InvalidArgument, "'" + path + "': a symbolic link that leads nowhere");
  }
  if (!realInside(resolved, root)) {
    throw WorkerError(ErrorCode::PermissionDenied,
                      "'" + path + "' leads outside this worker's data folder '" + root + "' (its --data-dir)");
  }
}

}  // namespace

DecodedImage decodeImage(const std::string& path, int want_width, int want_height) {
  const std::string bytes = readImageFile(path);
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  DecodedImage image;
  Read verdict;
  std::string message;
  static constexpr unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::memcmp(data, kPng, 8) == 0) {
    auto source = std::make_unique<PngSource>();
    source->data = data;
    source->size = bytes.size();
    source->pos = 0;
    source->message[0] = '\0';
    PngTarget target{&image, {}};
    verdict = readPng(source.get(), want_width, want_height, &target);
    message = std::string("not a valid PNG file: ") + source->message;
  } else if (bytes.size() >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
    auto errors = std::make_unique<JpegErrors>();
    errors->message[0] = '\0';
    verdict = readJpeg(data, bytes.size(), want_width, want_height, errors.get(), &image);
    message = std::string("not a valid JPEG file: ") + errors->message;
  } else {
    throw Error("image '" + path + "': neither a PNG nor a JPEG file (by its first bytes)");
  }
  switch (verdict) {
    case Read::Done:
      return image;
    case Read::WrongSize:
      throw Error("image '" + path + "' is " + sizeText(image.width, image.height) + " (width x height), the model takes " +
                  sizeText(want_width, want_height) + "; images are not resized: give images of the model's input size");
    case Read::TooLarge:
      throw Error("image '" + path + "' is " + sizeText(image.width, image.height) + ": more pixels than " +
                  std::to_string(kMaxImagePixels));
    case Read::Failed:
      break;
  }
  throw Error("image '" + path + "': " + message);
}

std::vector<std::uint8_t> toPlanes(const DecodedImage& image, int channels, const std::string& path) {
  if (channels != 1 && channels != 3) {
    throw Error("image '" + path + "': images fill 1 (grey) or 3 (RGB) channels, the model takes " +
                std::to_string(channels));
  }
  const bool colour = image.channels >= 3;
  if (colour && channels == 1) {
    throw Error("image '" + path + "' is a colour image, the model takes 1 channel (grey images)");
  }
  const size_t plane = static_cast<size_t>(image.width) * image.height;
  std::vector<std::uint8_t> out(plane * channels);
  for (int c = 0; c < channels; ++c) {
    const int from = colour ? c : 0;  // grey into every channel; alpha never read
    std::uint8_t* dst = out.data() + c * plane;
    const std::uint8_t* src = image.pixels.data() + from;
    for (size_t i = 0; i < plane; ++i) dst[i] = src[i * image.channels];
  }
  return out;
}

bool isImageFileName(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* ext : {".png", ".jpg", ".jpeg"}) {
    const size_t n = std::strlen(ext);
    if (lower.size() > n && lower.compare(lower.size() - n, n, ext) == 0) return true;
  }
  return false;
}

ImageFolderListing listImageFolder(const std::string& dir, const std::string& confine_to) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw WorkerError(ErrorCode::InvalidArgument, "image folder '" + dir + "' is not a folder");
  }
  const std::string base = !dir.empty() && dir.back() == '/' ? dir : dir + "/";
  ImageFolderListing listing;
  for (const std::string& name : sortedNames(dir)) {
    const std::string folder = base + name;
    struct stat entry {};
    if (::stat(folder.c_str(), &entry) != 0 || !S_ISDIR(entry.st_mode)) continue;  // files beside the classes
    checkConfined(folder, confine_to);
    const int label = static_cast<int>(listing.classes.size());
    size_t images = 0;
    for (const std::string& file : sortedNames(folder)) {
      if (!isImageFileName(file)) continue;
      const std::string path = folder + "/" + file;
      struct stat image {};
      if (::stat(path.c_str(), &image) == 0 && S_ISDIR(image.st_mode)) continue;  // deeper folders
      checkConfined(path, confine_to);
      if (::stat(path.c_str(), &image) != 0) {
        throw WorkerError(ErrorCode::InvalidArgument, "image '" + path + "': no such file (a broken symbolic link?)");
      }
      if (!S_ISREG(image.st_mode)) {
        throw WorkerError(ErrorCode::InvalidArgument, "image '" + path + "' is not a regular file");
      }
      if (image.st_size > kMaxImageFileBytes) {
        throw WorkerError(ErrorCode::InvalidArgument, "image '" + path + "' is larger than " +
                                                          std::to_string(kMaxImageFileBytes >> 20) + " MiB");
      }
      listing.files.push_back(path);
      listing.labels.push_back(label);
      ++images;
    }
    if (images == 0) {
      throw WorkerError(ErrorCode::InvalidArgument, "class folder '" + folder +
                                                        "' holds no images (PNG or JPEG: .png, .jpg, .jpeg)");
    }
    listing.classes.push_back(name);
  }
  if (listing.classes.empty()) {
    throw WorkerError(ErrorCode::InvalidArgument,
                      "image folder '" + dir + "' holds no class folders (one sub-folder of images per class)");
  }
  return listing;
}

}  // namespace stagecraft::worker
