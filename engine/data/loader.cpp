// DataLoader: epoch order, batch building, the worker pool and the in-order prefetch queue.
//
// Concurrency: one mutex guards the epoch state. A worker claims the lowest unclaimed batch k of
// the current epoch generation while k < next_deliver + workers + prefetch, builds it unlocked,
// then files the result under k if the generation has not changed (start_epoch bumps it, so stale
// work is dropped). next() waits for batch next_deliver, hands it out and wakes the workers.
#include "engine/data/loader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/data/rng.h"

namespace tessera::data {

struct DataLoader::Impl {
  std::shared_ptr<const Source> source;
  Transforms transforms;
  LoaderOptions opt;
  Status config;                         // binding / option errors
  std::vector<FieldSpec> source_fields;  // what get() yields
  std::vector<FieldSpec> out_fields;     // after the transforms

  std::mutex mu;
  std::condition_variable work_cv;  // workers wait for claimable work or stop
  std::condition_variable done_cv;  // next() waits for its batch
  std::vector<std::thread> threads;
  bool stop = false;
  bool started = false;
  uint64_t generation = 0;
  int64_t epoch = 0;
  std::shared_ptr<const std::vector<int64_t>> order;
  int64_t next_claim = 0, next_deliver = 0, end = 0;
  std::map<int64_t, Expected<Batch>> ready;
  std::optional<Error> failed;  // the error that ended the epoch

  int64_t batches() const {
    if (!config.is_ok()) return 0;
    const int64_t n = source->size(), bs = opt.batch_size;
    return opt.drop_last ? n / bs : (n + bs - 1) / bs;
  }
  std::vector<int64_t> make_order(int64_t e) const;
  Expected<Batch> build(const std::vector<int64_t>& ord, int64_t e, int64_t k) const;
  Status build_into(const std::vector<int64_t>& ord, int64_t e, int64_t k, Batch& out) const;
  void worker_loop();
};

namespace {

Error example_error(const Error& inner, int64_t index, int64_t epoch, int64_t batch,
                    const Source& source) {
  Error e = inner;
  e.message = "example " + std::to_string(index) + " (epoch " + std::to_string(epoch) + ", batch " +
              std::to_string(batch) + ") of " + source.name() + ": " + inner.message;
  return e;
}

// Checks that `ex` has the fields `specs` describe; `stage` says which step produced it.
Status check_example(const Example& ex, const std::vector<FieldSpec>& specs, const char* stage) {
  if (ex.size() != specs.size()) {
    return make_error(std::string(stage) + " gave " + std::to_string(ex.size()) +
                      " fields, expected " + std::to_string(specs.size()));
  }
  for (size_t f = 0; f < specs.size(); ++f) {
    if (ex[f].dtype() != specs[f].dtype || ex[f].shape() != specs[f].shape) {
      return make_error(std::string(stage) + " gave field '" + specs[f].name + "' as " +
                        std::string(dtype_name(ex[f].dtype())) + shape_to_string(ex[f].shape()) +
                        ", expected " + std::string(dtype_name(specs[f].dtype)) +
                        shape_to_string(specs[f].shape));
    }
  }
  return Status::ok();
}

}  // namespace

std::vector<int64_t> DataLoader::Impl::make_order(int64_t e) const {
  const int64_t n = config.is_ok() ? source->size() : 0;
  std::vector<int64_t> ord(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ord[static_cast<size_t>(i)] = i;
  if (opt.shuffle) {
    Rng rng = Rng::for_shuffle(opt.seed, e);
    for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates, from the top
      const int64_t j = rng.uniform_int(i + 1);
      std::swap(ord[static_cast<size_t>(i)], ord[static_cast<size_t>(j)]);
    }
  }
  return ord;
}

Status DataLoader::Impl::build_into(const std::vector<int64_t>& ord, int64_t e, int64_t k,
                                    Batch& out) const {
  const int64_t n = static_cast<int64_t>(ord.size());
  const int64_t global_first = k * opt.batch_size;
  const int64_t global_count = std::min(opt.batch_size, n - global_first);
  // This shard's rows of the batch (all of it with one shard).
  const int64_t first = global_first + opt.shard * global_count / opt.shards;
  const int64_t count = global_first + (opt.shard + 1) * global_count / opt.shards - first;
  if (count < 1)
    return make_error("batch " + std::to_string(k) + " has " + std::to_string(global_count) + " examples, fewer than the " +
                          std::to_string(opt.shards) + " shards it is split into (use a batch of at least one example per rank)",
                      source->name());
  std::vector<Tensor> stacked;
  for (const FieldSpec& f : out_fields) {
    Shape shape{count};
    shape.insert(shape.end(), f.shape.begin(), f.shape.end());
    TRY(Tensor t, Tensor::create_uninitialized(f.dtype, shape));  // [count, per-example shape], every byte written below
    stacked.push_back(std::move(t));
  }
  if (transforms.empty()) {  // the source's batch fast path, when it has one
    Expected<bool> gathered = source->gather(ord.data() + first, count, stacked);
    if (!gathered) {
      Error err = gathered.error();
      err.message = "batch " + std::to_string(k) + " (epoch " + std::to_string(e) + ") of " + source->name() + ": " + err.message;
      return err;
    }
    if (*gathered) {
      out.clear();
      for (size_t f = 0; f < out_fields.size(); ++f) out[out_fields[f].name] = std::move(stacked[f]);
      return Status::ok();
    }
  }
  Example ex;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t index = ord[static_cast<size_t>(first + j)];
    Status st = source->get(index, ex);
    if (st.is_ok()) st = check_example(ex, source_fields, "the source");
    Rng rng = Rng::for_example(opt.seed, e, index);
    for (size_t t = 0; t < transforms.size() && st.is_ok(); ++t) st = transforms[t]->apply(ex, rng);
    if (st.is_ok()) st = check_example(ex, out_fields, "the transforms");
    if (!st.is_ok()) return example_error(st.error(), index, e, k, *source);
    for (size_t f = 0; f < ex.size(); ++f) {
      const Tensor c = ex[f].contiguous();
      auto* dst = static_cast<unsigned char*>(stacked[f].raw_data());
      std::memcpy(dst + static_cast<size_t>(j) * c.nbytes(), c.raw_data(), c.nbytes());
    }
  }
  out.clear();
  for (size_t f = 0; f < out_fields.size(); ++f) out[out_fields[f].name] = std::move(stacked[f]);
  return Status::ok();
}

