// bench/onednn_layers.cc — onednn_layers: oneDNN's convolution and inner-product primitives on
// every distinct conv and linear layer of resnet50 (batch 32) and vgg16 (batch 16), forward,
// backward data and backward weights, fp32 and bf16, made as cnnbench's CPU plan makes them
// (kernels/onednn/conv.cc, linear_loss.cc: tensors format_tag::any, bias and weight gradient
// fp32, a following ReLU as a post-op, backward hinted by forward, scratchpad to oneDNN; --layout
// nhwc: activations in nhwc, as PyTorch's channels_last). Reorders are set-up, not timed. One
// source for oneDNN 2.x and 3.x (DNNL_VERSION_MAJOR): built against Debian's 2.6 (onednn_layers)
// and a 3.x prefix by scripts/onednn3_compare.sh, which runs both and compares. The layers and
// their counts in a step come from cnnbench_models' graphs.
//   onednn_layers [--models resnet50,vgg16] [--precisions fp32,bf16] [--iterations 10] [--warmup 2]
//     [--threads N (else OMP_NUM_THREADS, else 2)] [--layers NAME,...] [--layout any|nhwc] [--out F]
//   onednn_layers --list     the layers, each with its count in a step
#include <dnnl.hpp>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#endif

#include "models/model_zoo.h"

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// One distinct convolution or linear layer as the plan sees it, and how often a step runs it.
struct Layer {
  std::string name;  // as bench/kernel_cases.cc names it: conv_64x56x56_k3s1p1_to64[_relu]
  bool conv = true, bias = false, relu = false;
  bool first = false;  // reads the images: no data gradient in training
  memory::dims src, weights, dst, strides, pad_l, pad_r;
  int64_t macs = 0;  // whole batch, one direction
  int count = 0;
};

std::string chw(const cnnbench::Shape& s) {
  return std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w);
}

// Every distinct conv and linear layer of `model` in graph order, counted over the step.
std::vector<Layer> distinct_layers(const std::string& model, int64_t batch) {
  using cnnbench::OpKind;
  const cnnbench::Graph g = cnnbench::build_model(model, batch);
  const auto consumers = g.consumers();
  // as OnednnPlan::compile(): inner product makes 2-D tensors, and the ops after it keep them 2-D
  std::vector<bool> flat(g.nodes.size(), false);
  std::vector<Layer> out;
  std::map<std::string, size_t> index;
  for (const cnnbench::Node& n : g.nodes) {
    if (n.kind == OpKind::input) continue;
    const cnnbench::Node& in = g.nodes[n.inputs.at(0)];
    flat[n.id] = n.kind == OpKind::linear ||
                 ((n.kind == OpKind::relu || n.kind == OpKind::batch_norm || n.kind == OpKind::add) && flat[in.id]);
    if (n.kind != OpKind::conv && n.kind != OpKind::linear) continue;
    Layer l;
    l.conv = n.kind == OpKind::conv;
    l.first = in.kind == OpKind::input;
    l.macs = n.forward_macs;
    l.src = flat[in.id] ? memory::dims{in.out.n, in.out.c} : memory::dims{in.out.n, in.out.c, in.out.h, in.out.w};
    if (l.conv) {
      const cnnbench::ConvAttrs& c = n.conv;
      // OnednnPlan's rule (plan_fusions): a ReLU that is the convolution's only reader is folded in
      l.relu = consumers[n.id].size() == 1 && g.nodes[consumers[n.id][0]].kind == OpKind::relu;
      l.bias = c.bias;
      l.weights = {c.out_channels, in.out.c, c.kernel_h, c.kernel_w};
      l.dst = {n.out.n, n.out.c, n.out.h, n.out.w};
      l.strides = {c.stride, c.stride};
      l.pad_l = {c.pad_h, c.pad_w};
      l.pad_r = {(n.out.h - 1) * c.stride + c.kernel_h - in.out.h - c.pad_h,
                 (n.out.w - 1) * c.stride + c.kernel_w - in.out.w - c.pad_w};
      l.name = "conv_" + chw(in.out) + "_" + conv_label(c) + "_to" + std::to_string(c.out_channels) +
               (l.relu ? "_relu" : "");
    } else {
      l.bias = n.linear.bias;
      l.weights = l.src;
      l.weights[0] = n.linear.out_features;
      l.dst = {n.out.n, n.out.c};
      l.name = "linear_" + std::to_string(in.out.c * in.out.h * in.out.w) + "_to" +
               std::to_string(n.linear.out_features);
    }
    const std::string key = l.name + (l.first ? "/first" : "");
    auto [it, fresh] = index.try_emplace(key, out.size());
    if (fresh) out.push_back(l);
    ++out[it->second].count;
  }
  return out;
}

