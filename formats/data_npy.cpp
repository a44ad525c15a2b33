// .npy/.npz training sources: read the arrays with formats/npy.h, wrap them in a TensorSource.
#include "formats/data_npy.h"

#include <set>

#include "formats/npy.h"

namespace tessera::formats {
namespace {

// x: u8 (images) -> f32 scaled to [0, 1], other integers (token ids) -> i64, floats -> f32;
// labels -> i64 [N, ...] (one class per example, or per position of a sequence); then a
// TensorSource over both.
Expected<std::shared_ptr<const data::Source>> make_source(Tensor x, const std::string& x_where,
                                                          Tensor labels,
                                                          const std::string& labels_where,
                                                          std::vector<std::string> files) {
  if (x.rank() == 0) return make_error("x is a scalar; its first dim must index examples", x_where);
  if (labels.rank() < 1) {
    return make_error("labels must have shape [N] or [N, ...], have a scalar", labels_where);
  }
  if (!is_integer(labels.dtype())) {
    return make_error("labels must be integers, are " + std::string(dtype_name(labels.dtype())),
                      labels_where);
  }
  if (x.dim(0) != labels.dim(0)) {
    return make_error(std::to_string(x.dim(0)) + " examples in " + x_where + " but " +
                          std::to_string(labels.dim(0)) + " labels in " + labels_where,
                      x_where);
  }
  const bool tokens = is_integer(x.dtype()) && x.dtype() != DType::kU8 && x.dtype() != DType::kBool;
  Tensor xf = x.cast(tokens ? DType::kI64 : DType::kF32);
  if (x.dtype() == DType::kU8) {
    float* p = xf.data<float>();
    for (int64_t i = 0; i < xf.numel(); ++i)
      p[i] /= 255.0f;  // correctly rounded, as NumPy x / 255 in f32
  }
  Tensor y = labels.cast(DType::kI64);
  TRY(auto src,
      data::TensorSource::create({{"x", std::move(xf)}, {"labels", std::move(y)}},
                                 "npy(" + x_where + ", " + labels_where + ")", std::move(files)));
  return std::shared_ptr<const data::Source>(std::move(src));
}

}  // namespace

Expected<std::shared_ptr<const data::Source>> open_npy_source(const std::string& x_path,
                                                              const std::string& labels_path) {
  TRY(Tensor x, read_npy(x_path));
  TRY(Tensor labels, read_npy(labels_path));
  return make_source(std::move(x), x_path, std::move(labels), labels_path, {x_path, labels_path});
}

Expected<std::shared_ptr<const data::Source>> open_npz_source(const std::string& path,
                                                              const std::string& x_key,
                                                              const std::string& labels_key) {
  const std::set<std::string> keys{x_key, labels_key};
  TRY(auto arrays, read_npz(path, &keys));
  for (const std::string* key : {&x_key, &labels_key}) {
    if (arrays.count(*key) == 0) {
      std::string have;
      TRY(std::set<std::string> all, npz_keys(path));
      for (const std::string& k : all) have += (have.empty() ? "" : ", ") + k;
      return make_error("no array '" + *key + "' (arrays: " + (have.empty() ? "none" : have) + ")",
                        path);
    }
  }
  return make_source(arrays.at(x_key), path + ":" + x_key, arrays.at(labels_key),
                     path + ":" + labels_key, {path});
}

}  // namespace tessera::formats
