// harness/data/make_tfrecords.h — `cnnbench make_tfrecords`: turns an ImageNet-style JPEG folder
// (ROOT/train/<class>/*.JPEG, ROOT/val/<class>/*.JPEG) into TFRecord shards in the layout
// TensorFlow's build_imagenet_data.py writes (train-00000-of-NNNNN, validation-00000-of-NNNNN;
// one tf.train.Example per image, files in a seeded random order so each shard mixes classes,
// labels 1..classes in the sorted order of the class folders). No TensorFlow needed.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace cnnbench {

// Exit code: 0, or 2 with one line on `err` (a bad argument, an unreadable JPEG, a folder that
// already holds shards). A shard is written whole or not at all.
int make_tfrecords_command(const std::vector<std::string>& args, std::FILE* out, std::FILE* err);

}  // namespace cnnbench