// ---- the primitive descriptors: the only code that differs between oneDNN 2.x and 3.x ----
memory::desc any(const memory::dims& d, dt type) { return memory::desc(d, type, tag::any); }
bool nhwc_activations = false;  // --layout nhwc: activations 4-D in nhwc, else any
memory::desc act(const memory::dims& d, dt t) { return nhwc_activations && d.size() == 4 ? memory::desc(d, t, tag::nhwc) : any(d, t); }
memory::desc bias_md(const Layer& l) { return memory::desc({l.dst[1]}, dt::f32, tag::x); }
const dnnl::algorithm direct = dnnl::algorithm::convolution_direct;

dnnl::primitive_attr relu_attr(bool relu) {
  dnnl::primitive_attr attr;
  if (!relu) return attr;
  dnnl::post_ops ops;
#if DNNL_VERSION_MAJOR >= 3
  ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
#else
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
#endif
  attr.set_post_ops(ops);
  return attr;
}

dnnl::primitive_desc forward_pd(const dnnl::engine& e, const Layer& l, dt a) {
  const auto prop = dnnl::prop_kind::forward_training;
#if DNNL_VERSION_MAJOR >= 3
  if (l.conv)
    return l.bias ? dnnl::convolution_forward::primitive_desc(e, prop, direct, act(l.src, a), any(l.weights, a),
                                                              bias_md(l), act(l.dst, a), l.strides, l.pad_l,
                                                              l.pad_r, relu_attr(l.relu))
                  : dnnl::convolution_forward::primitive_desc(e, prop, direct, act(l.src, a), any(l.weights, a),
                                                              act(l.dst, a), l.strides, l.pad_l, l.pad_r,
                                                              relu_attr(l.relu));
  return l.bias ? dnnl::inner_product_forward::primitive_desc(e, prop, act(l.src, a), any(l.weights, a), bias_md(l),
                                                              act(l.dst, a))
                : dnnl::inner_product_forward::primitive_desc(e, prop, act(l.src, a), any(l.weights, a),
                                                              act(l.dst, a));
#else
  if (l.conv) {
    auto d = l.bias ? dnnl::convolution_forward::desc(prop, direct, act(l.src, a), any(l.weights, a), bias_md(l),
                                                      act(l.dst, a), l.strides, l.pad_l, l.pad_r)
                    : dnnl::convolution_forward::desc(prop, direct, act(l.src, a), any(l.weights, a), act(l.dst, a),
                                                      l.strides, l.pad_l, l.pad_r);
    return dnnl::convolution_forward::primitive_desc(d, relu_attr(l.relu), e);
  }
  auto d = l.bias ? dnnl::inner_product_forward::desc(prop, act(l.src, a), any(l.weights, a), bias_md(l), act(l.dst, a))
                  : dnnl::inner_product_forward::desc(prop, act(l.src, a), any(l.weights, a), act(l.dst, a));
  return dnnl::inner_product_forward::primitive_desc(d, e);
#endif
}

dnnl::primitive_desc backward_data_pd(const dnnl::engine& e, const Layer& l, dt a, const dnnl::primitive_desc& fwd) {
#if DNNL_VERSION_MAJOR >= 3
  if (l.conv)
    return dnnl::convolution_backward_data::primitive_desc(e, direct, act(l.src, a), any(l.weights, a), act(l.dst, a),
                                                           l.strides, l.pad_l, l.pad_r,
                                                           dnnl::convolution_forward::primitive_desc(fwd.get()));
  return dnnl::inner_product_backward_data::primitive_desc(e, act(l.src, a), any(l.weights, a), act(l.dst, a),
                                                           dnnl::inner_product_forward::primitive_desc(fwd.get()));
#else
  if (l.conv)
    return dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(direct, act(l.src, a), any(l.weights, a), act(l.dst, a), l.strides,
                                              l.pad_l, l.pad_r),
        e, dnnl::convolution_forward::primitive_desc(fwd.get()));
  return dnnl::inner_product_backward_data::primitive_desc(
      dnnl::inner_product_backward_data::desc(act(l.src, a), any(l.weights, a), act(l.dst, a)), e,
      dnnl::inner_product_forward::primitive_desc(fwd.get()));
#endif
}

