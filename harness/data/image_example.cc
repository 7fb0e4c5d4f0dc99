#include "harness/data/image_example.h"

#include <stdexcept>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "proto/example.pb.h"

namespace cnnbench {
namespace {

using Map = google::protobuf::Map<std::string, tf::Feature>;

const tf::Feature* find(const Map& features, const char* key) {
  const auto it = features.find(key);
  return it == features.end() ? nullptr : &it->second;
}

const std::string* bytes_of(const Map& features, const char* key) {
  const tf::Feature* f = find(features, key);
  if (!f || f->kind_case() != tf::Feature::kBytesList || f->bytes_list().value_size() != 1) return nullptr;
  return &f->bytes_list().value(0);
}

bool int_of(const Map& features, const char* key, int64_t& out) {
  const tf::Feature* f = find(features, key);
  if (!f || f->kind_case() != tf::Feature::kInt64List || f->int64_list().value_size() != 1) return false;
  out = f->int64_list().value(0);
  return true;
}

const google::protobuf::RepeatedField<float>* floats_of(const Map& features, const char* key) {
  const tf::Feature* f = find(features, key);
  if (!f) return nullptr;
  if (f->kind_case() != tf::Feature::kFloatList) throw std::runtime_error(std::string(key) + " is not a list of floats");
  return &f->float_list().value();
}

tf::Feature bytes_feature(const std::string& v) {
  tf::Feature f;
  f.mutable_bytes_list()->add_value(v);
  return f;
}
tf::Feature int_feature(int64_t v) {
  tf::Feature f;
  f.mutable_int64_list()->add_value(v);
  return f;
}

}  // namespace

ImageExample parse_image_example(const std::string& serialized) {
  tf::Example proto;
  if (!proto.ParseFromString(serialized)) throw std::runtime_error("not a tf.train.Example (protobuf parse failed)");
  const Map& features = proto.features().feature();
  ImageExample e;
  const std::string* jpeg = bytes_of(features, "image/encoded");
  if (!jpeg || jpeg->empty()) throw std::runtime_error("the Example has no image/encoded bytes");
  e.jpeg = *jpeg;
  if (!int_of(features, "image/class/label", e.label))
    throw std::runtime_error("the Example has no image/class/label integer");
  if (const std::string* s = bytes_of(features, "image/class/synset")) e.synset = *s;
  if (const std::string* s = bytes_of(features, "image/filename")) e.filename = *s;
  int_of(features, "image/height", e.height);
  int_of(features, "image/width", e.width);
  const auto* xmin = floats_of(features, "image/object/bbox/xmin");
  const auto* ymin = floats_of(features, "image/object/bbox/ymin");
  const auto* xmax = floats_of(features, "image/object/bbox/xmax");
  const auto* ymax = floats_of(features, "image/object/bbox/ymax");
  if (xmin || ymin || xmax || ymax) {
    if (!xmin || !ymin || !xmax || !ymax || xmin->size() != ymin->size() || xmin->size() != xmax->size() ||
        xmin->size() != ymax->size())
      throw std::runtime_error("image/object/bbox/{xmin,ymin,xmax,ymax} are not four lists of one length");
    for (int i = 0; i < xmin->size(); ++i) {
      const Box b{(*xmin)[i], (*ymin)[i], (*xmax)[i], (*ymax)[i]};
      // a box outside the image or inside out is ignored, as TensorFlow's sampler ignores it
      if (b.xmin >= 0 && b.ymin >= 0 && b.xmax <= 1 && b.ymax <= 1 && b.xmin < b.xmax && b.ymin < b.ymax)
        e.boxes.push_back(b);
    }
  }
  return e;
}

std::string serialize_image_example(const ImageExample& e) {
  tf::Example proto;
  Map& f = *proto.mutable_features()->mutable_feature();
  if (!e.jpeg.empty()) f["image/encoded"] = bytes_feature(e.jpeg);
  f["image/format"] = bytes_feature("JPEG");
  f["image/colorspace"] = bytes_feature("RGB");
  f["image/channels"] = int_feature(3);
  f["image/class/label"] = int_feature(e.label);
  if (!e.synset.empty()) f["image/class/synset"] = bytes_feature(e.synset);
  if (!e.filename.empty()) f["image/filename"] = bytes_feature(e.filename);
  if (e.height != 0) f["image/height"] = int_feature(e.height);  // as read: what it says is not checked
  if (e.width != 0) f["image/width"] = int_feature(e.width);
  if (!e.boxes.empty()) {
    tf::Feature xmin, ymin, xmax, ymax;
    for (const Box& b : e.boxes) {
      xmin.mutable_float_list()->add_value(b.xmin);
      ymin.mutable_float_list()->add_value(b.ymin);
      xmax.mutable_float_list()->add_value(b.xmax);
      ymax.mutable_float_list()->add_value(b.ymax);
    }
    f["image/object/bbox/xmin"] = xmin;
    f["image/object/bbox/ymin"] = ymin;
    f["image/object/bbox/xmax"] = xmax;
    f["image/object/bbox/ymax"] = ymax;
  }
  // the map's keys in a fixed order: the same folder makes the same shards, byte for byte
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    proto.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace cnnbench