Expected<Batch> DataLoader::Impl::build(const std::vector<int64_t>& ord, int64_t e,
                                        int64_t k) const {
  try {
    Batch b;
    RETURN_IF_ERROR(build_into(ord, e, k, b));
    return b;
  } catch (const std::exception& ex) {  // bad_alloc and the like from a source or transform
    return make_error("building batch " + std::to_string(k) + " of " + source->name() +
                      " failed: " + ex.what());
  }
}

void DataLoader::Impl::worker_loop() {
  const int64_t window = opt.workers + opt.prefetch;
  std::unique_lock<std::mutex> lk(mu);
  while (true) {
    work_cv.wait(lk, [&] {
      return stop || (started && !failed && next_claim < end && next_claim < next_deliver + window);
    });
    if (stop) return;
    const int64_t k = next_claim++;
    const uint64_t gen = generation;
    const int64_t e = epoch;
    const std::shared_ptr<const std::vector<int64_t>> ord = order;
    lk.unlock();
    Expected<Batch> b = build(*ord, e, k);
    lk.lock();
    if (gen == generation) {
      ready.emplace(k, std::move(b));
      done_cv.notify_all();
    }
  }
}

DataLoader::DataLoader(std::shared_ptr<const Source> source, Transforms transforms,
                       LoaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.source = std::move(source);
  m.transforms = std::move(transforms);
  m.opt = options;
  if (!m.source) {
    m.config = make_error("data loader: no source");
    return;
  }
  if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards) {
    m.config = make_error("data loader: shard " + std::to_string(options.shard) + " of " +
                              std::to_string(options.shards) + " does not exist",
                          m.source->name());
    return;
  }
  if (options.batch_size < 1 || options.workers < 0 || options.prefetch < 1) {
    m.config =
        make_error("data loader: need batch_size >= 1, workers >= 0, prefetch >= 1; got " +
                       std::to_string(options.batch_size) + ", " + std::to_string(options.workers) +
                       ", " + std::to_string(options.prefetch),
                   m.source->name());
    return;
  }
  m.source_fields = m.source->fields();
  m.out_fields = m.source_fields;
  for (size_t i = 0; i < m.transforms.size(); ++i) {
    Status st =
        m.transforms[i] ? m.transforms[i]->bind(m.out_fields) : make_error("null transform");
    if (!st.is_ok()) {
      Error e = st.error();
      e.message = "transform " + std::to_string(i) + ": " + e.message;
      if (e.where.empty()) e.where = m.source->name();
      m.config = e;
      return;
    }
  }
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  for (std::thread& t : impl_->threads) t.join();
}

