// tests/fuzz/write_seed_corpus.cc — writes the seed corpus of every harness, in the real formats
// and where possible by the code that writes them for real: write_seed_corpus OUT_DIR makes
// OUT_DIR/<harness>/ (tests/fuzz/corpus/ holds its output; the result JSON and results.csv seeds
// are copies of results/baseline/, which cnnbench wrote).
#include <cstdio>  // before jpeglib.h (through test_files.h), which needs FILE and size_t
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../test_files.h"
#include "fuzz_files.h"
#include "fuzz_plan.h"
#include "harness/data/image_example.h"
#include "harness/data/tfrecord.h"
#include "harness/run/checkpoint.h"
#include "kernels/search_choices.h"

using namespace cnnbench;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string args(const std::vector<std::string>& list) {  // fuzz_flags: NUL-separated
  std::string out;
  for (const std::string& a : list) out += a + '\0';
  return out;
}

std::string cifar_records(int n) {
  std::string out;
  for (int r = 0; r < n; ++r) {
    out += static_cast<char>(r % 10);
    for (int p = 0; p < 3072; ++p) out += static_cast<char>((r * 7 + p) % 251);
  }
  return out;
}

// fuzz_idx's input: modes, the images file's length (2 bytes, little-endian), images, labels.
std::string idx_input(int modes, const std::string& images, const std::string& labels) {
  return std::string(1, static_cast<char>(modes)) + static_cast<char>(images.size() & 0xff) +
         static_cast<char>(images.size() >> 8) + images + labels;
}

