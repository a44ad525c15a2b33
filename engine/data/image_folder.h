// A folder of images, one sub-folder per class, as a Source (decoded lazily by stb_image).
//
// Usage:
//   TRY(auto pets, data::open_image_folder("pets/train", /*channels=*/3));
//   pets->fields();   // "x" f32 [3, H, W] in [0, 1], "labels" i64 []
//   static_cast<const data::ImageFolderSource&>(*pets).classes();   // {"cat", "dog"}
//
// Layout: DIR/<class>/<file>.png|.jpg|.jpeg (extension case-insensitive; other files and nested
// folders are ignored). Classes are sorted by name (byte order) and numbered from 0; files within
// a class are sorted by name, and examples are numbered class by class. Open reads every image's
// header (stbi_info, no pixel decoding) so that a broken file or a size mismatch is reported at
// once; get() decodes one file. There is no resizing: every image must have the size of the first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/data/dataset.h"

namespace tessera::data {

class ImageFolderSource final : public Source {
 public:
  struct Item {
    std::string path;
    int64_t label;
  };
  ImageFolderSource(std::string dir, std::vector<std::string> classes, std::vector<Item> items,
                    int channels, int64_t height, int64_t width);

  int64_t size() const override { return static_cast<int64_t>(items_.size()); }
  std::vector<FieldSpec> fields() const override;
  // Decodes the file to f32 [C, H, W] / 255. Errors name the file and stb_image's reason.
  Status get(int64_t index, Example& out) const override;
  std::string name() const override { return "image_folder(" + dir_ + ")"; }
  std::vector<std::string> files() const override;
  // Class names; label i is classes()[i].
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::string dir_;
  std::vector<std::string> classes_;
  std::vector<Item> items_;
  int channels_;
  int64_t height_, width_;
};

// `channels` 1 (grey) or 3 (RGB); stb_image converts whatever the file holds. Errors: a missing
// directory, no class folders or no images, a file stb_image cannot read (naming it and stb's
// reason), an image whose size differs from the first one's (naming both files and sizes).
Expected<std::shared_ptr<const ImageFolderSource>> open_image_folder(const std::string& dir,
                                                                     int channels);

}  // namespace tessera::data