Expected<std::vector<FieldSpec>> DataLoader::fields() const {
  if (!impl_->config.is_ok()) return impl_->config.error();
  return impl_->out_fields;
}

int64_t DataLoader::batches_per_epoch() const {
  return impl_->batches();
}

const LoaderOptions& DataLoader::options() const { return impl_->opt; }

int64_t DataLoader::shard_first_row(int64_t k) const {
  const LoaderOptions& o = impl_->opt;
  if (o.shards <= 1 || !impl_->source) return 0;
  const int64_t global_count = std::max<int64_t>(0, std::min(o.batch_size, impl_->source->size() - k * o.batch_size));
  return o.shard * global_count / o.shards;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  return impl_->make_order(epoch);
}

Status DataLoader::start_epoch(int64_t epoch, int64_t skip_batches) {
  Impl& m = *impl_;
  RETURN_IF_ERROR(m.config);
  const int64_t total = m.batches();
  if (skip_batches < 0 || skip_batches > total) {
    return make_error("skip_batches " + std::to_string(skip_batches) + " outside [0, " +
                          std::to_string(total) + "]",
                      m.source->name());
  }
  auto ord = std::make_shared<const std::vector<int64_t>>(m.make_order(epoch));
  {
    std::lock_guard<std::mutex> lk(m.mu);
    ++m.generation;
    m.ready.clear();
    m.failed.reset();
    m.order = std::move(ord);
    m.epoch = epoch;
    m.next_claim = m.next_deliver = skip_batches;
    m.end = total;
    m.started = true;
    try {
      while (static_cast<int>(m.threads.size()) < m.opt.workers) {
        m.threads.emplace_back([&m] { m.worker_loop(); });
      }
    } catch (const std::exception& ex) {  // std::system_error: no more threads
      m.started = false;
      return make_error(std::string("cannot start data loader workers: ") + ex.what(),
                        m.source->name());
    }
  }
  m.work_cv.notify_all();
  return Status::ok();
}

Expected<bool> DataLoader::next(Batch& out) {
  Impl& m = *impl_;
  RETURN_IF_ERROR(m.config);
  std::unique_lock<std::mutex> lk(m.mu);
  if (!m.started) return make_error("data loader: next() before start_epoch()", m.source->name());
  if (m.failed) return *m.failed;
  if (m.next_deliver >= m.end) return false;
  const int64_t k = m.next_deliver;
  Expected<Batch> b = Batch{};
  if (m.opt.workers == 0) {
    const auto ord = m.order;
    const int64_t e = m.epoch;
    lk.unlock();
    b = m.build(*ord, e, k);
    lk.lock();
  } else {
    m.done_cv.wait(lk, [&] { return m.ready.count(k) > 0; });
    auto node = m.ready.extract(k);
    b = std::move(node.mapped());
  }
  ++m.next_deliver;
  if (!b) {
    m.failed = b.error();
    ++m.generation;  // drop whatever is in flight
    m.ready.clear();
    return b.error();
  }
  lk.unlock();
  m.work_cv.notify_all();
  out = std::move(*b);
  return true;
}

}  // namespace tessera::data