// The source in the forward primitive's layout; the weight gradient fp32 (the plan's any_md).
dnnl::primitive_desc backward_weights_pd(const dnnl::engine& e, const Layer& l, dt a,
                                         const dnnl::primitive_desc& fwd) {
  const memory::desc src = fwd.src_desc(), dw = any(l.weights, dt::f32), ddst = act(l.dst, a);
#if DNNL_VERSION_MAJOR >= 3
  if (l.conv) {
    const dnnl::convolution_forward::primitive_desc hint(fwd.get());
    return l.bias ? dnnl::convolution_backward_weights::primitive_desc(e, direct, src, dw, bias_md(l), ddst, l.strides,
                                                                       l.pad_l, l.pad_r, hint)
                  : dnnl::convolution_backward_weights::primitive_desc(e, direct, src, dw, ddst, l.strides, l.pad_l,
                                                                       l.pad_r, hint);
  }
  const dnnl::inner_product_forward::primitive_desc hint(fwd.get());
  return l.bias ? dnnl::inner_product_backward_weights::primitive_desc(e, src, dw, bias_md(l), ddst, hint)
                : dnnl::inner_product_backward_weights::primitive_desc(e, src, dw, ddst, hint);
#else
  if (l.conv) {
    auto d = l.bias ? dnnl::convolution_backward_weights::desc(direct, src, dw, bias_md(l), ddst, l.strides, l.pad_l,
                                                               l.pad_r)
                    : dnnl::convolution_backward_weights::desc(direct, src, dw, ddst, l.strides, l.pad_l, l.pad_r);
    return dnnl::convolution_backward_weights::primitive_desc(d, e, dnnl::convolution_forward::primitive_desc(fwd.get()));
  }
  auto d = l.bias ? dnnl::inner_product_backward_weights::desc(src, dw, bias_md(l), ddst)
                  : dnnl::inner_product_backward_weights::desc(src, dw, ddst);
  return dnnl::inner_product_backward_weights::primitive_desc(d, e, dnnl::inner_product_forward::primitive_desc(fwd.get()));
#endif
}
memory::dims dims_of(const memory::desc& md) {
#if DNNL_VERSION_MAJOR >= 3
  return md.get_dims();
#else
  return md.dims();
#endif
}
// ---- end of the version-specific code ----

// A tensor of `md` filled (by a set-up reorder) with values in [-scale, scale].
memory filled(const memory::desc& md, const dnnl::engine& e, dnnl::stream& s, uint32_t& seed, float scale) {
  const memory::dims d = dims_of(md);
  static const tag plain[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd};
  memory user(memory::desc(d, dt::f32, plain[d.size()]), e);
  float* p = static_cast<float*>(user.get_data_handle());
  for (size_t i = 0, n = user.get_desc().get_size() / sizeof(float); i < n; ++i) {
    seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;  // xorshift32: fast, and enough here
    p[i] = scale * (static_cast<float>(seed >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
  memory m(md, e);
  dnnl::reorder(user, m).execute(s, user, m);
  s.wait();
  return m;
}

struct Timing { double median_ms = 0, min_ms = 0; std::string impl; };

Timing time_primitive(const dnnl::primitive_desc& pd, const std::unordered_map<int, memory>& args, dnnl::stream& s,
                      int warmup, int iterations) {
  const dnnl::primitive p(pd);
  for (int i = 0; i < warmup; ++i) p.execute(s, args);
  s.wait();
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    p.execute(s, args);
    s.wait();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms.front(), pd.impl_info_str()};
}

struct Options {
  std::vector<std::string> models{"resnet50", "vgg16"}, precisions{"fp32", "bf16"}, layers;
  int iterations = 10, warmup = 2, threads = 2;
  bool list = false;
  std::string out;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && std::atoi(env) > 0) o.threads = std::atoi(env);
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--list") { o.list = true; continue; }
    if (flag == "--help" || flag == "-h" || i + 1 >= argc) {
      std::cerr << "usage: onednn_layers [--models resnet50,vgg16] [--precisions fp32,bf16] [--iterations 10]\n"
                   "  [--warmup 2] [--threads N] [--layers NAME,...] [--layout any|nhwc] [--out run.json] | --list\n";
      std::exit(flag == "--help" || flag == "-h" ? 0 : 2);
    }
    const std::string v = argv[++i];
    if (flag == "--models") o.models = split(v);
    else if (flag == "--precisions") o.precisions = split(v);
    else if (flag == "--layers") o.layers = split(v);
    else if (flag == "--iterations") o.iterations = std::max(1, std::atoi(v.c_str()));
    else if (flag == "--warmup") o.warmup = std::max(0, std::atoi(v.c_str()));
    else if (flag == "--threads") o.threads = std::max(1, std::atoi(v.c_str()));
    else if (flag == "--out") o.out = v;
    else if (flag == "--layout" && (v == "any" || v == "nhwc")) nhwc_activations = v == "nhwc";
    else std::cerr << "onednn_layers: unknown flag " << flag << " (--help lists them)\n", std::exit(2);
  }
  return o;
}

