// Real-data loading: the published CIFAR-10 binary and idx formats, generated here byte for
// byte (real CIFAR-10 cannot be downloaded on the build machines), every malformed file named
// in its error; epoch shards; the input pipeline; learning-rate schedules.
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "harness/data/augmentation.h"
#include "harness/data/image_dataset.h"
#include "harness/data/input_pipeline.h"
#include "harness/data/jpeg_folder.h"
#include "harness/run/epoch_loop.h"
#include "harness/run/lr_schedule.h"
#include "test_files.h"
#include "test_util.h"

namespace cnnbench {
namespace {

namespace fs = std::filesystem;
using testing::idx_bytes;
using testing::write_file;
using testing::write_idx_dataset;
using testing::error_of;

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// CIFAR-10 binary: records of 1 label byte + 3072 pixel bytes (R, G, B planes).
void write_cifar_batch(const std::string& path, int records, int first_label, int truncate_by = 0) {
  std::string bytes;
  for (int r = 0; r < records; ++r) {
    bytes += static_cast<char>((first_label + r) % 10);
    for (int p = 0; p < 3072; ++p) bytes += static_cast<char>((r * 7 + p) % 251);
  }
  bytes.resize(bytes.size() - truncate_by);
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(Cifar10, ReadsThePublishedBinaryLayout) {
  const std::string dir = fresh_dir("cifar_ok") + "/cifar-10-batches-bin";
  fs::create_directories(dir);
  for (int i = 1; i <= 5; ++i) write_cifar_batch(dir + "/data_batch_" + std::to_string(i) + ".bin", 3, i);
  write_cifar_batch(dir + "/test_batch.bin", 4, 0);
  const ImageDataset train = load_cifar10(fs::path(dir).parent_path().string(), true);  // the folder above works too
  EXPECT_EQ(train.count, 15);
  EXPECT_EQ(train.labels[0], 1);
  EXPECT_EQ(train.labels[14], (5 + 2) % 10);
  // record 1 of batch 1: green plane starts at pixel byte 1024
  EXPECT_EQ(train.image(1)[1024], static_cast<uint8_t>((7 + 1024) % 251));
  const ImageDataset test = load_cifar10(dir, false);
  EXPECT_EQ(test.count, 4);
}

TEST(Cifar10, MalformedFilesAreNamed) {
  const std::string dir = fresh_dir("cifar_bad");
  write_cifar_batch(dir + "/test_batch.bin", 2, 0, /*truncate_by=*/100);
  std::string m = error_of([&] { load_cifar10(dir, false); });
  EXPECT_NE(m.find("test_batch.bin"), std::string::npos) << m;
  EXPECT_NE(m.find("3073-byte records"), std::string::npos) << m;

  write_cifar_batch(dir + "/test_batch.bin", 2, 0);
  std::fstream f(dir + "/test_batch.bin", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(3073);
  f.put(static_cast<char>(12));  // label of record 1
  f.close();
  m = error_of([&] { load_cifar10(dir, false); });
  EXPECT_NE(m.find("record 1 has label 12"), std::string::npos) << m;

  m = error_of([&] { load_cifar10(dir, true); });  // train batches missing
  EXPECT_NE(m.find("data_batch_1.bin"), std::string::npos) << m;

  const std::string pickle = fresh_dir("cifar_pickle") + "/cifar-10-batches-py";
  fs::create_directories(pickle);
  std::ofstream(pickle + "/data_batch_1") << "pickle";
  m = error_of([&] { load_cifar10(fs::path(pickle).parent_path().string(), true); });
  EXPECT_NE(m.find("Python (pickle) version"), std::string::npos) << m;
  EXPECT_NE(m.find("binary version"), std::string::npos) << m;
}

TEST(Idx, ReadsGzippedAndPlainFiles) {
  for (bool gzip : {true, false}) {
    const std::string dir = fresh_dir(gzip ? "idx_gz" : "idx_plain");
    write_idx_dataset(dir, "train", 30, gzip);
    write_idx_dataset(dir, "t10k", 10, gzip);
    const ImageDataset d = load_idx_dataset(dir, true, "fashion_mnist");
    EXPECT_EQ(d.count, 30);
    EXPECT_EQ(d.height, 28);
    EXPECT_EQ(d.labels[13], 3);
    EXPECT_EQ(d.image(13)[6 * 28], 255);  // row 2 x label is bright
    EXPECT_EQ(load_idx_dataset(dir, false, "fashion_mnist").count, 10);
  }
}

// Found by an audit: with both X and X.gz in the folder the plain one was read without a word,
// a stale unpacked copy beside newer .gz files among them. The same data twice (`gunzip -k`)
// trains; different data is refused, naming the file.
TEST(Idx, APlainFileBesideItsGzMustHoldTheSame) {
  const std::string dir = fresh_dir("idx_both");
  write_idx_dataset(dir, "train", 30, true);
  write_idx_dataset(dir, "train", 30, false);
  EXPECT_EQ(load_idx_dataset(dir, true, "fashion_mnist").count, 30);
  write_idx_dataset(dir, "train", 20, false);  // a stale copy of another size
  const std::string m = error_of([&] { load_idx_dataset(dir, true, "fashion_mnist"); });
  EXPECT_NE(m.find("train-images-idx3-ubyte: differs from train-images-idx3-ubyte.gz beside it"), std::string::npos) << m;
  write_idx_dataset(dir, "train", 30, false);
  std::vector<uint8_t> labels(30, 0);  // the same images, other labels
  write_file(dir + "/train-labels-idx1-ubyte", idx_bytes({30}, labels), false);
  const std::string l = error_of([&] { load_idx_dataset(dir, true, "fashion_mnist"); });
  EXPECT_NE(l.find("train-labels-idx1-ubyte: differs from"), std::string::npos) << l;
}

TEST(Idx, MalformedFilesAreNamed) {
  const std::string dir = fresh_dir("idx_bad");
  write_idx_dataset(dir, "train", 5, false);
  const std::string images = dir + "/train-images-idx3-ubyte", labels = dir + "/train-labels-idx1-ubyte";
  write_file(images, idx_bytes({5, 28, 28}, std::vector<uint8_t>(5 * 784 - 10)), false);
  std::string m = error_of([&] { load_idx_dataset(dir, true, "x"); });
  EXPECT_NE(m.find("train-images-idx3-ubyte: truncated"), std::string::npos) << m;

  write_file(images, idx_bytes({5, 28}, std::vector<uint8_t>(5 * 28)), false);  // 2 dimensions, not 3
  m = error_of([&] { load_idx_dataset(dir, true, "x"); });
  EXPECT_NE(m.find("not an idx file"), std::string::npos) << m;

  write_file(images, idx_bytes({5, 28, 28}, std::vector<uint8_t>(5 * 784)), false);
  write_file(labels, idx_bytes({5}, {1, 2, 3, 10, 4}), false);
  m = error_of([&] { load_idx_dataset(dir, true, "x"); });
  EXPECT_NE(m.find("label 10 of image 3"), std::string::npos) << m;

  write_file(labels, idx_bytes({4}, {1, 2, 3, 4}), false);
  m = error_of([&] { load_idx_dataset(dir, true, "x"); });
  EXPECT_NE(m.find("4 labels for 5 images"), std::string::npos) << m;
  m = error_of([&] { load_idx_dataset(dir, false, "x"); });
  EXPECT_NE(m.find("missing t10k-images-idx3-ubyte"), std::string::npos) << m;
}

// Found by fuzz_idx: a header announcing 0xc6000200 x 28 x 28 images made the reader allocate
// 2.6 TB before reading a byte (10 GB for the fuzzer: out-of-memory); three 32-bit sizes can
// also wrap 64 bits. Sizes are now checked before they are multiplied, data is read as it
// arrives, and a size of 0 (a data set of no images) is refused too.
TEST(Idx, HeaderSizesAreCheckedBeforeAnythingIsAllocated) {
  const std::string dir = fresh_dir("idx_sizes");
  write_idx_dataset(dir, "train", 5, false);
  const std::string images = dir + "/train-images-idx3-ubyte";
  auto error_with = [&](const std::vector<uint32_t>& dims, size_t bytes) {
    write_file(images, idx_bytes(dims, std::vector<uint8_t>(bytes, 7)), false);
    return error_of([&] { load_idx_dataset(dir, true, "fashion_mnist"); });
  };
  EXPECT_EQ(error_with({0xc6000200u, 28, 28}, 4), images + ": its header announces more than 4 GiB of data");
  EXPECT_EQ(error_with({4, 0x80000000u, 0x80000000u}, 0), images + ": its header announces more than 4 GiB of data");
  EXPECT_EQ(error_with({1000000, 1000, 3}, 10),  // 3 GB announced, 10 bytes there: refused at once
            images + ": truncated: its header announces 3000000000 bytes of data, it has 10");
  EXPECT_EQ(error_with({0, 28, 28}, 0), images + ": its header announces a size of 0 (no data)");
  EXPECT_EQ(error_with({5, 28, 0}, 0), images + ": its header announces a size of 0 (no data)");
  // images of another size than the model's are refused from the header, before their data (a
  // gzipped file announcing 4 GiB inflated that much first), and so are labels of another count
  write_file(images, idx_bytes({1000, 512, 512}, std::vector<uint8_t>(10, 7)), false);
  EXPECT_EQ(error_of([&] { load_idx_dataset(dir, true, "fashion_mnist", 28); }),
            images + ": images of 512x512, the model takes 28x28");
  write_idx_dataset(dir, "train", 5, false);
  write_file(dir + "/train-labels-idx1-ubyte", idx_bytes({3000000}, std::vector<uint8_t>(10, 1)), false);
  EXPECT_EQ(error_of([&] { load_idx_dataset(dir, true, "fashion_mnist", 28); }),
            dir + "/train-labels-idx1-ubyte: 3000000 labels for 5 images");
  write_idx_dataset(dir, "train", 5, false);
  EXPECT_EQ(load_idx_dataset(dir, true, "fashion_mnist", 28).count, 5);

  // a damaged gzip stream is named as one, not as a short file
  std::vector<uint8_t> pixels(5 * 784);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7919 >> 3);
  write_file(images + ".gz", idx_bytes({5, 28, 28}, pixels), true);
  fs::remove(images);
  std::string gz;
  {
    std::ifstream in(images + ".gz", std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (size_t i = 20; i < gz.size() - 20; i += 3) gz[i] = static_cast<char>(~gz[i]);
  std::ofstream(images + ".gz", std::ios::binary) << gz;
  const std::string m = error_of([&] { load_idx_dataset(dir, true, "fashion_mnist"); });
  EXPECT_EQ(m.rfind(images + ".gz: damaged gzip data (", 0), 0u) << m;
}

TEST(Sharding, RanksCoverEachEpochExactlyOnceAndEpochsDiffer) {
  const int64_t n = 1003;
  for (int ranks : {1, 2, 3, 4}) {
    const auto order = epoch_order(n, 5, 2);
    std::multiset<int64_t> seen;
    for (int r = 0; r < ranks; ++r)
      for (int64_t i : rank_shard(order, r, ranks)) seen.insert(i);
    ASSERT_EQ(static_cast<int64_t>(seen.size()), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen.count(i), 1u) << "image " << i << " with " << ranks << " ranks";
  }
  EXPECT_EQ(epoch_order(n, 5, 2), epoch_order(n, 5, 2));  // reproducible
  EXPECT_NE(epoch_order(n, 5, 2), epoch_order(n, 5, 3));  // and new every epoch
  EXPECT_NE(epoch_order(n, 5, 2), epoch_order(n, 6, 2));
}

TEST(InputPipeline, BatchesAreDeterministicAndEvaluationCoversAll) {
  const std::string dir = fresh_dir("pipeline");
  write_idx_dataset(dir, "train", 100, false);
  const ImageDataset d = load_idx_dataset(dir, true, "fashion_mnist");
  Augmentation cifar_like;
  cifar_like.pad = 4;
  cifar_like.flip = true;
  auto run_epoch = [&](int workers) {
    const InMemorySource source(d, cifar_like);
    InputPipeline p(source, 8, 1, 2, 42, true, workers);
    p.start_epoch(3);
    std::vector<float> all;
    for (int64_t s = 0; s < p.steps_per_epoch(); ++s) {
      const float* images = p.next_images();
      all.insert(all.end(), images, images + 8 * 784);
    }
    EXPECT_EQ(p.steps_per_epoch(), 50 / 8);
    return all;
  };
  EXPECT_EQ(run_epoch(1), run_epoch(3));  // thread timing does not matter

  // evaluation: in order, last batch padded, every image of the rank's shard exactly once
  for (int rank : {0, 1, 2}) {
    const InMemorySource source(d, augmentation_for("fashion_mnist", false));
    InputPipeline eval(source, 16, rank, 3, 42, false);
    eval.start_epoch(0);
    int64_t valid = 0;
    std::multiset<int32_t> labels;
    for (int64_t s = 0; s < eval.steps_per_epoch(); ++s) {
      eval.next_images();
      for (int64_t i = 0; i < eval.current_valid(); ++i) labels.insert(eval.current_labels()[i]);
      valid += eval.current_valid();
    }
    EXPECT_EQ(valid, rank == 0 ? 34 : 33);
  }
}

// A --resume inside an epoch starts it at its step: the batches from there are those of the
// whole epoch, made without making the ones before; the next epoch starts whole again.
TEST(InputPipeline, AnEpochStartedAtABatchGivesTheWholeEpochsBatchesFromThere) {
  const std::string dir = fresh_dir("pipeline_first_batch");
  write_idx_dataset(dir, "train", 100, false);
  const ImageDataset d = load_idx_dataset(dir, true, "fashion_mnist");
  Augmentation cifar_like;
  cifar_like.pad = 4;
  cifar_like.flip = true;
  const InMemorySource source(d, cifar_like);
  auto batches = [&](InputPipeline& p, int64_t from) {
    std::vector<std::vector<float>> out;
    for (int64_t s = from; s < p.steps_per_epoch(); ++s) {
      const float* images = p.next_images();
      std::vector<float> batch(images, images + 8 * 784);
      batch.insert(batch.end(), p.current_labels(), p.current_labels() + 8);
      out.push_back(std::move(batch));
    }
    return out;
  };
  InputPipeline whole(source, 8, 1, 2, 42, true, 2), resumed(source, 8, 1, 2, 42, true, 2);
  whole.start_epoch(3);
  const auto all = batches(whole, 0);
  ASSERT_EQ(all.size(), 6u);
  resumed.start_epoch_at(3, 4);
  EXPECT_EQ(batches(resumed, 4), std::vector<std::vector<float>>(all.begin() + 4, all.end()));
  whole.start_epoch(4);
  resumed.start_epoch(4);
  EXPECT_EQ(batches(resumed, 0), batches(whole, 0));
}

// A stall is a wait for a batch not made yet: a batch already there costs none (the timeline drew
// an "input stall" span for every batch, 12,186 of them summing 11 s where the run stalled 0.02 s).
TEST(InputPipeline, OnlyAWaitForABatchNotReadyIsAStall) {
  const std::string dir = fresh_dir("pipeline_stall");
  write_idx_dataset(dir, "train", 64, false);
  const ImageDataset d = load_idx_dataset(dir, true, "fashion_mnist");
  const InMemorySource source(d, augmentation_for("fashion_mnist", true));
  InputPipeline p(source, 8, 0, 1, 42, true, 2, 8);  // room for the whole epoch
  p.start_epoch(0);
  ASSERT_NE(p.next_images(), nullptr);  // the workers had no head start: a wait, most likely
  const double first_wait = p.stall_sec();
  EXPECT_NEAR(first_wait, std::chrono::duration<double>(p.last_wait().end - p.last_wait().start).count(), 1e-9);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the rest of the epoch made meanwhile
  for (int64_t s = 1; s < p.steps_per_epoch(); ++s) {
    p.next_images();
    EXPECT_FALSE(p.last_wait().waited()) << "step " << s;
  }
  EXPECT_EQ(p.stall_sec(), first_wait);
}

TEST(Augmentation, NormalisesAndCropsWithZeroPadding) {
  ImageDataset d;
  d.count = 1;
  d.channels = 1;
  d.height = d.width = 4;
  d.pixels = std::vector<uint8_t>(16, 255);
  d.labels = {0};
  Augmentation a;
  a.mean[0] = 0.5f;
  a.stddev[0] = 0.5f;
  std::mt19937_64 rng(1);
  std::vector<float> out(16);
  make_example(d, 0, a, rng, out.data());
  EXPECT_FLOAT_EQ(out[5], 1.0f);  // (1 - 0.5) / 0.5
  a.pad = 4;
  bool saw_padding = false;
  for (int i = 0; i < 20 && !saw_padding; ++i) {
    make_example(d, 0, a, rng, out.data());
    for (float v : out) saw_padding |= v == -1.0f;  // a zero pixel: (0 - 0.5) / 0.5
  }
  EXPECT_TRUE(saw_padding);
}

TEST(Augmentation, TrainAugmentationChoosesTheRecipe) {
  EXPECT_EQ(augmentation_for("fashion_mnist", true).pad, 0);  // auto: Fashion-MNIST only normalised, as before
  EXPECT_FALSE(augmentation_for("fashion_mnist", true).flip);
  const Augmentation fm = augmentation_for("fashion_mnist", true, "crop_flip");
  EXPECT_EQ(fm.pad, 4);
  EXPECT_TRUE(fm.flip);
  EXPECT_FLOAT_EQ(fm.mean[0], 0.2860f);
  EXPECT_EQ(augmentation_for("fashion_mnist", false, "crop_flip").pad, 0);  // evaluation never augments
  EXPECT_FALSE(augmentation_for("fashion_mnist", false, "crop_flip").flip);
  EXPECT_EQ(augmentation_for("cifar10", true).pad, 4);
  EXPECT_EQ(augmentation_for("cifar10", true, "none").pad, 0);
  EXPECT_FALSE(augmentation_for("cifar10", true, "none").flip);
  EXPECT_TRUE(augmentation_for("imagenet", true).flip);
  EXPECT_THROW(augmentation_for("imagenet", true, "none"), std::invalid_argument);
  EXPECT_THROW(augmentation_for("imagenet", true, "crop_flip"), std::invalid_argument);
  EXPECT_THROW(augmentation_for("cifar10", true, "mixup"), std::invalid_argument);

  // a 28x28 image bright in its left column: flipped, the right column is the bright one
  ImageDataset d;
  d.count = 1;
  d.channels = 1;
  d.height = d.width = 28;
  d.pixels.assign(28 * 28, 0);
  for (int y = 0; y < 28; ++y) d.pixels[y * 28] = 255;
  d.labels = {0};
  Augmentation flip_only = fm;
  flip_only.pad = 0;
  std::mt19937_64 rng(3);
  std::vector<float> out(28 * 28);
  int flipped = 0;
  for (int i = 0; i < 40; ++i) {
    make_example(d, 0, flip_only, rng, out.data());
    const bool right = out[27] > out[0];
    flipped += right;
    EXPECT_NE(out[27] > 0, out[0] > 0);  // one of the two columns is bright, never both
  }
  EXPECT_GT(flipped, 5);
  EXPECT_LT(flipped, 35);
}

TEST(JpegFolder, ScansClassesDecodesAndCrops) {
  const std::string root = fresh_dir("jpeg_ok");
  testing::write_jpeg_folders(root, 3, 2);
  testing::write_jpeg(root + "/train/n01001/grey.jpg", 64, 48, 9, /*grey=*/true);
  std::ofstream(root + "/train/n01001/notes.txt") << "not an image";
  const JpegFolder train = scan_jpeg_folder(root + "/train");
  EXPECT_EQ(train.classes, (std::vector<std::string>{"n01000", "n01001", "n01002"}));
  EXPECT_EQ(train.files.size(), 7u);
  EXPECT_EQ(train.labels.back(), 2);
  const JpegFolder val = scan_jpeg_folder(root + "/val", &train.classes);
  EXPECT_EQ(val.labels, (std::vector<int32_t>{0, 1, 2}));

  const RgbImage small = decode_jpeg(root + "/train/n01000/img1.JPEG", 100);
  EXPECT_EQ(small.width, 320 / 2);  // shorter side 260 / 2 = 130 >= 100, 260 / 4 = 65 is not
  const RgbImage full = decode_jpeg(root + "/train/n01000/img1.JPEG", 1);
  EXPECT_EQ(full.width, 320 / 8);  // any size will do: decoded at the smallest scale, 1/8
  const RgbImage big = decode_jpeg(root + "/train/n01000/img1.JPEG", 256);
  EXPECT_EQ(big.width, 320);  // halving would leave the shorter side under 256
  EXPECT_EQ(decode_jpeg(root + "/train/n01001/grey.jpg", 1).pixels.size() % 3, 0u);  // grey comes out RGB

  const JpegFolderSource training(train, true), evaluation(val, false);
  std::vector<float> a(3 * 224 * 224), b(a.size()), c(a.size());
  std::mt19937_64 r1(1), r2(2);
  training.make(0, r1, a.data());
  training.make(0, r2, b.data());
  EXPECT_NE(a, b);  // random crops differ
  for (float v : a) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 3.0f);
  evaluation.make(1, r1, a.data());
  evaluation.make(1, r2, c.data());
  EXPECT_EQ(a, c);  // evaluation is deterministic

  // a hidden folder is no class (it would shift every later label); a training class folder
  // without JPEG files is refused (it would still take a label)
  std::filesystem::create_directories(root + "/train/.ipynb_checkpoints");
  EXPECT_EQ(scan_jpeg_folder(root + "/train").classes, train.classes);
  // a Mac's "._img1.JPEG" beside each copied image is metadata, not a JPEG: left out and counted
  // (decoded, it would stop the run as a corrupt JPEG)
  std::ofstream(root + "/train/n01000/._img1.JPEG") << "Mac OS X        ATTR";
  const JpegFolder with_metadata = scan_jpeg_folder(root + "/train");
  EXPECT_EQ(with_metadata.files, train.files);
  EXPECT_EQ(with_metadata.hidden_skipped, 1);
  EXPECT_EQ(train.hidden_skipped, 0);
  std::filesystem::remove(root + "/train/n01000/._img1.JPEG");
  std::filesystem::create_directories(root + "/train/n01003");
  EXPECT_NE(error_of([&] { scan_jpeg_folder(root + "/train"); }).find("n01003: a class folder without JPEG files"),
            std::string::npos);
  std::filesystem::remove(root + "/train/n01003");

  std::filesystem::create_directories(root + "/val/n09999");
  testing::write_jpeg(root + "/val/n09999/x.JPEG", 40, 40, 1);
  EXPECT_NE(error_of([&] { scan_jpeg_folder(root + "/val", &train.classes); }).find("n09999: a class the training"),
            std::string::npos);
}

// Decoding only a crop's window (libjpeg-turbo's cropped and skipped scanlines) gives the pixels a
// whole decode has there, and DCT scaling goes as far as the window, not the image, allows.
TEST(JpegDecode, WindowHoldsTheWholeDecodesPixelsAndScalesByTheWindow) {
  const std::string path = fresh_dir("jpeg_window") + "/big.JPEG";
  testing::write_jpeg(path, 1000, 800, 3);
  std::vector<unsigned char> bytes;
  read_file_bytes(path, bytes);
  const RgbImage whole = decode_jpeg_bytes(bytes.data(), bytes.size(), path, 800);
  ASSERT_EQ(whole.width, 1000);
  DecodedWindow part;
  const PixelWindow asked{333, 217, 250, 300};
  decode_jpeg_window(
      bytes.data(), bytes.size(), path,
      [&](int width, int height) {
        EXPECT_EQ(width, 1000);
        EXPECT_EQ(height, 800);
        return asked;
      },
      224, part);
  EXPECT_EQ(part.scale_denom, 1);  // 250 / 2 is under 224
  EXPECT_LT(part.image.width, 1000);
  EXPECT_LT(part.image.height, 800);
  EXPECT_DOUBLE_EQ(part.window.w, 250);
  EXPECT_DOUBLE_EQ(part.window.h, 300);
  const int dx = static_cast<int>(asked.x0 - part.window.x0), dy = static_cast<int>(asked.y0 - part.window.y0);
  ASSERT_GE(part.window.x0, 2);  // two pixels of margin: one for the bilinear taps, one not sampled
  ASSERT_GE(part.window.y0, 2);
  ASSERT_LE(part.window.x0 + part.window.w + 2, part.image.width);
  ASSERT_LE(part.window.y0 + part.window.h + 2, part.image.height);
  // all but the part's outermost pixels, which lack their neighbours' chroma and are never sampled
  int differing = 0;
  for (int y = 1; y + 1 < part.image.height; ++y)
    for (int x = 3; x + 3 < part.image.width * 3; ++x)
      differing += part.image.pixels[y * part.image.width * 3 + x] != whole.pixels[(y + dy) * 3000 + dx * 3 + x];
  EXPECT_EQ(differing, 0);

  // scaled by the DCT, with the window starting on an odd row: still the whole decode's pixels at
  // that scale. The window's shorter side is 500: 1/2 for 224, 1/4 for 100, 1/8 for 50;
  // the whole image's 800: 1/2 for 300, 1/4 for 150, 1/8 for 75.
  for (const auto& [window_side, whole_side, denom] : {std::tuple{224, 300, 2}, {100, 150, 4}, {50, 75, 8}}) {
    const PixelWindow odd{104, 15.0 * denom, 600, 500};  // the skip ends at row 13 at every scale
    decode_jpeg_window(bytes.data(), bytes.size(), path, [&](int, int) { return odd; }, window_side, part);
    ASSERT_EQ(part.scale_denom, denom);
    EXPECT_DOUBLE_EQ(part.window.w, 600.0 / denom);
    EXPECT_LE(part.image.width, 600 / denom + 2 * 16 + 4);  // whole iMCUs around the window
    EXPECT_LT(part.image.height, 800 / denom);
    const RgbImage scaled = decode_jpeg_bytes(bytes.data(), bytes.size(), path, whole_side);
    ASSERT_EQ(scaled.width, 1000 / denom);
    const double ox = odd.x0 / denom - part.window.x0, oy = odd.y0 / denom - part.window.y0;
    ASSERT_EQ(ox, std::round(ox));
    ASSERT_EQ(oy, std::round(oy));
    int wrong = 0;
    for (int y = 1; y + 1 < part.image.height; ++y)
      for (int x = 3; x + 3 < part.image.width * 3; ++x)
        wrong += part.image.pixels[y * part.image.width * 3 + x] !=
                 scaled.pixels[(y + static_cast<int>(oy)) * scaled.width * 3 + static_cast<int>(ox) * 3 + x];
    EXPECT_EQ(wrong, 0) << "at 1/" << denom;
  }

  // stray bytes before the end marker (a few ImageNet files have them) are no error; a file cut
  // short still is
  std::vector<unsigned char> stray(bytes.begin(), bytes.end() - 2);
  for (int c : {0x78, 0x79, 0xff, 0xd9}) stray.push_back(static_cast<unsigned char>(c));  // "xy", then EOI
  EXPECT_EQ(decode_jpeg_bytes(stray.data(), stray.size(), path, 800).pixels, whole.pixels);
  EXPECT_NE(error_of([&] { decode_jpeg_bytes(bytes.data(), bytes.size() / 2, path, 800); })
                .find(path + ": corrupt or unsupported JPEG"),
            std::string::npos);

  // the input pipeline's path (the window alone) and a whole decode make the same examples, here
  // where no DCT scaling applies (no crop of 1000 x 800 is 2 x 448 on its shorter side)
  std::vector<float> a(3 * 448 * 448), b(a.size());
  for (bool training : {true, false})
    for (uint64_t seed = 0; seed < 10; ++seed) {
      std::mt19937_64 r1(seed), r2(seed);
      make_imagenet_example(bytes.data(), bytes.size(), path, training, 448, {}, r1, a.data());
      make_imagenet_example(whole, training, 448, {}, r2, b.data());
      ASSERT_EQ(a, b) << (training ? "training" : "evaluation") << ", seed " << seed;
      ASSERT_EQ(r1(), r2()) << "the same draws from the random engine";
    }
}

// A few hundred bytes can announce 65500 x 65500 pixels: found by hand after fuzz_jpeg (which
// cannot see inside the uninstrumented libjpeg) ran clean; a progressive one took 25 s to fail.
// CMYK JPEGs (ImageNet's training set has about 22, Adobe-style with inverted inks) decode to the
// RGB the inks make, whole and through a crop's window: a plain pattern with black's ink let
// through at 255 (none) and at 128 (half the light) against the RGB JPEG of the same pattern.
TEST(JpegDecode, CmykImagesDecodeToTheirRgb) {
  const std::string dir = fresh_dir("jpeg_cmyk");
  testing::write_jpeg(dir + "/rgb.JPEG", 120, 90, 2);
  std::vector<unsigned char> rgb_bytes, bytes;
  read_file_bytes(dir + "/rgb.JPEG", rgb_bytes);
  const RgbImage rgb = decode_jpeg_bytes(rgb_bytes.data(), rgb_bytes.size(), "rgb", 90);
  for (const int k : {255, 128}) {
    const std::string path = dir + "/cmyk" + std::to_string(k) + ".JPEG";
    testing::write_cmyk_jpeg(path, 120, 90, 2, k);
    read_file_bytes(path, bytes);
    const RgbImage cmyk = decode_jpeg_bytes(bytes.data(), bytes.size(), path, 90);
    ASSERT_EQ(cmyk.width, 120);
    ASSERT_EQ(cmyk.pixels.size(), rgb.pixels.size());
    // against the pattern itself, as the RGB JPEG is (both lossy; the pattern's wraps from 255 to 0
    // cost either a few levels), not against 255 minus it or undarkened
    double error = 0, rgb_error = 0;
    for (int y = 0; y < 90; ++y)
      for (int x = 0; x < 120; ++x)
        for (int c = 0; c < 3; ++c) {
          const size_t i = (static_cast<size_t>(y) * 120 + x) * 3 + c;
          const double pattern = (x * (c + 1) + y * 2 + 2 * 40) % 256;
          error += std::fabs(cmyk.pixels[i] - pattern * k / 255.0);
          rgb_error += std::fabs(rgb.pixels[i] - pattern);
        }
    const double n = static_cast<double>(rgb.pixels.size());
    EXPECT_LT(error / n, 2 * rgb_error / n + 1) << "k = " << k << ": mean error in levels, the RGB JPEG's " << rgb_error / n;
    DecodedWindow part;
    decode_jpeg_window(bytes.data(), bytes.size(), path, [](int, int) { return PixelWindow{40, 30, 50, 40}; }, 40,
                       part);
    ASSERT_GT(part.image.width, 0);
    EXPECT_EQ(part.image.pixels.size(), static_cast<size_t>(part.image.width) * part.image.height * 3);
  }
}

TEST(JpegFolder, HugeImageIsRefusedBeforeDecoding) {
  const std::string dir = fresh_dir("jpeg_huge");
  const std::string path = dir + "/huge.JPEG";
  testing::write_jpeg(path, 16, 16, 1);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t sof = bytes.find("\xff\xc0");  // baseline start of frame: length, precision, height, width
  ASSERT_NE(sof, std::string::npos);
  for (size_t at : {sof + 5, sof + 7}) bytes.replace(at, 2, "\xff\xdc");  // 65500
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(error_of([&] { decode_jpeg(path, 224); }),
            path + ": corrupt or unsupported JPEG: 65500x65500 is more than the 64 megapixels cnnbench decodes");
}

// A valid progressive JPEG of 704 scans (every coefficient a band of its own, sent a bit at a
// time): each scan walks every block, so an 8192 x 8192 one decoded for 15 s. Past 500 scans it
// is refused; the usual progressive script (6 scans for grey) decodes.
TEST(JpegDecode, AProgressiveJpegOfTooManyScansIsRefused) {
  const std::string dir = fresh_dir("jpeg_scans");
  std::vector<jpeg_scan_info> scans;
  auto scan = [&](int ss, int se, int ah, int al) {
    jpeg_scan_info s{};
    s.comps_in_scan = 1;
    s.component_index[0] = 0;
    s.Ss = ss, s.Se = se, s.Ah = ah, s.Al = al;
    scans.push_back(s);
  };
  for (int k = 0; k < 64; ++k) {  // DC (k = 0), then each AC coefficient: its first scan, then 10 refinements
    scan(k, k, 0, 10);
    for (int bit = 10; bit >= 1; --bit) scan(k, k, bit, bit - 1);
  }
  ASSERT_EQ(scans.size(), 704u);
  for (const bool many : {true, false}) {
    const std::string path = dir + (many ? "/many.JPEG" : "/usual.JPEG");
    testing::write_jpeg_rows(
        path, 64, 64, 1, JCS_GRAYSCALE, 75,
        [](unsigned char* row, int y) {
          for (int x = 0; x < 64; ++x) row[x] = testing::jpeg_pattern(x, y, 0, 1);
        },
        [&](jpeg_compress_struct& cinfo) {
          if (!many) return jpeg_simple_progression(&cinfo);
          cinfo.scan_info = scans.data();
          cinfo.num_scans = static_cast<int>(scans.size());
        });
    if (many) {
      EXPECT_EQ(error_of([&] { decode_jpeg(path, 1); }),
                path + ": corrupt or unsupported JPEG: more than 500 progressive scans (encoders write about 10)");
    } else {
      EXPECT_EQ(decode_jpeg(path, 64).width, 64);
    }
  }
}

TEST(JpegFolder, CorruptFileIsNamedThroughThePipeline) {
  const std::string root = fresh_dir("jpeg_bad");
  testing::write_jpeg_folders(root, 2, 2);
  const std::string victim = root + "/train/n01001/img0.JPEG";
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) / 2);
  EXPECT_NE(error_of([&] { decode_jpeg(victim, 1); }).find(victim + ": corrupt or unsupported JPEG"), std::string::npos);
  std::ofstream(root + "/train/n01000/img0.JPEG", std::ios::trunc) << "GIF89a not a jpeg";
  const JpegFolderSource source(scan_jpeg_folder(root + "/train"), true);
  InputPipeline pipeline(source, 4, 0, 1, 7, true, 2);
  pipeline.start_epoch(0);
  const std::string m = error_of([&] { pipeline.next_images(); });
  EXPECT_NE(m.find("corrupt or unsupported JPEG"), std::string::npos) << m;
  EXPECT_NE(m.find("/img0.JPEG"), std::string::npos) << m;
}

// --eval_during_training_every_n_epochs: after each epoch in which a multiple of N falls. 0.7
// evaluated after none of epochs 1 and 2 (fmod gave 0.3, 0.6), 0.5 once an epoch.
TEST(EvaluationDue, EveryEpochInWhichAMultipleOfNFalls) {
  auto due = [](double every, int epochs) {
    std::vector<int> at;
    for (int e = 1; e <= epochs; ++e)
      if (evaluation_due(e, every)) at.push_back(e);
    return at;
  };
  EXPECT_EQ(due(1, 4), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(due(2, 7), (std::vector<int>{2, 4, 6}));
  EXPECT_EQ(due(0.5, 3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(due(0.7, 3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(due(2.5, 10), (std::vector<int>{3, 5, 8, 10}));
  EXPECT_EQ(due(0.1, 3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(due(0, 5), (std::vector<int>{}));
}

TEST(LrSchedule, PiecewiseWarmupCosineAndScaling) {
  const LrSchedule p = make_lr_schedule(0.5, "0.1;82;0.01;123;0.001", 0, false, 164, 128, 0);
  EXPECT_DOUBLE_EQ(p.at(0), 0.1);
  EXPECT_DOUBLE_EQ(p.at(81.9), 0.1);
  EXPECT_NEAR(p.at(82), 0.01, 1e-12);
  EXPECT_NEAR(p.at(150), 0.001, 1e-12);
  const LrSchedule w = make_lr_schedule(0.4, "", 5, false, 90, 1024, 256);  // 0.4 x 1024 / 256 = 1.6
  EXPECT_NEAR(w.at(2.5), 0.8, 1e-12);
  EXPECT_NEAR(w.at(10), 1.6, 1e-12);
  const LrSchedule c = make_lr_schedule(0.2, "", 0, true, 10, 128, 0);
  EXPECT_NEAR(c.at(5), 0.1, 1e-12);
  EXPECT_NEAR(c.at(10), 0.0, 1e-12);
  // a boundary inside the warm-up: the ramp goes to the first rate, as tf_cnn_benchmarks' (it ramped
  // the current piece's, 0.01 x 1.5 / 2 at epoch 1.5), then the schedule
  const LrSchedule pw = make_lr_schedule(0.1, "0.1;1;0.01", 2, false, 4, 128, 0);
  EXPECT_NEAR(pw.at(0.5), 0.025, 1e-12);
  EXPECT_NEAR(pw.at(1.5), 0.075, 1e-12);
  EXPECT_NEAR(pw.at(2), 0.01, 1e-12);
  // under a cosine the ramp takes the decayed rate of the moment
  const LrSchedule cw = make_lr_schedule(0.2, "", 5, true, 10, 128, 0);
  EXPECT_NEAR(cw.at(2.5), 0.2 * 0.5 * (1 + std::cos(M_PI * 0.25)) * 0.5, 1e-12);
  EXPECT_THROW(make_lr_schedule(0.1, "0.1;82", 0, false, 10, 1, 0), ConfigError);
  EXPECT_THROW(make_lr_schedule(0.1, "0.1;82;0.01;50;0.001", 0, false, 10, 1, 0), ConfigError);
  EXPECT_THROW(make_lr_schedule(0.1, "0.1;x;0.01", 0, false, 10, 1, 0), ConfigError);
  // the rate the JSON's run.learning_rate records: where the schedule starts, as the steps use it
  EXPECT_DOUBLE_EQ(scheduled_base_rate(0.1, "0.2;0.002;0.02", 32, 16), 0.4);
  EXPECT_DOUBLE_EQ(scheduled_base_rate(0.1, "", 64, 16), 0.4);
  EXPECT_DOUBLE_EQ(scheduled_base_rate(0.1, "", 64, 0), 0.1);
}

}  // namespace
}  // namespace cnnbench
