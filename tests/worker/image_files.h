#pragma once
// Tiny PNG and JPEG files for the imagefolder tests, written with libpng and libjpeg
// themselves (not with the decoder under test), and image folders of them.

#include <gtest/gtest.h>
#include <cstdio>  // before jpeglib.h, which uses FILE
#include <jpeglib.h>
#include <png.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace stagecraft::worker::testing {

/// Interleaved 8-bit pixels, `channels` per pixel (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA).
struct TestImage {
  int width = 0, height = 0, channels = 0;
  std::vector<std::uint8_t> pixels;
  std::uint8_t at(int row, int col, int channel) const {
    return pixels[(static_cast<size_t>(row) * width + col) * channels + channel];
  }
};

/// A pattern that differs per pixel, channel and `salt`.
inline TestImage patternImage(int width, int height, int channels, int salt) {
  TestImage image{width, height, channels, {}};
  for (int r = 0; r < height; ++r) {
    for (int c = 0; c < width; ++c) {
      for (int k = 0; k < channels; ++k) {
        image.pixels.push_back(static_cast<std::uint8_t>((r * 37 + c * 11 + k * 71 + salt * 53) % 256));
      }
    }
  }
  return image;
}

/// A smooth image (JPEG keeps it within a few levels): a gradient per channel plus `salt`.
inline TestImage smoothImage(int width, int height, int channels, int salt) {
  TestImage image{width, height, channels, {}};
  for (int r = 0; r < height; ++r) {
    for (int c = 0; c < width; ++c) {
      for (int k = 0; k < channels; ++k) {
        image.pixels.push_back(static_cast<std::uint8_t>(40 + 6 * r + 4 * c + 30 * k + 10 * (salt % 5)));
      }
    }
  }
  return image;
}

inline void writePng(const std::filesystem::path& path, const TestImage& image) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  static constexpr png_uint_32 kFormats[] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  png.format = kFormats[image.channels];
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr)) {
    throw std::runtime_error("writing " + path.string() + ": " + png.message);
  }
}

/// Grey (1 channel) or RGB (3) at `quality`.
inline void writeJpeg(const std::filesystem::path& path, const TestImage& image, int quality = 95) {
  FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) throw std::runtime_error("cannot write " + path.string());
  jpeg_compress_struct cinfo;
  jpeg_error_mgr errors;
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, out);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = image.channels;
  cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.pixels.data() +
                                        static_cast<size_t>(cinfo.next_scanline) * image.width * image.channels);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(out);
}

/// A fresh folder under gtest's temp dir, removed with the object.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name) {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / ("stagecraft_" + name + "_XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp " + pattern);
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace stagecraft::worker::testing
