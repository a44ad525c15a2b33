// NumPy .npy and .npz files: tensors in and out, checked against the bytes actually present.
//
// Usage:
//   TRY(Tensor w, formats::read_npy("w.npy"));
//   RETURN_IF_ERROR(formats::write_npy("out.npy", w));
//   TRY(auto arrays, formats::read_npz("weights.npz"));      // {"fc1.w": Tensor, ...}
//   RETURN_IF_ERROR(formats::write_npz("weights.npz", arrays, /*compress=*/true));
//
// Element types: <f4 <f8 <f2 |i1 |u1 <i4 <i8 |b1 map to f32 f64 f16 i8 u8 i32 i64 bool. Reading
// accepts either byte order ('<', '>', '|', '=', or none; big-endian data is byte-swapped) and
// header versions 1.0, 2.0 and 3.0. A fortran_order array is transposed into C order on reading,
// so the tensor has the declared shape and the same element at every index as in NumPy. bf16 has
// no NumPy dtype: writing a bf16 tensor fails (cast it to f32 first). Writing produces exactly
// what numpy.save produces (version 1.0 header, or 2.0 when the header needs it, C order).
//
// Every reader error has Error.where = the file (for .npz members "file.npz:member.npy") and a
// message giving the reason, e.g. "header declares shape (1000, 1000) of <f4 = 4000000 bytes but
// only 12 bytes follow". No size read from a file is allocated before it is checked against the
// bytes present and against tessera::checked_numel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace tessera::formats {

// ---- .npy ----
// Decodes a whole .npy file held in memory; `where` names it in errors.
Expected<Tensor> parse_npy(const void* data, size_t size, const std::string& where);
Expected<Tensor> read_npy(const std::string& path);
// The bytes of a .npy file for `t` (any strides; written in C order). Fails for bf16.
Expected<std::string> encode_npy(const Tensor& t);
// Atomic: writes PATH.tmp and renames it over PATH.
Status write_npy(const std::string& path, const Tensor& t);

// ---- .npz (a zip archive of .npy members, stored or deflated) ----
// Keys are the member names without ".npy". Members that are not .npy files, encrypted members
// and compression methods other than stored and deflated are errors.
// With `only`, members whose keys are not in it are listed and checked but never inflated (a side
// file's unused 1 GiB member costs nothing); the result holds the asked keys that exist.
Expected<std::map<std::string, Tensor>> read_npz(const std::string& path, const std::set<std::string>* only = nullptr);
// The keys of an archive's members, none of them inflated.
Expected<std::set<std::string>> npz_keys(const std::string& path);
// The same from an archive held in memory.
Expected<std::map<std::string, Tensor>> parse_npz(const void* data, size_t size,
                                                  const std::string& where);
// Writes one member KEY.npy per entry (deflated when `compress`), atomically via PATH.tmp.
// Keys must be non-empty; a bf16 tensor is an error.
Status write_npz(const std::string& path, const std::map<std::string, Tensor>& arrays,
                 bool compress);

// ---- building blocks, shared by the .npy and .npz readers ----
namespace npy_detail {
// Reads up to n bytes into dst and returns how many were read (fewer only at the end).
using ReadFn = std::function<Expected<size_t>(void* dst, size_t n)>;
// Decodes one .npy stream of `total` bytes (the caller has checked `total` is plausible: the
// size of a file, or a zip member's size bounded by its compressed size).
Expected<Tensor> decode(const ReadFn& read, uint64_t total, const std::string& where);
}  // namespace npy_detail

}  // namespace tessera::formats
