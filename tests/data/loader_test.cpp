// Tests for engine/data/loader.cpp: order, shuffling, determinism across worker counts, resuming,
// errors from workers, teardown mid-epoch, and a throughput figure on Fashion-MNIST.
#include "engine/data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "engine/data/idx.h"
#include "tests/data/data_test_util.h"

namespace tessera::data {
namespace {

using testing::CountingSource;

LoaderOptions options(int64_t batch_size, bool shuffle, uint64_t seed, int workers,
                      bool drop_last = false, int prefetch = 2) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.shuffle = shuffle;
  o.seed = seed;
  o.drop_last = drop_last;
  o.workers = workers;
  o.prefetch = prefetch;
  return o;
}

std::vector<int64_t> labels_of(const Batch& b) {
  const Tensor& t = b.at("labels");
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

// Every batch of one epoch.
std::vector<Batch> run_epoch(DataLoader& loader, int64_t epoch, int64_t skip = 0) {
  std::vector<Batch> out;
  Status st = loader.start_epoch(epoch, skip);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  if (!st.is_ok()) return out;
  while (true) {
    Batch b;
    auto more = loader.next(b);
    EXPECT_TRUE(more) << more.error().to_string();
    if (!more || !*more) break;
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<int64_t> all_labels(const std::vector<Batch>& batches) {
  std::vector<int64_t> out;
  for (const Batch& b : batches) {
    const auto l = labels_of(b);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

bool same_bytes(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (const auto& [name, t] : a[i]) {
      const Tensor& u = b[i].at(name);
      if (t.shape() != u.shape() || t.dtype() != u.dtype() ||
          std::memcmp(t.raw_data(), u.raw_data(), t.nbytes()) != 0) {
        return false;
      }
    }
  }
  return true;
}

TEST(Loader, SequentialBatchesAndLastPartialBatch) {
  auto src = std::make_shared<CountingSource>(10);
  DataLoader loader(src, {}, options(4, false, 0, 0));
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  const auto batches = run_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(labels_of(batches[0]), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(labels_of(batches[2]), (std::vector<int64_t>{8, 9}));
  const Tensor& x = batches[1].at("x");
  EXPECT_EQ(x.shape(), (Shape{4, 2}));
  EXPECT_EQ(x.to_doubles(), (std::vector<double>{4, -4, 5, -5, 6, -6, 7, -7}));
  EXPECT_EQ(batches[2].at("x").shape(), (Shape{2, 2}));

  DataLoader dropping(src, {}, options(4, false, 0, 2, /*drop_last=*/true));
  EXPECT_EQ(dropping.batches_per_epoch(), 2);
  EXPECT_EQ(all_labels(run_epoch(dropping, 0)), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// Data parallel: the shards of each global batch, in shard order, are the unsharded batch.
TEST(Loader, ShardsOfABatchMakeTheWholeBatch) {
  auto src = std::make_shared<CountingSource>(23);
  DataLoader whole(src, {}, options(8, true, 5, 1));
  const auto all = run_epoch(whole, 2);
  std::vector<std::vector<Batch>> shards;
  for (int s = 0; s < 3; ++s) {
    LoaderOptions o = options(8, true, 5, s % 2);
    o.shard = s;
    o.shards = 3;
    DataLoader part(src, {}, o);
    EXPECT_EQ(part.batches_per_epoch(), whole.batches_per_epoch());
    shards.push_back(run_epoch(part, 2));
  }
  ASSERT_EQ(shards[0].size(), all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    std::vector<int64_t> joined;
    for (const auto& sh : shards) {
      const auto l = labels_of(sh[k]);
      joined.insert(joined.end(), l.begin(), l.end());
    }
    EXPECT_EQ(joined, labels_of(all[k])) << "batch " << k;
  }
  // Rows [s*n/S, (s+1)*n/S): the last batch of 7 splits 2, 2, 3.
  EXPECT_EQ(labels_of(shards[2].back()).size(), 3u);
  // More shards than a batch has examples, and shards that do not exist, are errors.
  LoaderOptions thin = options(2, false, 0, 0);
  thin.shard = 0;  // rows [0, 0) of a batch of 2
  thin.shards = 3;
  DataLoader tiny(src, {}, thin);
  ASSERT_TRUE(tiny.start_epoch(0).is_ok());
  Batch b;
  auto more = tiny.next(b);
  ASSERT_FALSE(more.has_value());
  EXPECT_NE(more.error().message.find("fewer than the 3 shards"), std::string::npos) << more.error().to_string();
  LoaderOptions bad = options(4, false, 0, 0);
  bad.shard = 3;
  bad.shards = 3;
  DataLoader none(src, {}, bad);
  EXPECT_FALSE(none.start_epoch(0).is_ok());
}

TEST(Loader, ShuffleMatchesPythonReference) {
  // Fisher-Yates over Rng::for_shuffle(7, epoch), computed by a Python transcription of rng.h.
  auto src = std::make_shared<CountingSource>(10);
  DataLoader loader(src, {}, options(3, true, 7, 0));
  EXPECT_EQ(all_labels(run_epoch(loader, 0)), (std::vector<int64_t>{6, 4, 1, 8, 9, 3, 5, 0, 7, 2}));
  EXPECT_EQ(all_labels(run_epoch(loader, 1)), (std::vector<int64_t>{8, 7, 4, 9, 3, 2, 1, 5, 0, 6}));
  DataLoader other(src, {}, options(3, true, 8, 0));
  EXPECT_EQ(all_labels(run_epoch(other, 0)), (std::vector<int64_t>{6, 1, 8, 9, 7, 0, 3, 2, 5, 4}));
  EXPECT_EQ(loader.epoch_order(1), (std::vector<int64_t>{8, 7, 4, 9, 3, 2, 1, 5, 0, 6}));
}

TEST(Loader, ShuffleIsAPermutationAndIndependentOfWorkers) {
  auto src = std::make_shared<CountingSource>(1000);
  std::vector<std::vector<Batch>> per_workers;
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(workers);
    DataLoader loader(src, make_transforms(RandomHorizontalFlip(0.5)),
                      options(64, true, 42, workers));
    auto epoch0 = run_epoch(loader, 0);
    auto labels = all_labels(epoch0);
    ASSERT_EQ(labels.size(), 1000u);
    auto sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
    EXPECT_NE(labels, sorted);                            // shuffled
    EXPECT_NE(all_labels(run_epoch(loader, 1)), labels);  // a new order each epoch
    EXPECT_EQ(all_labels(run_epoch(loader, 0)), labels);  // the same order again
    per_workers.push_back(std::move(epoch0));
  }
  EXPECT_TRUE(same_bytes(per_workers[0], per_workers[1]));
  EXPECT_TRUE(same_bytes(per_workers[0], per_workers[2]));
  // The random flips did happen: some x rows are {-i, i} instead of {i, -i}.
  int flipped = 0;
  for (const Batch& b : per_workers[0]) {
    const Tensor& x = b.at("x");
    for (int64_t r = 0; r < x.dim(0); ++r) flipped += x.data<float>()[2 * r] < 0 ? 1 : 0;
  }
  EXPECT_NEAR(flipped, 500, 80);

  DataLoader other_seed(src, {}, options(64, true, 43, 0));
  EXPECT_NE(all_labels(run_epoch(other_seed, 0)), all_labels(per_workers[0]));
}

TEST(Loader, SkipBatchesEqualsTheTailOfAFullEpoch) {
  auto src = std::make_shared<CountingSource>(103);
  for (int workers : {0, 2}) {
    DataLoader loader(src, make_transforms(RandomHorizontalFlip(0.5)),
                      options(10, true, 3, workers));
    const auto full = run_epoch(loader, 4);
    ASSERT_EQ(full.size(), 11u);
    for (int64_t skip : {0, 1, 7, 10, 11}) {
      SCOPED_TRACE(skip);
      const auto tail = run_epoch(loader, 4, skip);
      EXPECT_TRUE(same_bytes(tail, std::vector<Batch>(full.begin() + skip, full.end())));
    }
    EXPECT_FALSE(loader.start_epoch(4, 12).is_ok());
    EXPECT_FALSE(loader.start_epoch(4, -1).is_ok());
  }
}

TEST(Loader, WorkerErrorIsReturnedWithIndexAndSource) {
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(workers);
    auto src = std::make_shared<CountingSource>(40, /*fail_at=*/13);
    DataLoader loader(src, {}, options(5, false, 0, workers));
    ASSERT_TRUE(loader.start_epoch(0).is_ok());
    Batch b;
    for (int k = 0; k < 2; ++k) {
      auto more = loader.next(b);
      ASSERT_TRUE(more && *more) << k;
    }
    auto bad = loader.next(b);  // batch 2 holds examples 10..14
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().where, "counting.bin");
    EXPECT_NE(
        bad.error().message.find("example 13 (epoch 0, batch 2) of counting: synthetic failure"),
        std::string::npos)
        << bad.error().message;
    EXPECT_FALSE(loader.next(b));  // the epoch stays failed
    // Resuming past the bad batch works.
    ASSERT_TRUE(loader.start_epoch(0, 3).is_ok());
    auto more = loader.next(b);
    ASSERT_TRUE(more && *more);
    EXPECT_EQ(labels_of(b), (std::vector<int64_t>{15, 16, 17, 18, 19}));
  }
}

// A source without the batch fast path: every call forwarded but gather().
class PerExample final : public Source {
 public:
  explicit PerExample(std::shared_ptr<const Source> s) : s_(std::move(s)) {}
  int64_t size() const override { return s_->size(); }
  std::vector<FieldSpec> fields() const override { return s_->fields(); }
  Status get(int64_t index, Example& out) const override { return s_->get(index, out); }
  std::string name() const override { return s_->name(); }

 private:
  std::shared_ptr<const Source> s_;
};

// Sources that gather a batch at once (TensorSource; the IDX reader on Fashion-MNIST when it is
// installed) give the bytes the per-example path gives, and name a bad index.
TEST(Loader, GatheredBatchesEqualPerExampleBatches) {
  Tensor x(DType::kF32, {23, 2, 3}), y(DType::kI64, {23, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) * 0.5f;
  for (int64_t i = 0; i < y.numel(); ++i) y.data<int64_t>()[i] = i * 7;
  auto ts = TensorSource::create({{"x", x}, {"labels", y}}, "tensors");
  ASSERT_TRUE(ts);
  std::vector<std::shared_ptr<const Source>> sources{*ts};
  const std::string fashion = "/usr/share/datasets/fashion-mnist";
  if (std::filesystem::exists(fashion)) {
    auto idx = open_mnist_dir(fashion, "test");
    ASSERT_TRUE(idx) << idx.error().to_string();
    sources.push_back(*idx);
  }
  for (const auto& src : sources) {
    SCOPED_TRACE(src->name());
    for (int workers : {0, 2}) {
      DataLoader fast(src, {}, options(5, true, 11, workers));
      DataLoader slow(std::make_shared<PerExample>(src), {}, options(5, true, 11, workers));
      const std::vector<Batch> a = run_epoch(fast, 1), b = run_epoch(slow, 1);
      EXPECT_GT(a.size(), 1u);
      EXPECT_TRUE(same_bytes(a, b));
    }
  }
  std::vector<Tensor> out{Tensor(DType::kF32, {1, 2, 3}), Tensor(DType::kI64, {1, 4})};
  const int64_t bad = 23;
  auto r = (*ts)->gather(&bad, 1, out);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("example index 23 out of range [0, 23)"), std::string::npos) << r.error().message;
}

TEST(Loader, TransformErrorsAndConfigurationErrors) {
  auto src = std::make_shared<CountingSource>(10);
  DataLoader one_hot(src, make_transforms(OneHot(5)), options(4, false, 0, 2));
  ASSERT_TRUE(one_hot.start_epoch(0).is_ok());
  Batch b;
  auto first = one_hot.next(b);
  ASSERT_TRUE(first && *first);
  EXPECT_EQ(b.at("labels").shape(), (Shape{4, 5}));
  EXPECT_EQ(b.at("labels").data<float>()[5 * 1 + 1], 1.f);  // example 1, class 1
  auto bad = one_hot.next(b);                               // example 5 has label 5
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("example 5"), std::string::npos);
  EXPECT_NE(bad.error().message.find("label 5"), std::string::npos);

  DataLoader unbound(src, make_transforms(Normalize({0.f}, {1.f}, "image")),
                     options(4, false, 0, 0));
  EXPECT_FALSE(unbound.fields());
  Status st = unbound.start_epoch(0);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message.find("transform 0: Normalize: no field 'image'"), std::string::npos)
      << st.to_string();
  EXPECT_EQ(unbound.batches_per_epoch(), 0);

  DataLoader zero_batch(src, {}, options(0, false, 0, 0));
  EXPECT_FALSE(zero_batch.start_epoch(0).is_ok());
  DataLoader null_source(nullptr, {}, options(4, false, 0, 0));
  EXPECT_FALSE(null_source.start_epoch(0).is_ok());
  DataLoader not_started(src, {}, options(4, false, 0, 0));
  EXPECT_FALSE(not_started.next(b));
}

TEST(Loader, DestroyOrRestartMidEpochIsClean) {
  auto src = std::make_shared<CountingSource>(400, -1, /*delay_ms=*/1);
  {
    DataLoader loader(src, {}, options(8, true, 1, 3, false, 4));
    ASSERT_TRUE(loader.start_epoch(0).is_ok());
    Batch b;
    ASSERT_TRUE(*loader.next(b));
    // Restart while batches are in flight: the new epoch's batches only.
    const auto again = run_epoch(loader, 5, 48);
    ASSERT_EQ(again.size(), 2u);
    const auto order = loader.epoch_order(5);
    EXPECT_EQ(labels_of(again[0]), std::vector<int64_t>(order.begin() + 384, order.begin() + 392));
    ASSERT_TRUE(loader.start_epoch(1).is_ok());
    ASSERT_TRUE(*loader.next(b));
  }  // destroyed with workers busy: joins without hanging
  const int64_t calls = src->calls();
  // Bounded prefetch: far fewer than the 400 examples of an epoch were built.
  EXPECT_LT(calls, 400);
}

TEST(Loader, FashionMnistThroughput) {
  if (!std::filesystem::exists(testing::kFashionDir)) GTEST_SKIP() << "no " << testing::kFashionDir;
  auto train = open_mnist_dir(testing::kFashionDir, "train");
  ASSERT_TRUE(train) << train.error().to_string();
  for (int workers : {0, 2}) {
    DataLoader loader(*train, make_transforms(Normalize({0.2860f}, {0.3530f})),
                      options(64, true, 0, workers));
    const auto t0 = std::chrono::steady_clock::now();
    const auto batches = run_epoch(loader, 0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(batches.size(), 938u);
    EXPECT_EQ(batches[0].at("x").shape(), (Shape{64, 1, 28, 28}));
    EXPECT_EQ(batches.back().at("x").shape(), (Shape{32, 1, 28, 28}));
    std::printf("fashion-mnist train, batch 64, workers %d: %.0f batches/s (%.3f s/epoch)\n",
                workers, static_cast<double>(batches.size()) / s, s);
  }
}

}  // namespace
}  // namespace tessera::data
