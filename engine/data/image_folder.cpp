// Image-folder source: class folders scanned at open, images decoded per get() with stb_image.
#include "engine/data/image_folder.h"

#include <stb_image.h>  // implementation in Debian's libstb.so: no STB_IMAGE_IMPLEMENTATION here

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace tessera::data {
namespace {

namespace fs = std::filesystem;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

std::string stb_reason() {
  const char* r = stbi_failure_reason();  // thread-local in stb_image >= 2.26
  return r ? r : "unknown reason";
}

std::string size_text(int64_t w, int64_t h) {
  return std::to_string(w) + "x" + std::to_string(h);
}

struct StbFree {
  void operator()(unsigned char* p) const { stbi_image_free(p); }
};

}  // namespace

ImageFolderSource::ImageFolderSource(std::string dir, std::vector<std::string> classes,
                                     std::vector<Item> items, int channels, int64_t height,
                                     int64_t width)
    : dir_(std::move(dir)),
      classes_(std::move(classes)),
      items_(std::move(items)),
      channels_(channels),
      height_(height),
      width_(width) {}

std::vector<FieldSpec> ImageFolderSource::fields() const {
  return {{"x", DType::kF32, {channels_, height_, width_}}, {"labels", DType::kI64, {}}};
}

std::vector<std::string> ImageFolderSource::files() const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const Item& it : items_) out.push_back(it.path);
  return out;
}

Status ImageFolderSource::get(int64_t index, Example& out) const {
  if (index < 0 || index >= size()) {
    return make_error("example index " + std::to_string(index) + " out of range [0, " +
                          std::to_string(size()) + ")",
                      dir_);
  }
  const Item& item = items_[static_cast<size_t>(index)];
  int w = 0, h = 0, n = 0;
  std::unique_ptr<unsigned char, StbFree> pixels(
      stbi_load(item.path.c_str(), &w, &h, &n, channels_));
  if (!pixels) return make_error("cannot decode image: " + stb_reason(), item.path);
  if (w != width_ || h != height_) {
    return make_error("image is " + size_text(w, h) + " but the folder's images are " +
                          size_text(width_, height_) + " (no resizing)",
                      item.path);
  }
  Tensor x(DType::kF32, {channels_, height_, width_});  // f32 [C, H, W]; stb gives [H, W, C]
  float* dst = x.data<float>();
  const int64_t plane = height_ * width_;
  const unsigned char* src = pixels.get();
  for (int64_t p = 0; p < plane; ++p) {
    for (int64_t c = 0; c < channels_; ++c) {
      dst[c * plane + p] = static_cast<float>(src[p * channels_ + c]) / 255.0f;
    }
  }
  out.clear();
  out.push_back(std::move(x));
  out.push_back(Tensor::scalar<int64_t>(item.label));
  return Status::ok();
}

Expected<std::shared_ptr<const ImageFolderSource>> open_image_folder(const std::string& dir,
                                                                     int channels) {
  if (channels != 1 && channels != 3) {
    return make_error("channels must be 1 or 3, got " + std::to_string(channels), dir);
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error("no such directory", dir);

  std::vector<std::string> classes;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) classes.push_back(it->path().filename().string());
  }
  if (ec) return make_error("cannot list directory: " + ec.message(), dir);
  if (classes.empty()) return make_error("no class folders (expected DIR/<class>/*.png|jpg)", dir);
  std::sort(classes.begin(), classes.end());

  std::vector<ImageFolderSource::Item> items;
  for (size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = fs::path(dir) / classes[label];
    std::vector<std::string> names;
    for (fs::directory_iterator it(class_dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec) && is_image_name(it->path()))
        names.push_back(it->path().string());
    }
    if (ec) return make_error("cannot list directory: " + ec.message(), class_dir.string());
    std::sort(names.begin(), names.end());
    for (auto& n : names) items.push_back({std::move(n), static_cast<int64_t>(label)});
  }
  if (items.empty()) return make_error("no .png/.jpg/.jpeg images in any class folder", dir);

  int w0 = 0, h0 = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    int w = 0, h = 0, comp = 0;
    if (!stbi_info(items[i].path.c_str(), &w, &h, &comp)) {
      return make_error("cannot read image header: " + stb_reason(), items[i].path);
    }
    if (i == 0) {
      w0 = w;
      h0 = h;
    } else if (w != w0 || h != h0) {
      return make_error("image is " + size_text(w, h) + " but " + items[0].path + " is " +
                            size_text(w0, h0) + "; all images must have one size (no resizing)",
                        items[i].path);
    }
  }
  return std::make_shared<const ImageFolderSource>(dir, std::move(classes), std::move(items),
                                                   channels, h0, w0);
}

}  // namespace tessera::data
