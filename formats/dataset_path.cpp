// Opening a data set by path: which reader a folder or file needs (formats/dataset_path.h).
#include "formats/dataset_path.h"

#include <filesystem>
#include <set>

#include "engine/data/csv.h"
#include "engine/data/idx.h"
#include "engine/data/image_folder.h"
#include "formats/data_npy.h"
#include "formats/npy.h"

namespace tessera::formats {

namespace fs = std::filesystem;
using SourcePtr = std::shared_ptr<const data::Source>;

namespace {

// Either file of the split (images or labels) is there: the split is meant, and a missing partner
// is an error (open_mnist_dir names it), not a split silently dropped.
bool has_mnist_files(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (const char* suffix : {"-images-idx3-ubyte", "-images-idx3-ubyte.gz", "-labels-idx1-ubyte", "-labels-idx1-ubyte.gz"})
    if (fs::exists(dir / (prefix + suffix), ec)) return true;
  return false;
}

}  // namespace

Expected<SourcePtr> open_dataset_split(const std::string& path, const std::string& split, int channels) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) return make_error("no such file or directory", path);
  if (fs::is_directory(p, ec)) {
    const std::string prefix = split == "train" ? "train" : "t10k";
    if (has_mnist_files(p, prefix)) return data::open_mnist_dir(path, split);
    if (fs::is_directory(p / split, ec)) {
      TRY(auto s, data::open_image_folder((p / split).string(), channels));
      return SourcePtr(s);
    }
    if (split == "test") return SourcePtr();  // a plain class folder: no test split
    TRY(auto s, data::open_image_folder(path, channels));
    return SourcePtr(s);
  }
  const std::string ext = p.extension().string();
  if (ext == ".csv") {
    if (split == "test") return SourcePtr();
    return data::open_csv(path);
  }
  if (ext == ".npz") {
    if (split == "train") return open_npz_source(path, "x", "labels");
    // The test split of an .npz is optional: x_test / labels_test, both or neither (one alone
    // is an error naming the other, not a split silently dropped).
    TRY(std::set<std::string> keys, npz_keys(path));
    if (!keys.count("x_test") && !keys.count("labels_test")) return SourcePtr();
    return open_npz_source(path, "x_test", "labels_test");
  }
  return make_error("cannot tell what data set this is: expected a folder with MNIST IDX files "
                    "(train-images-idx3-ubyte[.gz] ...), a folder of class folders (DIR/train/<class>/*.png), "
                    "a .csv or a .npz file",
                    path);
}

int image_channels(const ir::Graph& graph) {
  if (graph.inputs().empty()) return 1;
  const ir::TensorType& t = graph.value(graph.inputs()[0]).type;
  return t.rank() == 4 && t.dims[1].is_known() ? static_cast<int>(t.dims[1].size) : 1;
}

}  // namespace tessera::formats