struct Measured { std::string direction; Timing timing; std::string error; };  // error: why it could not run

// Each direction of one layer: its primitive from the descriptors above, its tensors filled at
// set-up (in the layouts the primitive chose), then timed.
std::vector<Measured> measure_layer(const Layer& l, dt a, const dnnl::engine& engine, dnnl::stream& stream,
                                    uint32_t& seed, const Options& o) {
  const dnnl::primitive_desc fwd = forward_pd(engine, l, a);
  std::vector<std::pair<std::string, dnnl::primitive_desc>> pds;
  pds.emplace_back("forward", fwd);
  if (!l.first) pds.emplace_back("backward_data", backward_data_pd(engine, l, a, fwd));
  pds.emplace_back("backward_weights", backward_weights_pd(engine, l, a, fwd));
  std::vector<Measured> out;
  for (const auto& [direction, pd] : pds) {
    std::unordered_map<int, memory> args;
    auto put = [&](int arg, const memory::desc& md, float scale) { args[arg] = filled(md, engine, stream, seed, scale); };
    if (direction == "forward") {
      put(DNNL_ARG_SRC, pd.src_desc(), 1.0f);
      put(DNNL_ARG_WEIGHTS, pd.weights_desc(), 0.05f);
      if (l.bias) put(DNNL_ARG_BIAS, pd.weights_desc(1), 0.05f);
      args[DNNL_ARG_DST] = memory(pd.dst_desc(), engine);
    } else if (direction == "backward_data") {
      put(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), 1.0f);
      put(DNNL_ARG_WEIGHTS, pd.weights_desc(), 0.05f);
      args[DNNL_ARG_DIFF_SRC] = memory(pd.diff_src_desc(), engine);
    } else {
      put(DNNL_ARG_SRC, pd.src_desc(), 1.0f);
      put(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), 1.0f);
      args[DNNL_ARG_DIFF_WEIGHTS] = memory(pd.diff_weights_desc(), engine);
      if (l.bias) args[DNNL_ARG_DIFF_BIAS] = memory(pd.diff_weights_desc(1), engine);
    }
    out.push_back({direction, time_primitive(pd, args, stream, o.warmup, o.iterations), ""});
  }
  return out;
}

// Sets the thread count before oneDNN starts its pool. OpenMP: as cnnbench's configure_threads()
// (kernels/threads.cc), each thread pinned to its own CPU when the process may use exactly that
// many. TBB sizes its pool from the CPUs the process may use: the first `threads` of those.
std::string set_threads(int threads) {
  cpu_set_t mask;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
  omp_set_num_threads(threads);
  if (static_cast<int>(cpus.size()) != threads) return "OpenMP, unpinned";
#pragma omp parallel num_threads(threads)
  {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[omp_get_thread_num()], &one);
    sched_setaffinity(0, sizeof one, &one);
  }
  return "OpenMP, pinned";
#else
  CPU_ZERO(&mask);
  for (int i = 0; i < threads && i < static_cast<int>(cpus.size()); ++i) CPU_SET(cpus[i], &mask);
  sched_setaffinity(0, sizeof mask, &mask);
  return DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_TBB ? "TBB" : "other";
#endif
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

