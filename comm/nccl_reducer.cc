#include "comm/nccl_reducer.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"

namespace cnnbench {

NcclReducer::NcclReducer(NcclCommunicator& comm, float* device_gradients, const std::vector<TensorExtent>& tensors,
                         const BucketSizes& bucket_sizes, WireType wire, cudaStream_t compute_stream)
    : comm_(comm), gradients_(device_gradients), wire_(wire), compute_(compute_stream) {
  buckets_ = plan_buckets(tensors, bucket_sizes);
  bucket_of_tensor_.resize(tensors.size());
  remaining_.resize(buckets_.size());
  size_t total = 0;
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    for (int t = buckets_[b].first_tensor; t <= buckets_[b].last_tensor; ++t) bucket_of_tensor_[t] = b;
    remaining_[b] = buckets_[b].last_tensor - buckets_[b].first_tensor + 1;
    total = std::max(total, buckets_[b].offset + buckets_[b].count);
  }
  if (wire_ != WireType::f32) wire_buffer_ = cuda::DeviceBuffer(total * 2);
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ready_.resize(buckets_.size());
  start_.resize(buckets_.size());
  done_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    CUDA_CHECK(cudaEventCreateWithFlags(&ready_[b], cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreate(&start_[b]));
    CUDA_CHECK(cudaEventCreate(&done_[b]));
  }
  CUDA_CHECK(cudaEventCreate(&first_start_));
  CUDA_CHECK(cudaEventCreate(&backward_end_));
  CUDA_CHECK(cudaEventCreate(&anchor_));
  CUDA_CHECK(cudaEventCreateWithFlags(&joined_, cudaEventDisableTiming));
}

NcclReducer::~NcclReducer() {
  cudaStreamSynchronize(stream_);
  for (cudaEvent_t e : ready_) cudaEventDestroy(e);
  for (cudaEvent_t e : start_) cudaEventDestroy(e);
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  cudaEventDestroy(first_start_);
  cudaEventDestroy(backward_end_);
  cudaEventDestroy(anchor_);
  cudaEventDestroy(joined_);
  cudaStreamDestroy(stream_);
}

void NcclReducer::tensor_ready(int index) {
  const int b = bucket_of_tensor_.at(index);
  if (--remaining_[b] == 0) launch(b);
}

// Inside a capture an event the host reads later must be an external record (a graph node that
// every replay records); ready_ and joined_ only order streams inside the capture.
void NcclReducer::record(cudaEvent_t event, cudaStream_t stream) {
  CUDA_CHECK(cudaEventRecordWithFlags(event, stream, capturing_ ? cudaEventRecordExternal : cudaEventRecordDefault));
}

void NcclReducer::launch(int b) {
  const Bucket& bucket = buckets_[b];
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(compute_, &capture));
  capturing_ = capture == cudaStreamCaptureStatusActive;
  CUDA_CHECK(cudaEventRecord(ready_[b], compute_));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_[b], 0));
  if (!started_) {
    record(first_start_, stream_);
    started_ = true;
  }
  if (timeline_) record(start_[b], stream_);
  float* g = gradients_ + bucket.offset;
  if (wire_ == WireType::f32) {
    comm_.allreduce_async(g, bucket.count, WireType::f32, stream_);
  } else {
    const DType type = wire_ == WireType::f16 ? DType::f16 : DType::bf16;
    uint16_t* w = wire_buffer_.as<uint16_t>() + bucket.offset;
    cuda::cast_from_f32(g, w, static_cast<int64_t>(bucket.count), type, stream_);
    comm_.allreduce_async(w, bucket.count, wire_, stream_);
    cuda::cast_to_f32(w, g, static_cast<int64_t>(bucket.count), type, 1.0f, stream_);
  }
  record(done_[b], stream_);
}

// The end of a capture of backward: backward's end recorded for the exposed time, then the
// communication stream joins the compute stream (a capture must end on the stream it began on),
// so a replay ends once every bucket is reduced.
void NcclReducer::join_capture() {
  capturing_ = true;
  record(backward_end_, compute_);
  if (started_) {  // the communication stream joined the capture with a bucket: it must rejoin
    CUDA_CHECK(cudaEventRecord(joined_, stream_));
    CUDA_CHECK(cudaStreamWaitEvent(compute_, joined_, 0));
  }
  capturing_ = false;
  captured_ = graph_step_ = true;
}

void NcclReducer::graph_replayed() {
  if (!captured_) throw std::logic_error("NcclReducer: a replay without a captured backward");
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    if (remaining_[b] != buckets_[b].last_tensor - buckets_[b].first_tensor + 1)
      throw std::logic_error("NcclReducer: a replayed step's bucket was also launched by hand");
    remaining_[b] = 0;
  }
  started_ = graph_step_ = true;
}

ReducerStepStats NcclReducer::wait_for_buckets(const std::function<void(const Bucket&)>& on_reduced) {
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b)
    if (remaining_[b] != 0) throw std::logic_error("NcclReducer: backward left a bucket incomplete");
  if (!graph_step_) CUDA_CHECK(cudaEventRecord(backward_end_, compute_));  // else the graph recorded it
  graph_step_ = false;
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    CUDA_CHECK(cudaStreamWaitEvent(compute_, done_[b], 0));
    if (on_reduced) on_reduced(buckets_[b]);
  }
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b)
    remaining_[b] = buckets_[b].last_tensor - buckets_[b].first_tensor + 1;
  measured_ = started_;
  started_ = false;
  return {};
}

ReducerStepStats NcclReducer::finish_step() {
  ReducerStepStats stats;
  if (!measured_ || buckets_.empty()) return stats;
  measured_ = false;
  float comm_ms = 0, exposed_ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&comm_ms, first_start_, done_.back()));
  CUDA_CHECK(cudaEventElapsedTime(&exposed_ms, backward_end_, done_.back()));
  stats.comm_sec = comm_ms / 1e3;
  stats.exposed_sec = std::max(0.0f, exposed_ms) / 1e3;
  if (timeline_) record_buckets_on_timeline();
  return stats;
}

// The step's work is done: an event recorded now completes at once, so its host time is known
// to within a launch, and every bucket's events are placed by their distance from it.
void NcclReducer::record_buckets_on_timeline() {
  CUDA_CHECK(cudaEventRecord(anchor_, compute_));
  CUDA_CHECK(cudaEventSynchronize(anchor_));
  const auto anchor = std::chrono::steady_clock::now();
  auto before_anchor = [&](cudaEvent_t e) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e, anchor_));
    return anchor - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double, std::milli>(ms));
  };
  const int64_t wire_bytes = wire_ == WireType::f32 ? 4 : 2;
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b)
    timeline_->span(Track::device_communication, "allreduce", before_anchor(start_[b]), before_anchor(done_[b]),
                    {.bucket = b, .bytes = static_cast<int64_t>(buckets_[b].count) * wire_bytes});
}

}  // namespace cnnbench