std::string gzipped(const fs::path& scratch, const std::string& bytes) {
  testing::write_file(scratch.string(), bytes, true);
  return fuzz::read_bytes(scratch);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: write_seed_corpus OUT_DIR SOURCE_DIR\n");
    return 2;
  }
  const fs::path out = argv[1], source = argv[2];
  fs::create_directories(out);

  put(out / "flags/train", args({"--model=resnet20", "--batch_size=32", "--num_batches=20", "--num_intra_threads=2"}));
  put(out / "flags/space_form", args({"--model", "resnet50", "--use_fp16", "--num_warmup_batches", "5",
                                      "--fusion_threshold_mb=0.5", "--compression=bf16"}));
  put(out / "flags/convergence", args({"--model=small_cnn", "--data_dir=fm", "--num_epochs=1.5",
                                       "--piecewise_learning_rate_schedule=0.1;1;0.01", "--optimizer=momentum",
                                       "--num_data_workers=2", "--train_dir=ckpt", "--resume"}));
  put(out / "flags/gpu", args({"--device=gpu", "--allreduce=nccl", "--fp16_enable_auto_loss_scale",
                               "--fp16_loss_scale=128", "--collective_timeout_sec=60"}));
  put(out / "flags/allreduce", args({"--mode=allreduce", "--allreduce=gloo", "--allreduce_max_mb=4", "--seed=7"}));

  for (const char* preset : {"resnet20_synthetic.toml", "resnet50_synthetic.toml", "vgg16_synthetic.toml",
                             "cifar10_resnet20.toml", "fashion_mnist.toml"})
    put(out / "config_toml" / preset, fuzz::read_bytes(source / "configs" / preset));

  put(out / "cifar10/two_records.bin", cifar_records(2));
  put(out / "cifar10/one_record.bin", cifar_records(1));

  std::vector<uint8_t> pixels(2 * 28 * 28), labels = {3, 9};
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 13);
  const std::string images = testing::idx_bytes({2, 28, 28}, pixels), label_file = testing::idx_bytes({2}, labels);
  put(out / "idx/plain", idx_input(0, images, label_file));
  put(out / "idx/compressed_here", idx_input(1 | (1 << 2), images, label_file));
  const fs::path scratch = out / "scratch.gz";
  put(out / "idx/gzip_stream", idx_input(2 | (2 << 2), gzipped(scratch, images), gzipped(scratch, label_file)));
  fs::remove(scratch);

  const fs::path jpeg_scratch = out / "scratch.jpeg";
  testing::write_jpeg(jpeg_scratch.string(), 40, 24, 1);
  put(out / "jpeg/rgb_40x24.JPEG", fuzz::read_bytes(jpeg_scratch));
  testing::write_jpeg(jpeg_scratch.string(), 9, 33, 2, /*grey=*/true);
  put(out / "jpeg/grey_9x33.JPEG", fuzz::read_bytes(jpeg_scratch));
  fs::remove(jpeg_scratch);

  // ImageNet shards: Examples as build_imagenet_data.py writes them (one with a bounding box), and
  // a shard of two records written by the shards' own writer
  ImageExample example;
  testing::write_jpeg(jpeg_scratch.string(), 48, 36, 3);
  example.jpeg = fuzz::read_bytes(jpeg_scratch);
  fs::remove(jpeg_scratch);
  example.label = 7;
  example.synset = "n01440764";
  example.filename = "n01440764_10026.JPEG";
  example.width = 48;
  example.height = 36;
  const std::string plain = serialize_image_example(example);
  example.boxes = {{0.1f, 0.2f, 0.6f, 0.9f}};
  const std::string boxed = serialize_image_example(example);
  put(out / "image_example/plain", plain);
  put(out / "image_example/with_box", boxed);
  const fs::path shard = out / "tfrecord/train-00000-of-00001";
  fs::create_directories(shard.parent_path());
  {
    TfRecordWriter writer(shard.string(), /*atomic=*/true);
    writer.write(plain);
    writer.write(boxed);
    writer.close();
  }
  put(out / "tfrecord/no_records", "");
  {
    TfRecordWriter writer((out / "tfrecord/one_short_record").string(), true);
    writer.write("x");
    writer.close();
  }

  put(out / "jpeg_folder/train_only", "n01/a.JPEG\nn01/b.jpg\nn02/c.jpeg\nn02/notes.txt\nREADME\n");
  put(out / "jpeg_folder/train_and_val", "n01/a.JPEG\nn02/b.JPEG\nempty/\n---\nn01/v.JPEG\nn02/w.JPG\n");
  put(out / "jpeg_folder/unknown_val_class", "n01/a.JPEG\n---\nn03/x.JPEG\n");

  fuzz::TinyPlan plan;
  init_parameters(plan.layout(), plan.parameters().data(), plan.buffers().data(), 1);
  const fs::path ckpt_dir = out / "scratch_checkpoints";
  const std::string written =
      write_checkpoint(ckpt_dir.string(), plan, CheckpointInfo{fuzz::tiny_model, 3, 120, 42, "", -1, std::nullopt, ""});
  put(out / "checkpoint/checkpoint-epoch-0003.ckpt", fuzz::read_bytes(written));
  // a run's checkpoint as it writes them now: the training time, time to accuracy and history
  CheckpointInfo with_history{fuzz::tiny_model, 2, 80, 42, "", 12.5, std::nullopt, ""};
  TimeToAccuracy target;
  target.target = 0.5;
  target.observe(0.55, 1.2, 6.25, 1, 40);
  with_history.time_to_accuracy = target;
  EpochMetrics first, second;
  first.epoch = 1, first.images = 40, first.train_loss = 2.0, first.seconds = 5.0, first.evaluated = true;
  first.test_loss = 1.2, first.test_top1 = 0.55, first.test_top5 = 0.9, first.elapsed_sec = 6.25;
  second.epoch = 2, second.images = 80, second.train_loss = 1.5, second.seconds = 5.0;
  with_history.history = std::vector<EpochMetrics>{first, second};
  with_history.loss_scale = LossScaleState{1024, 7, 1};
  put(out / "checkpoint/checkpoint-epoch-0002-history.ckpt",
      fuzz::read_bytes(write_checkpoint(ckpt_dir.string(), plan, with_history)));
  fs::remove_all(ckpt_dir);

  for (const char* name : {"resnet20_b32_1rank.json", "resnet20_b32_2ranks_mpi.json"})
    put(out / "result_json" / name, fuzz::read_bytes(source / "results/baseline" / name));
  put(out / "results_csv/results.csv", fuzz::read_bytes(source / "results/baseline/results.csv"));

  // the search's choices as a GPU plan keeps them (kernels/cuda/search_recall.cc's keys and values)
  SearchChoices choices;
  const std::string h200 = "NVIDIA H200 sm_90 cuDNN 91900 driver 58015", h100 = "NVIDIA H100 80GB HBM3 sm_90 cuDNN 91900 driver 58015";
  choices.put(h200, "conv f16:256x64x224x224:64 3x3 s1 p1", "1 1 1 1 1 1 1 2.1000 2.6000 1 3.0000 3.4000 16777216");
  choices.put(h200, "graph fwd:256:64:224:224:64:3:3:224:224:1:1:1:bias_relu_out", "0 0 2 12 2.1000");
  choices.put(h200, "input padding f16:256x3x224x224:256x3x224x224:64 3x3 s1 p1", "8 4.1000 2.2000");
  choices.put(h100, "conv f16:tf32:32x256x56x56:64 1x1", "6 0 1 1 0 2 0 0.0000 0.0000 0 0.0000 0.0000 0");
  put(out / "algorithm_cache/two_gpus.txt", choices.text());
  std::string crlf;
  for (const char c : choices.text()) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  put(out / "algorithm_cache/edited_crlf.txt", crlf + "\r\n");
  put(out / "algorithm_cache/not_one.json", "{\"schema\": \"cnnbench.result/1\"}\n");
  return 0;
}