std::string isa_name() {
  const int isa = static_cast<int>(dnnl::get_effective_cpu_isa());  // values shared by 2.x and 3.x
  const std::map<int, std::string> names = {
      {0x7, "avx2"}, {0x27, "avx512_core"}, {0x67, "avx512_core_vnni"}, {0xe7, "avx512_core_bf16"}};
  return names.count(isa) ? names.at(isa) : "isa_" + std::to_string(isa);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  if (o.list) {
    for (const std::string& model : o.models)
      for (const Layer& l : distinct_layers(model, model == "vgg16" ? 16 : 32))
        std::printf("%-8s %-34s x%d%s\n", model.c_str(), l.name.c_str(), l.count, l.first ? "  (no backward_data)" : "");
    return 0;
  }
  const std::string threading = set_threads(o.threads);
  const dnnl_version_t* v = dnnl_version();
  const std::string hash = v->hash ? v->hash : "";
  const std::string version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  const bool bf16 = cpu_has_flag("avx512_bf16");
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  uint32_t seed = 38;
  std::cout << "onednn_layers: oneDNN " << version << " (" << hash << "), ISA " << isa_name() << ", " << threading
            << ", " << o.threads << " threads, median of " << o.iterations << " after " << o.warmup << " warm-up\n";
  std::ostringstream rows;
  const char* sep = "";
  for (const std::string& precision : o.precisions) {
    if (precision != "fp32" && precision != "bf16") throw std::invalid_argument("--precisions: fp32 or bf16, not " + precision);
    if (precision == "bf16" && !bf16) {
      std::cout << "bf16: skipped, this CPU has no avx512_bf16 (/proc/cpuinfo flags)\n";
      continue;
    }
    const dt a = precision == "bf16" ? dt::bf16 : dt::f32;
    for (const std::string& model : o.models) {
      std::vector<Layer> layers = distinct_layers(model, model == "vgg16" ? 16 : 32);
      if (!o.layers.empty())
        std::erase_if(layers, [&](const Layer& l) { return std::find(o.layers.begin(), o.layers.end(), l.name) == o.layers.end(); });
      std::printf("%-8s %-5s %-34s %5s %-16s %10s %8s  %s\n", "model", "prec", "layer", "count", "direction", "ms",
                  "GFLOP/s", "impl");
      double step_ms = 0;
      for (const Layer& l : layers) {
        std::vector<Measured> measured;
        try {
          measured = measure_layer(l, a, engine, stream, seed, o);
        } catch (const dnnl::error& e) {  // a layer this oneDNN cannot run: recorded, left out of totals
          measured.push_back({"all", Timing{}, e.what()});
        }
        for (const Measured& m : measured) {
          const Timing& t = m.timing;
          if (m.error.empty()) {
            step_ms += l.count * t.median_ms;
            std::printf("%-8s %-5s %-34s %5d %-16s %10.3f %8.1f  %s\n", model.c_str(), precision.c_str(),
                        l.name.c_str(), l.count, m.direction.c_str(), t.median_ms, 2.0 * l.macs / (t.median_ms * 1e6),
                        t.impl.c_str());
          } else {
            std::printf("%-8s %-5s %-34s %5d %-16s failed: %s\n", model.c_str(), precision.c_str(), l.name.c_str(),
                        l.count, m.direction.c_str(), m.error.c_str());
          }
          std::fflush(stdout);
          rows << sep << "\n    {\"model\": " << json_string(model) << ", \"precision\": " << json_string(precision)
               << ", \"layer\": " << json_string(l.name) << ", \"count\": " << l.count
               << ", \"direction\": " << json_string(m.direction) << ", \"gflop\": " << 2.0 * l.macs / 1e9;
          if (m.error.empty())
            rows << ", \"ms\": " << t.median_ms << ", \"min_ms\": " << t.min_ms << ", \"impl\": " << json_string(t.impl) << "}";
          else
            rows << ", \"ms\": null, \"error\": " << json_string(m.error) << "}";
          sep = ",";
        }
      }
      std::printf("%s %s: step-weighted total %.1f ms (each layer's time x its count in a step)\n\n", model.c_str(),
                  precision.c_str(), step_ms);
    }
  }
  if (!o.out.empty()) {
    std::ofstream out(o.out);
    out << "{\n  \"onednn_version\": " << json_string(version) << ",\n  \"onednn_hash\": " << json_string(hash)
        << ",\n  \"threading\": " << json_string(threading) << ",\n  \"isa\": " << json_string(isa_name())
        << ",\n  \"cpu_avx512_bf16\": " << (bf16 ? "true" : "false") << ",\n  \"threads\": " << o.threads
        << ",\n  \"activations\": " << json_string(nhwc_activations ? "nhwc" : "any")
        << ",\n  \"iterations\": " << o.iterations << ",\n  \"warmup\": " << o.warmup << ",\n  \"results\": ["
        << rows.str() << "\n  ]\n}\n";
    if (!out) throw std::runtime_error("cannot write " + o.out);
    std::cout << "wrote " << o.out << "\n";
  }
  return 0;
} catch (const std::exception& e) {  // dnnl::error's what() names the failed call
  std::cerr << "onednn_layers: " << e.what() << "\n";
  return 1;
}
