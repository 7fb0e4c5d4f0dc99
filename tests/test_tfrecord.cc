// TFRecord shards as tf_cnn_benchmarks users hold ImageNet: the CRC-32C of the specification, the
// record framing and every kind of damage named by file and offset, tf.train.Example images,
// `cnnbench make_tfrecords`, and the streaming pipeline across ranks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "harness/data/crc32c.h"
#include "harness/data/image_example.h"
#include "harness/data/jpeg_folder.h"
#include "harness/data/make_tfrecords.h"
#include "harness/data/tfrecord.h"
#include "harness/data/tfrecord_pipeline.h"
#include "proto/example.pb.h"
#include "cli_run.h"  // fresh_dir
#include "test_files.h"
#include "test_util.h"

namespace cnnbench {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// RFC 3720 (iSCSI), appendix B.4, and the customary check value of "123456789".
TEST(Crc32c, MatchesThePublishedVectors) {
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<char>(i);
    down[i] = static_cast<char>(31 - i);
  }
  for (auto crc : {&crc32c, &crc32c_table}) {
    EXPECT_EQ(crc("123456789", 9, 0), 0xe3069283u);
    EXPECT_EQ(crc(zeros.data(), 32, 0), 0x8a9136aau);
    EXPECT_EQ(crc(ones.data(), 32, 0), 0x62a8ab43u);
    EXPECT_EQ(crc(up.data(), 32, 0), 0x46dd794eu);
    EXPECT_EQ(crc(down.data(), 32, 0), 0x113fdb5cu);
  }
  // the fast path agrees with the table at every length and alignment, and continues a CRC
  std::mt19937 rng(3);
  std::string bytes(1000, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  for (size_t start : {0, 1, 3, 7})
    for (size_t n : {0, 1, 7, 8, 9, 63, 500})
      EXPECT_EQ(crc32c(bytes.data() + start, n), crc32c_table(bytes.data() + start, n)) << start << " " << n;
  EXPECT_EQ(crc32c(bytes.data() + 10, 90, crc32c(bytes.data(), 10)), crc32c(bytes.data(), 100));
  EXPECT_EQ(mask_crc(0), 0xa282ead8u);
}

TEST(TfRecord, RecordsRoundTripInAnyBlockSize) {
  const std::string path = fresh_dir("tfrecord_ok") + "/records";
  const std::vector<std::string> records = {"", "a", std::string(100000, 'x'), "last"};
  {
    TfRecordWriter w(path, true);
    for (const std::string& r : records) w.write(r);
    EXPECT_FALSE(fs::exists(path));  // written as PATH.tmp until closed
    w.close();
  }
  EXPECT_EQ(fs::file_size(path), 16 * 4 + 100005u);
  EXPECT_EQ(count_tfrecords(path), 4);
  for (size_t block : {size_t{16}, size_t{4} << 20}) {
    TfRecordReader in(path, block);
    std::string r;
    for (const std::string& expected : records) {
      ASSERT_TRUE(in.next(r));
      EXPECT_EQ(r, expected);
    }
    EXPECT_EQ(in.record_offset(), 16 + 17u + 100016u);
    EXPECT_FALSE(in.next(r));
  }
  // a writer dropped before close() leaves nothing behind
  { TfRecordWriter w(path + "2", true); w.write("x"); }
  EXPECT_FALSE(fs::exists(path + "2"));
  EXPECT_FALSE(fs::exists(path + "2.tmp"));
}

TEST(TfRecord, EveryKindOfDamageNamesTheFileAndOffset) {
  const std::string dir = fresh_dir("tfrecord_bad");
  {
    TfRecordWriter w(dir + "/good", true);
    w.write("first record");
    w.write("second record");
    w.close();
  }
  const std::string good = slurp(dir + "/good");
  const size_t second = 16 + 12;  // offset of the second record
  auto damaged = [&](const std::string& name, std::string bytes) {
    spit(dir + "/" + name, bytes);
    std::string r, what;
    try {
      TfRecordReader in(dir + "/" + name);
      while (in.next(r)) {
      }
    } catch (const TfRecordError& e) {
      what = e.what();
    }
    return what;
  };
  std::string bytes = good;
  bytes[second + 12 + 3] ^= 1;  // a bit of the second record's data
  EXPECT_EQ(damaged("data", bytes), dir + "/data: record at byte 28: the data's CRC does not match (damaged data)");
  bytes = good;
  bytes[second] ^= 1;  // its length
  EXPECT_NE(damaged("length", bytes).find("/length: record at byte 28: the length's CRC does not match"), std::string::npos);
  EXPECT_NE(damaged("short", good.substr(0, good.size() - 3)).find("/short: record at byte 28: truncated: announces 13 bytes"),
            std::string::npos);
  EXPECT_NE(damaged("header", good.substr(0, second + 5)).find("/header: record at byte 28: truncated"),
            std::string::npos);
  EXPECT_NE(damaged("text", "this is not a TFRecord file at all").find("/text: record at byte 0: the length's CRC"),
            std::string::npos);
  // a length far beyond the limit, with a correct CRC, asks for nothing
  std::string huge(12, '\0');
  for (int i = 0; i < 8; ++i) huge[i] = static_cast<char>(i == 5 ? 1 : 0);  // 2^40 bytes
  const uint32_t crc = masked_crc32c(huge.data(), 8);
  for (int i = 0; i < 4; ++i) huge[8 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  EXPECT_NE(damaged("huge", huge).find("announces 1099511627776 bytes, more than the 256 MiB"), std::string::npos);
  EXPECT_NE(error_of([&] { count_tfrecords(dir + "/short"); }).find("record at byte 28: truncated"), std::string::npos);
  EXPECT_NE(error_of([&] { TfRecordReader in(dir + "/absent"); }).find("/absent: cannot open"), std::string::npos);
}

TEST(ImageExample, FieldsRoundTripAndMissingOnesAreNamed) {
  ImageExample e;
  e.jpeg = std::string("\xff\xd8 not really", 12);
  e.label = 7;
  e.synset = "n01440764";
  e.height = 375;
  e.width = 500;
  e.boxes = {{0.1f, 0.2f, 0.5f, 0.9f}, {0.0f, 0.0f, 1.0f, 1.0f}};
  const std::string bytes = serialize_image_example(e);
  EXPECT_EQ(bytes, serialize_image_example(e));  // deterministic
  const ImageExample back = parse_image_example(bytes);
  EXPECT_EQ(back.jpeg, e.jpeg);
  EXPECT_EQ(back.label, 7);
  EXPECT_EQ(back.synset, "n01440764");
  EXPECT_EQ(back.width, 500);
  ASSERT_EQ(back.boxes.size(), 2u);
  EXPECT_FLOAT_EQ(back.boxes[0].ymax, 0.9f);

  EXPECT_EQ(error_of([] { parse_image_example("\xff\xff\xff garbage"); }), "not a tf.train.Example (protobuf parse failed)");
  tf::Example no_label;
  (*no_label.mutable_features()->mutable_feature())["image/encoded"].mutable_bytes_list()->add_value("x");
  EXPECT_EQ(error_of([&] { parse_image_example(no_label.SerializeAsString()); }),
            "the Example has no image/class/label integer");
  tf::Example float_label = no_label;
  (*float_label.mutable_features()->mutable_feature())["image/class/label"].mutable_float_list()->add_value(1);
  EXPECT_EQ(error_of([&] { parse_image_example(float_label.SerializeAsString()); }),
            "the Example has no image/class/label integer");
  tf::Example odd_boxes = float_label;
  (*odd_boxes.mutable_features()->mutable_feature())["image/class/label"].mutable_int64_list()->add_value(1);
  (*odd_boxes.mutable_features()->mutable_feature())["image/object/bbox/xmin"].mutable_float_list()->add_value(0);
  EXPECT_EQ(error_of([&] { parse_image_example(odd_boxes.SerializeAsString()); }),
            "image/object/bbox/{xmin,ymin,xmax,ymax} are not four lists of one length");
  EXPECT_EQ(error_of([] { parse_image_example(""); }), "the Example has no image/encoded bytes");
  // found by review of fuzz_image_example: an empty image was read but not written back, and a
  // negative height read but not written back
  tf::Example empty_image;
  (*empty_image.mutable_features()->mutable_feature())["image/encoded"].mutable_bytes_list()->add_value("");
  (*empty_image.mutable_features()->mutable_feature())["image/class/label"].mutable_int64_list()->add_value(1);
  EXPECT_EQ(error_of([&] { parse_image_example(empty_image.SerializeAsString()); }),
            "the Example has no image/encoded bytes");
  e.height = -5;
  EXPECT_EQ(parse_image_example(serialize_image_example(e)).height, -5);
}

// An image black but for a white strip on its left fifth, with a box around the strip: every
// training crop must cover a tenth of the box, so holds white; without the box some crops miss it.
TEST(ImageExample, TrainingCropsHonourTheBoundingBox) {
  RgbImage image;
  image.width = 500;
  image.height = 375;
  image.pixels.assign(500 * 375 * 3, 0);
  for (int y = 0; y < 375; ++y)
    for (int x = 0; x < 100; ++x)
      for (int c = 0; c < 3; ++c) image.pixels[(y * 500 + x) * 3 + c] = 255;
  std::vector<float> out(3 * 64 * 64);
  auto holds_white = [&](const std::vector<Box>& boxes, uint64_t seed) {
    std::mt19937_64 rng(seed);
    make_imagenet_example(image, true, 64, boxes, rng, out.data());
    return *std::max_element(out.begin(), out.end()) > 1.5f;  // (1 - 0.485) / 0.229 = 2.2 for white
  };
  int with_box = 0, without = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    with_box += holds_white({{0.0f, 0.0f, 0.2f, 1.0f}}, seed);
    without += holds_white({}, seed);
  }
  EXPECT_EQ(with_box, 200);
  EXPECT_LT(without, 200);
}

struct Shards {
  std::string dir;
  TfRecordShards train, validation;
};

// 3 classes x 5 training images in 4 shards, 3 validation images in 2 shards.
Shards make_shards(const std::string& name) {
  const std::string root = fresh_dir(name);
  testing::write_jpeg_folders(root + "/jpeg", 3, 5);
  std::FILE* sink = std::tmpfile();
  EXPECT_EQ(make_tfrecords_command({root + "/jpeg", root + "/shards", "--train_shards=4", "--validation_shards=2",
                                    "--threads=2"},
                                   sink, sink),
            0);
  std::fclose(sink);
  Shards s;
  s.dir = root + "/shards";
  s.train.files = find_tfrecord_shards(s.dir, "train");
  s.validation.files = find_tfrecord_shards(s.dir, "validation");
  for (const auto& f : s.train.files) s.train.records.push_back(count_tfrecords(f));
  for (const auto& f : s.validation.files) s.validation.records.push_back(count_tfrecords(f));
  return s;
}

TEST(MakeTfRecords, WritesNamedShardsOfExamplesAndRefusesToOverwrite) {
  const Shards s = make_shards("make_tfrecords");
  ASSERT_EQ(s.train.files.size(), 4u);
  EXPECT_EQ(fs::path(s.train.files[0]).filename(), "train-00000-of-00004");
  EXPECT_EQ(fs::path(s.validation.files[1]).filename(), "validation-00001-of-00002");
  EXPECT_EQ(s.train.total(), 15);
  EXPECT_EQ(s.validation.total(), 3);
  std::map<int64_t, int> labels;
  for (const std::string& f : s.train.files) {
    TfRecordReader in(f);
    std::string record;
    while (in.next(record)) {
      const ImageExample e = parse_image_example(record);
      ++labels[e.label];
      EXPECT_EQ(e.height, 260);
      EXPECT_EQ(e.synset, "n0" + std::to_string(1000 + e.label - 1));
      EXPECT_NO_THROW(decode_jpeg_bytes(reinterpret_cast<const unsigned char*>(e.jpeg.data()), e.jpeg.size(), f, 32));
    }
  }
  EXPECT_EQ(labels, (std::map<int64_t, int>{{1, 5}, {2, 5}, {3, 5}}));
  std::FILE* sink = std::tmpfile();
  EXPECT_EQ(make_tfrecords_command({fs::path(s.dir).parent_path().string() + "/jpeg", s.dir}, sink, sink), 2);
  EXPECT_EQ(make_tfrecords_command({"only-one"}, sink, sink), 2);
  EXPECT_EQ(make_tfrecords_command({"a", "b", "--train_shards=0"}, sink, sink), 2);
  std::rewind(sink);
  char line[512] = {};
  ASSERT_NE(std::fgets(line, sizeof(line), sink), nullptr);
  EXPECT_NE(std::string(line).find("holds TFRecord shards already"), std::string::npos) << line;
  std::fclose(sink);
}

// A folder's shards are one whole set or none: a shard missing, a second set, an index past the
// set or an empty shard is refused naming it; files named otherwise are not shards.
TEST(TfRecordShardSet, OnlyAWholeSetIsTakenAndPartsAreNamed) {
  const Shards s = make_shards("shard_set");
  auto refusal = [&](const std::string& subset) -> std::string {
    try {
      find_tfrecord_shards(s.dir, subset);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  spit(s.dir + "/train-00000-of-00004.md5", "d41d8cd98f00b204e9800998ecf8427e\n");
  EXPECT_EQ(refusal("train"), "");
  EXPECT_EQ(find_tfrecord_shards(s.dir, "train").size(), 4u) << "a .md5 beside a shard is no shard";
  // one shard under two zero paddings would be read twice an epoch
  fs::copy_file(s.dir + "/train-00001-of-00004", s.dir + "/train-1-of-4");
  EXPECT_NE(refusal("train").find("shard 1 of 4 train shards named twice"), std::string::npos) << refusal("train");
  fs::remove(s.dir + "/train-1-of-4");
  const std::string third = s.dir + "/train-00002-of-00004";
  fs::rename(third, s.dir + "/aside");
  EXPECT_NE(refusal("train").find("1 of 4 train shards missing, the first train-00002-of-00004"), std::string::npos)
      << refusal("train");
  EXPECT_EQ(list_tfrecord_shards(s.dir, "train").size(), 3u);
  EXPECT_EQ(refusal("validation"), "") << "each split is its own set";
  fs::rename(s.dir + "/aside", third);
  spit(s.dir + "/train-00000-of-00002", slurp(third));
  EXPECT_NE(refusal("train").find("train shards of 2 sets (1 of -of-00002, 4 of -of-00004)"), std::string::npos)
      << refusal("train");
  fs::remove(s.dir + "/train-00000-of-00002");
  spit(s.dir + "/train-00004-of-00004", slurp(third));
  EXPECT_NE(refusal("train").find("train-00004-of-00004: index past the set's 4 shards"), std::string::npos)
      << refusal("train");
  fs::remove(s.dir + "/train-00004-of-00004");
  spit(third, "");
  EXPECT_NE(refusal("train").find("train-00002-of-00004: an empty shard"), std::string::npos) << refusal("train");
}

// A conversion that stops (a file among the images that is no JPEG) leaves no shards behind, so
// the folder never holds part of a set and a second try can write it.
TEST(MakeTfRecords, AConversionThatStopsLeavesNoShards) {
  const std::string root = fresh_dir("make_tfrecords_stops");
  testing::write_jpeg_folders(root + "/jpeg", 3, 5);
  spit(root + "/jpeg/val/n01001/zz_not_a.JPEG", "not a JPEG at all");
  std::FILE* sink = std::tmpfile();
  EXPECT_EQ(make_tfrecords_command({root + "/jpeg", root + "/shards", "--train_shards=4", "--validation_shards=2",
                                    "--threads=2"},
                                   sink, sink),
            2);
  EXPECT_TRUE(list_tfrecord_shards(root + "/shards", "train").empty());
  EXPECT_TRUE(list_tfrecord_shards(root + "/shards", "validation").empty());
  fs::remove(root + "/jpeg/val/n01001/zz_not_a.JPEG");
  EXPECT_EQ(make_tfrecords_command({root + "/jpeg", root + "/shards", "--train_shards=4", "--validation_shards=2"},
                                   sink, sink),
            0);
  std::fclose(sink);
  EXPECT_EQ(find_tfrecord_shards(root + "/shards", "train").size(), 4u);
}

// Labels of every batch of an epoch, and the first image's first value of each batch.
std::vector<int32_t> epoch_labels(BatchPipeline& p, int64_t epoch, std::vector<float>* firsts = nullptr) {
  std::vector<int32_t> labels;
  p.start_epoch(epoch);
  for (int64_t s = 0; s < p.steps_per_epoch(); ++s) {
    const float* images = p.next_images();
    if (firsts) firsts->push_back(images[0]);
    labels.insert(labels.end(), p.current_labels(), p.current_labels() + p.current_valid());
  }
  return labels;
}

TEST(TfRecordPipeline, TrainingIsDeterministicAndEvaluationCoversEveryRecordOnce) {
  const Shards s = make_shards("tfrecord_pipeline");
  for (int ranks : {1, 2, 3, 5}) {  // 5 ranks: fewer train shards than ranks, records dealt instead
    std::multiset<int32_t> seen;
    for (int rank = 0; rank < ranks; ++rank) {
      // make_tfrecords' labels 1..3 as stored (0 left for background): 4 outputs
      TfRecordPipeline train(s.train, 2, rank, ranks, 9, true, 32, 4, 4, 2), again(s.train, 2, rank, ranks, 9, true, 32, 4, 4, 1);
      EXPECT_EQ(train.steps_per_epoch(), 15 / ranks / 2);
      std::vector<float> a, b;
      for (int64_t epoch = 0; epoch < 3; ++epoch)
        EXPECT_EQ(epoch_labels(train, epoch, &a), epoch_labels(again, epoch, &b)) << ranks << " " << rank;
      EXPECT_EQ(a, b);  // the same images, augmented alike, whatever the number of workers
      for (int32_t l : epoch_labels(train, 3)) {
        EXPECT_GE(l, 1);
        EXPECT_LT(l, 4);
      }
      TfRecordPipeline eval(s.validation, 2, rank, ranks, 9, false, 32, 4, 0, 2);
      for (int32_t l : epoch_labels(eval, 0)) seen.insert(l);
      EXPECT_EQ(epoch_labels(eval, 0), epoch_labels(eval, 0));  // each evaluation reads the pass anew
    }
    EXPECT_EQ(seen, (std::multiset<int32_t>{1, 2, 3})) << ranks << " ranks: each label as stored";
  }
}

// Found by an audit: each reader went on into the next pass alone and the shuffle buffer carried
// records across passes, so a nominal epoch trained some records twice and others not at all
// (152 of 200 distinct). Now every pass of a rank's stream, cut where its records end, holds each
// of them once, whatever the shards' sizes, the readers, the buffer or the batch.
TEST(RecordStream, EachPassHoldsEveryRecordOfTheRankOnce) {
  const std::string dir = fresh_dir("record_stream_passes");
  const std::vector<int> sizes = {1, 7, 2, 9, 4};  // uneven: the readers end their passes apart
  std::vector<std::string> files;
  for (size_t f = 0; f < sizes.size(); ++f) {
    files.push_back(fmt::format("{}/train-{:05d}-of-{:05d}", dir, f, sizes.size()));
    TfRecordWriter w(files.back(), true);
    for (int r = 0; r < sizes[f]; ++r) w.write(fmt::format("{}/{}", f, r));
    w.close();
  }
  for (int ranks : {1, 2, 7}) {  // 7: fewer shards than ranks, records dealt
    for (int64_t buffer : {int64_t{1}, int64_t{3}, int64_t{1000}}) {
      for (int64_t batch : {int64_t{1}, int64_t{4}}) {
        RecordStreamOptions o;
        o.rank = ranks - 1;
        o.ranks = ranks;
        o.seed = 5;
        o.shuffle_buffer = buffer;
        o.batch_size = batch;
        o.readers = 2;
        RecordStream stream(files, o);
        std::vector<std::string> taken;
        std::vector<StreamRecord> records;
        for (int64_t k = 0; taken.size() < 200; ++k) {
          ASSERT_TRUE(stream.take(k, records));
          for (const StreamRecord& r : records) taken.push_back(r.bytes);
        }
        size_t at = 0;
        for (int64_t pass = 0; pass < 4; ++pass) {
          std::multiset<std::string> expected;
          const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
          if (static_cast<int64_t>(sizes.size()) < ranks) {  // the pass's records dealt: this rank's
            int64_t position = 0;
            for (int32_t f : rank_files(static_cast<int64_t>(sizes.size()), o.rank, ranks, o.seed, pass, true))
              for (int r = 0; r < sizes[f]; ++r)
                if (position++ % ranks == o.rank) expected.insert(fmt::format("{}/{}", f, r));
            ASSERT_EQ(static_cast<int64_t>(expected.size()), (total - o.rank + ranks - 1) / ranks);
          } else {
            for (int32_t f : rank_files(static_cast<int64_t>(sizes.size()), o.rank, ranks, o.seed, pass, true))
              for (int r = 0; r < sizes[f]; ++r) expected.insert(fmt::format("{}/{}", f, r));
          }
          const std::multiset<std::string> got(taken.begin() + static_cast<int64_t>(at),
                                               taken.begin() + static_cast<int64_t>(at + expected.size()));
          EXPECT_EQ(got, expected) << ranks << " ranks, buffer " << buffer << ", batch " << batch << ", pass " << pass;
          at += expected.size();
        }
      }
    }
  }
}

// A --resume inside an epoch starts a fresh pass at its step: the records before it are read
// past (not decoded), and the batches from there are those of the epoch started whole.
TEST(TfRecordPipeline, AnEpochStartedAtABatchGivesTheWholeEpochsBatchesFromThere) {
  const Shards s = make_shards("tfrecord_first_batch");
  for (int ranks : {1, 2}) {
    TfRecordPipeline whole(s.train, 2, 0, ranks, 9, true, 32, 4, 4, 2), resumed(s.train, 2, 0, ranks, 9, true, 32, 4, 4, 2);
    std::vector<float> whole_firsts, resumed_firsts;
    const std::vector<int32_t> labels = epoch_labels(whole, 1, &whole_firsts);
    const int64_t from = 2;
    resumed.start_epoch_at(1, from);
    std::vector<int32_t> resumed_labels;
    for (int64_t step = from; step < resumed.steps_per_epoch(); ++step) {
      resumed_firsts.push_back(resumed.next_images()[0]);
      resumed_labels.insert(resumed_labels.end(), resumed.current_labels(),
                            resumed.current_labels() + resumed.current_valid());
    }
    ASSERT_GT(whole.steps_per_epoch(), from);
    EXPECT_EQ(resumed_labels, std::vector<int32_t>(labels.begin() + 2 * from, labels.end())) << ranks;
    EXPECT_EQ(resumed_firsts, std::vector<float>(whole_firsts.begin() + from, whole_firsts.end())) << ranks;
    // the stream goes on into the next epoch as an unbroken one does
    EXPECT_EQ(epoch_labels(resumed, 2), epoch_labels(whole, 2)) << ranks;
  }
}

TEST(TfRecordPipeline, BadRecordsStopTheRunNamingShardAndOffset) {
  Shards s = make_shards("tfrecord_pipeline_bad");
  // a label beyond the model's classes: with 3 outputs (0..2), label 3 is out of range
  TfRecordPipeline few(s.validation, 3, 0, 1, 1, false, 32, 3, 0, 1);
  few.start_epoch(0);
  const std::string label_error = error_of([&] { few.next_images(); });
  EXPECT_NE(label_error.find("validation-0000"), std::string::npos) << label_error;
  EXPECT_NE(label_error.find(": record at byte "), std::string::npos) << label_error;
  EXPECT_NE(label_error.find("image/class/label 3 is outside 0..2"), std::string::npos) << label_error;
  // a flipped bit in a shard's last record
  std::string bytes = slurp(s.train.files[2]);
  bytes[bytes.size() - 10] ^= 0x10;
  spit(s.train.files[2], bytes);
  TfRecordPipeline train(s.train, 1, 0, 1, 1, true, 32, 4, 1, 2);
  train.start_epoch(0);
  std::string error;
  for (int64_t i = 0; i < train.steps_per_epoch() && error.empty(); ++i) error = error_of([&] { train.next_images(); });
  EXPECT_NE(error.find("train-00002-of-00004: record at byte "), std::string::npos) << error;
  EXPECT_NE(error.find("CRC does not match"), std::string::npos) << error;
  // an Example without its image
  ImageExample no_image;
  no_image.label = 1;
  {
    TfRecordWriter w(s.validation.files[0], true);
    w.write(serialize_image_example(no_image));
    w.close();
  }
  s.validation.records[0] = 1;
  TfRecordPipeline eval(s.validation, 1, 0, 1, 1, false, 32, 3, 0, 1);
  eval.start_epoch(0);
  EXPECT_EQ(error_of([&] { eval.next_images(); }),
            s.validation.files[0] + ": record at byte 0: the Example has no image/encoded bytes");
}

}  // namespace
}  // namespace cnnbench
