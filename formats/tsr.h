// The native Tessera file (.tsr): protobuf (formats/tsr.proto), format version 1. Holds the graph
// with nested graphs, ids and provenance, the weights (inline, or in a side file past a size
// threshold, as ONNX does for models over 2 GB), metadata and the studio's layout. Every tensor
// carries an XXH3-64 checksum of its bytes; the graph's content hash is checked after loading.
//
// Usage:
//   TRY(formats::GraphDocument doc, formats::read_tsr("lenet.tsr"));
//   RETURN_IF_ERROR(formats::write_tsr(doc, "copy.tsr"));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/status.h"
#include "formats/document.h"

namespace tessera::formats {

// The newest version this reader takes. Writers write 1 unless the graph has sequence or optional
// values (version 2: TensorType.kind), which a version-1 reader would misread as tensors.
inline constexpr uint32_t kTsrFormatVersion = 2;

struct TsrSaveOptions {
  std::string producer = "tessera";
  // Weights go to the side file PATH.data when their total size exceeds this (protobuf messages
  // are limited to 2 GiB); tensors smaller than external_min_bytes stay inline regardless.
  int64_t external_threshold_bytes = int64_t{1} << 30;
  int64_t external_min_bytes = 1024;
  bool force_external = false;  // every tensor of at least external_min_bytes goes to the side file
  // Creation time in the metadata; negative means now. Tests and golden files fix it.
  int64_t created_unix_ms = -1;
};

// Reads PATH (and its side file, if it names one, from the same folder). Errors have
// Error.where = the file and a message naming the place (graph path, node, value, tensor).
Expected<GraphDocument> read_tsr(const std::string& path);

// Parses bytes; a side file is looked up in base_dir. `where` names the bytes in errors.
Expected<GraphDocument> parse_tsr(const void* data, size_t size, const std::string& where,
                                  const std::string& base_dir);

// Writes the graph (ids, names, types, params, attributes, nested graphs, provenance), metadata
// and layout. Metadata records where the graph was first written: producer, engine version and
// creation time are kept when the document has them (a conversion keeps them) and filled in from
// the options and this engine when empty; content_hash is always recomputed. The side file (if
// any) is written first, then the .tsr, each atomically.
Status write_tsr(const GraphDocument& doc, const std::string& path, const TsrSaveOptions& options = {});

// The bytes write_tsr would write with every weight inline.
Expected<std::string> encode_tsr(const GraphDocument& doc, const TsrSaveOptions& options = {});

}  // namespace tessera::formats
