#include "comm/powersgd.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

namespace cnnbench {

namespace {

// Row-major C = op(A) op(B), through oneDNN's sgemm; the factors are thin, so one thread does.
void gemm(char trans_a, char trans_b, size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
          size_t ldb, float* c, size_t ldc) {
  const dnnl_status_t status = dnnl_sgemm(trans_a, trans_b, static_cast<dnnl_dim_t>(m), static_cast<dnnl_dim_t>(n),
                                          static_cast<dnnl_dim_t>(k), 1.0f, a, static_cast<dnnl_dim_t>(lda), b,
                                          static_cast<dnnl_dim_t>(ldb), 0.0f, c, static_cast<dnnl_dim_t>(ldc));
  if (status != dnnl_success) throw std::runtime_error("PowerSGD: oneDNN sgemm failed (status " + std::to_string(status) + ")");
}

// Standard normal draws from our own uniform ones: the same Q on every rank and library.
void fill_normal(float* dst, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform01 = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
  for (size_t i = 0; i < count; ++i)
    dst[i] = static_cast<float>(std::sqrt(-2.0 * std::log(uniform01())) * std::cos(2.0 * M_PI * uniform01()));
}

}  // namespace

bool powersgd_compresses(size_t rows, size_t cols, size_t rank) {
  return rows > 0 && (rows + cols) * rank * 2 < rows * cols;
}

void orthogonalize_columns(float* matrix, size_t rows, size_t cols) {
  for (size_t i = 0; i < cols; ++i) {
    double norm = 0;
    for (size_t r = 0; r < rows; ++r) norm += static_cast<double>(matrix[r * cols + i]) * matrix[r * cols + i];
    norm = std::sqrt(norm);
    const float inverse = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;  // zeros stay zeros
    for (size_t r = 0; r < rows; ++r) matrix[r * cols + i] *= inverse;
    for (size_t j = i + 1; j < cols; ++j) {
      double dot = 0;
      for (size_t r = 0; r < rows; ++r) dot += static_cast<double>(matrix[r * cols + i]) * matrix[r * cols + j];
      const float d = static_cast<float>(dot);
      for (size_t r = 0; r < rows; ++r) matrix[r * cols + j] -= d * matrix[r * cols + i];
    }
  }
}

PowerSgd::PowerSgd(const std::vector<Bucket>& buckets, const std::vector<TensorExtent>& tensors,
                   const PowerSgdSettings& settings)
    : buckets_(buckets), state_(buckets.size()), settings_(settings) {
  if (settings.rank < 1) throw std::invalid_argument("PowerSGD: the rank must be at least 1");
  if (settings.warmup_steps < 0) throw std::invalid_argument("PowerSGD: the warm-up must not be negative");
  for (size_t b = 0; b < buckets_.size(); ++b) {
    State& s = state_[b];
    for (int t = buckets_[b].first_tensor; t <= buckets_[b].last_tensor; ++t) {
      const TensorExtent& e = tensors.at(t);
      if (e.rows > 0 && e.rows * e.cols != e.count)
        throw std::invalid_argument("PowerSGD: tensor " + std::to_string(t) + " is not rows x cols");
      const size_t rank = std::min({e.rows, e.cols, static_cast<size_t>(settings.rank)});
      const size_t offset = e.offset - buckets_[b].offset;
      if (!powersgd_compresses(e.rows, e.cols, rank)) {
        s.whole.push_back({offset, e.count});
        s.whole_count += e.count;
        continue;
      }
      s.matrices.push_back({offset, e.rows, e.cols, rank, s.p_count, s.q_count, s.error.size()});
      s.p_count += e.rows * rank;
      s.q_count += e.cols * rank;
      s.error.resize(s.error.size() + e.count, 0.0f);
    }
    s.send.resize(s.whole_count + s.p_count);
    s.q.resize(s.q_count);
    fill_normal(s.q.data(), s.q.size(), settings.seed * 1000003ull + b);
  }
}

size_t PowerSgd::reduce(Communicator& comm, float* gradients, int b) {
  const Bucket& bucket = buckets_.at(b);
  State& s = state_[b];
  float* data = gradients + bucket.offset;
  if (s.reductions++ < settings_.warmup_steps || s.matrices.empty()) {
    comm.allreduce_sum(data, bucket.count, WireType::f32);
    return bucket.count;
  }
  // The input with last step's error added; the error buffer keeps a copy of it.
  for (const Matrix& m : s.matrices) {
    float* x = data + m.offset;
    float* e = s.error.data() + m.error_at;
    for (size_t i = 0; i < m.rows * m.cols; ++i) e[i] = x[i] += e[i];
  }
  float* send = s.send.data();
  for (const TensorExtent& w : s.whole) send = std::copy_n(data + w.offset, w.count, send);
  for (const Matrix& m : s.matrices) {
    float* q = s.q.data() + m.q_at;
    orthogonalize_columns(q, m.cols, m.rank);
    gemm('N', 'N', m.rows, m.rank, m.cols, data + m.offset, m.cols, q, m.rank, send + m.p_at, m.rank);
  }
  comm.allreduce_sum(s.send.data(), s.send.size(), WireType::f32);
  send = s.send.data();
  for (const TensorExtent& w : s.whole) {
    std::copy_n(send, w.count, data + w.offset);
    send += w.count;
  }
  for (const Matrix& m : s.matrices) {
    float* p = send + m.p_at;
    orthogonalize_columns(p, m.rows, m.rank);
    gemm('T', 'N', m.cols, m.rank, m.rows, data + m.offset, m.cols, p, m.rank, s.q.data() + m.q_at, m.rank);
  }
  comm.allreduce_sum(s.q.data(), s.q.size(), WireType::f32);
  const float per_rank = 1.0f / static_cast<float>(comm.size());
  for (const Matrix& m : s.matrices) {
    float* x = data + m.offset;
    gemm('N', 'T', m.rows, m.cols, m.rank, send + m.p_at, m.rank, s.q.data() + m.q_at, m.rank, x, m.cols);
    // this rank's share of what the approximation left out
    float* e = s.error.data() + m.error_at;
    for (size_t i = 0; i < m.rows * m.cols; ++i) e[i] -= x[i] * per_rank;
  }
  return s.send.size() + s.q.size();
}

// state(): the bucket count, then per bucket its reductions, Q's and the error's sizes and
// their values, all in this machine's byte order (a checkpoint resumes on the same kind).
std::string PowerSgd::state() const {
  std::string out;
  auto put = [&](const void* p, size_t n) {
    if (n > 0) out.append(static_cast<const char*>(p), n);  // an empty vector's data() may be null
  };
  const uint64_t buckets = state_.size();
  put(&buckets, sizeof buckets);
  for (const State& s : state_) {
    const int64_t reductions = s.reductions;
    const uint64_t sizes[2] = {s.q.size(), s.error.size()};
    put(&reductions, sizeof reductions);
    put(sizes, sizeof sizes);
    put(s.q.data(), s.q.size() * sizeof(float));
    put(s.error.data(), s.error.size() * sizeof(float));
  }
  return out;
}

void PowerSgd::restore(const std::string& state) {
  size_t at = 0;
  auto take = [&](void* p, size_t n) {
    if (n > state.size() - at) throw std::invalid_argument("PowerSGD state is shorter than these buckets need");
    if (n > 0) std::memcpy(p, state.data() + at, n);  // an empty vector's data() may be null
    at += n;
  };
  uint64_t buckets = 0;
  take(&buckets, sizeof buckets);
  if (buckets != state_.size())
    throw std::invalid_argument("PowerSGD state holds " + std::to_string(buckets) + " buckets, not " +
                                std::to_string(state_.size()));
  std::vector<State> restored = state_;
  for (State& s : restored) {
    int64_t reductions = 0;
    uint64_t sizes[2] = {0, 0};
    take(&reductions, sizeof reductions);
    take(sizes, sizeof sizes);
    if (reductions < 0 || sizes[0] != s.q.size() || sizes[1] != s.error.size())
      throw std::invalid_argument("PowerSGD state was made for other buckets or another --powersgd_rank");
    s.reductions = static_cast<int>(std::min<int64_t>(reductions, INT_MAX));
    take(s.q.data(), s.q.size() * sizeof(float));
    take(s.error.data(), s.error.size() * sizeof(float));
  }
  if (at != state.size()) throw std::invalid_argument("PowerSGD state is longer than these buckets need");
  state_ = std::move(restored);
}

size_t PowerSgd::wire_elements() const {
  size_t total = 0;
  for (size_t b = 0; b < state_.size(); ++b)
    total += state_[b].matrices.empty() ? buckets_[b].count : state_[b].send.size() + state_[b].q.size();
  return total;
}

size_t PowerSgd::allreduces() const {
  size_t total = 0;
  for (const State& s : state_) total += s.matrices.empty() ? 1 : 2;
  return total;
}

size_t PowerSgd::compressed_tensors() const {
  size_t total = 0;
  for (const State& s : state_) total += s.matrices.size();
  return total;
}

}  // namespace cnnbench
