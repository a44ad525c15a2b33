// The data loader: per-epoch shuffling, per-example transforms, batching, worker threads, prefetch.
//
// Usage:
//   TRY(auto train, data::open_mnist_dir(dir, "train"));
//   data::LoaderOptions opt;
//   opt.batch_size = 64; opt.shuffle = true; opt.seed = 7; opt.workers = 2;
//   data::DataLoader loader(train, data::make_transforms(data::OneHot(10)), opt);
//   for (int64_t epoch = 0; epoch < 10; ++epoch) {
//     RETURN_IF_ERROR(loader.start_epoch(epoch));
//     data::Batch batch;                               // {"x": f32 [64, 1, 28, 28], "labels": ...}
//     while (true) {
//       TRY(bool more, loader.next(batch));
//       if (!more) break;
//       ... session.run(batch) ...                     // a Batch is a runtime::Feeds
//     }
//   }
//
// Determinism: the order of an epoch is a Fisher-Yates permutation drawn from Rng::for_shuffle(
// seed, epoch) (or 0..n-1 without shuffle), and every example's transforms draw from
// Rng::for_example(seed, epoch, example index). Batches are delivered in order. So the batches of
// (seed, epoch) are the same bytes on every machine and for every worker count, and
// start_epoch(e, k) followed by next() yields exactly batches k, k+1, ... of epoch e: a resumed
// training run continues bit for bit.
//
// Threads: workers == 0 builds each batch in the caller's thread inside next(). Otherwise
// `workers` threads (started on the first start_epoch and kept until destruction) each build
// whole batches; at most workers + prefetch batches are built ahead of the consumer. A failing
// get() or transform ends the epoch: next() returns that error, naming the example index and the
// source, and keeps returning it until the next start_epoch(). Destroying the loader (or starting
// another epoch) mid-epoch is safe: in-flight batches are finished and dropped, threads joined.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/data/dataset.h"
#include "engine/data/transforms.h"

namespace tessera::data {

struct LoaderOptions {
  int64_t batch_size = 32;  // >= 1
  bool shuffle = false;
  uint64_t seed = 0;       // shuffling and random transforms
  bool drop_last = false;  // drop a last partial batch
  int workers = 0;         // 0: build batches in the calling thread
  int prefetch = 2;        // >= 1: batches queued ahead of the consumer (besides those in flight)
  // Data parallel: batch k of the epoch is still examples [k*batch_size, (k+1)*batch_size) of the
  // order, but this loader builds only shard `shard` of `shards` of it: rows [s*n/S, (s+1)*n/S) of
  // the batch's n examples (each rank reads only its rows of the global batch).
  int shard = 0, shards = 1;
};

class DataLoader {
 public:
  // Binds the transforms to the source's fields. Invalid options, a null source or a transform
  // that rejects its field do not throw: start_epoch() and fields() report them.
  DataLoader(std::shared_ptr<const Source> source, Transforms transforms, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Fields of a batch after the transforms, per example (the batch adds a leading dim).
  Expected<std::vector<FieldSpec>> fields() const;
  // ceil(size / batch_size), or floor with drop_last; 0 when the configuration is invalid.
  int64_t batches_per_epoch() const;
  const LoaderOptions& options() const;
  // Where this loader's rows of batch `k` start in the whole (global) batch k: 0 without shards,
  // shard * n / shards for a batch of n examples (n < batch_size only for the last batch).
  int64_t shard_first_row(int64_t k) const;
  // The example indices of `epoch` in delivery order (batch k holds entries k*batch_size ...).
  std::vector<int64_t> epoch_order(int64_t epoch) const;

  // Begins `epoch` (any integer, usually 0, 1, ...) at batch `skip_batches`
  // (0 <= skip_batches <= batches_per_epoch()). Abandons the epoch in progress, if any.
  Status start_epoch(int64_t epoch, int64_t skip_batches = 0);
  // The next batch into `out` and true; false at the end of the epoch; an error when building a
  // batch failed or no epoch was started.
  Expected<bool> next(Batch& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::data
