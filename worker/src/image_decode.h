#pragma once
// PNG and JPEG files as 8-bit pixels (libpng, libjpeg-turbo), and the folders of them an
// imagefolder data set is made of. Plain C++: no Torch, no Qt, so its test compiles fast.

#include <cstdint>
#include <string>
#include <vector>

namespace stagecraft::worker {

/// An image as decoded: rows of `width` pixels of `channels` interleaved bytes each
/// (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA).
struct DecodedImage {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<std::uint8_t> pixels;  ///< height * width * channels
};

/// The largest image file read (and the largest image decoded, in pixels).
constexpr long long kMaxImageFileBytes = 256LL << 20;
constexpr long long kMaxImagePixels = 1LL << 28;

/// Decodes the PNG or JPEG file at `path` (told apart by their signatures, not the name).
/// 16-bit PNG samples are reduced to 8 bits, palettes expanded, transparency kept as alpha;
/// a JPEG comes out grey or RGB. When `want_width` and `want_height` are positive, an image
/// of another size is refused from its header, before any pixel is decoded. Throws
/// stagecraft::Error naming the file: it cannot be read, is neither PNG nor JPEG, is corrupt
/// or truncated (libjpeg's warnings count as errors: no half-grey samples), or has the wrong
/// size ("... images are not resized").
DecodedImage decodeImage(const std::string& path, int want_width = 0, int want_height = 0);

/// `image` as `channels` planes (CHW) of bytes: alpha dropped, a grey image replicated into
/// each of 3 channels. Throws stagecraft::Error naming `path` for a colour image and a
/// 1-channel target, or a channel count other than 1 or 3.
std::vector<std::uint8_t> toPlanes(const DecodedImage& image, int channels, const std::string& path);

/// Whether `name` ends in .png, .jpg or .jpeg (any case).
bool isImageFileName(const std::string& name);

/// An image folder, listed: one sub-folder per class, class ids the sub-folders' names
/// sorted bytewise, images within a class sorted bytewise by name.
struct ImageFolderListing {
  std::vector<std::string> classes;  ///< sub-folder names, in class-id order
  std::vector<std::string> files;    ///< every image's path (dir/class/name), class by class
  std::vector<int> labels;           ///< the class id of each file
};

/// Lists `dir`. Names starting with '.' are skipped, and so are plain files beside the class
/// folders, entries inside them whose names are not images (see isImageFileName) and folders
/// deeper down. Any other image entry must be (or lead, through symbolic links, to) a
/// regular file: a FIFO, socket or device named like an image is refused, not skipped.
/// When `confine_to` is not empty (a real path), every class folder and image must really
/// lie inside it: one that leads outside throws WorkerError PermissionDenied without saying
/// more about the target. Throws WorkerError InvalidArgument when `dir` is not a folder,
/// holds no class folder, a class folder holds no image, an image is not a regular file or
/// is larger than kMaxImageFileBytes.
ImageFolderListing listImageFolder(const std::string& dir, const std::string& confine_to = {});

}  // namespace stagecraft::worker
