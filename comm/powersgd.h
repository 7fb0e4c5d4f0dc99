// comm/powersgd.h — PowerSGD gradient compression (Vogels et al., 2019), as PyTorch DDP's
// powerSGD_hook does it: each gradient matrix M (a weight's first dimension by the rest) is sent
// as two thin factors, P = M Q (rows x rank) and Q = M^T P (cols x rank), with P orthogonalized
// between the two allreduces and M replaced by P Q^T; vectors (biases, batch-norm) and matrices
// too small to gain travel whole. Error feedback keeps what the approximation left out and adds
// it to the next step's gradient; Q starts from the last step's (warm start). A bucket is sent
// uncompressed for its first warmup_steps reductions. Two allreduces per bucket: the whole
// tensors with the P factors, then the Q factors.
//
// The gradients arrive pre-scaled by 1/ranks (the reducer sums), so the result is the average
// DDP's hook returns, and the error is kept in the same pre-scaled units (DDP's over ranks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/bucket_plan.h"
#include "comm/communicator.h"

namespace cnnbench {

struct PowerSgdSettings {
  int rank = 2;           // columns of P and Q (each matrix: at most its smaller side)
  int warmup_steps = 10;  // uncompressed reductions of each bucket before compressing
  uint64_t seed = 1;      // the first Q: the same on every rank
};

class PowerSgd {
 public:
  // tensors: the extents with their matrix shapes (TensorExtent::rows/cols; rows 0 = a vector).
  PowerSgd(const std::vector<Bucket>& buckets, const std::vector<TensorExtent>& tensors,
           const PowerSgdSettings& settings);

  // Sums bucket `b` of the gradient arena over the ranks in place: exactly during the warm-up,
  // then through the low-rank factors. Returns the elements this rank sent (fp32).
  size_t reduce(Communicator& comm, float* gradients, int b);

  // Elements one step sends once compressing.
  size_t wire_elements() const;
  // Allreduces a step makes: two for a bucket with matrices (P, then Q), one for a bucket of vectors.
  size_t allreduces() const;
  size_t compressed_tensors() const;
  // The bucket's Q factors as the next compressed reduction starts from (for the tests).
  const std::vector<float>& q_factors(int b) const { return state_.at(b).q; }

  // What a resumed run needs to go on as if never stopped, this rank's own: per bucket the
  // reductions so far (the warm-up), Q and the error feedback. restore() takes what state()
  // gave, or throws std::invalid_argument (changing nothing) if it was made for other buckets or
  // another --powersgd_rank.
  std::string state() const;
  void restore(const std::string& state);

 private:
  struct Matrix {
    size_t offset = 0, rows = 0, cols = 0, rank = 0;  // offset: in the bucket
    size_t p_at = 0, q_at = 0, error_at = 0;          // in the packed P, Q and error buffers
  };
  struct State {
    std::vector<Matrix> matrices;
    std::vector<TensorExtent> whole;  // offsets in the bucket
    size_t whole_count = 0, p_count = 0, q_count = 0;
    std::vector<float> error;  // per compressed matrix element, pre-scaled units
    std::vector<float> send;   // the whole tensors, then the P factors
    std::vector<float> q;
    int reductions = 0;
  };
  std::vector<Bucket> buckets_;
  std::vector<State> state_;
  PowerSgdSettings settings_;
};

// Gram-Schmidt on the columns of a row-major rows x cols matrix, as DDP's hook does it for
// rank <= 2 (a column of zeros stays zeros).
void orthogonalize_columns(float* matrix, size_t rows, size_t cols);

// DDP's rule: compress only when the factors are less than half the matrix.
bool powersgd_compresses(size_t rows, size_t cols, size_t rank);

}  // namespace cnnbench
