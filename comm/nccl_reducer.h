// comm/nccl_reducer.h — NcclReducer: the GradientExchange of device plans. As backward queues
// the last launch of a bucket's tensors on the compute stream, an event orders a dedicated
// communication stream after it, and that stream casts the bucket to the wire type (fp16/bf16
// compression), allreduces it with NCCL and casts back; backward goes on meanwhile. After
// backward the compute stream waits for each bucket's event in turn before its update, so the
// update of bucket k overlaps the allreduce of later ones. Sums become averages because the
// loss gradient is pre-scaled by 1/ranks. Communication and exposed times are read from
// events once the step has finished (finish_step). With a timeline, each bucket's allreduce
// goes on its device communication track, placed by an event recorded in finish_step whose host time is known.
// Under a CUDA graph capture of backward the same launches are captured (the events as external
// records, so that every replay records them), the communication stream joins the compute
// stream at the capture's end, and each replay stands for the bucket launches (graph_replayed).
// A replay ends with the last allreduce, so the updates then no longer overlap later buckets'.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "comm/gradient_exchange.h"
#include "comm/nccl_communicator.h"
#include "kernels/cuda/device.h"

namespace cnnbench {

class NcclReducer final : public GradientExchange {
 public:
  NcclReducer(NcclCommunicator& comm, float* device_gradients, const std::vector<TensorExtent>& tensors,
              const BucketSizes& bucket_sizes, WireType wire, cudaStream_t compute_stream);
  ~NcclReducer() override;
  NcclReducer(const NcclReducer&) = delete;
  NcclReducer& operator=(const NcclReducer&) = delete;

  void tensor_ready(int index) override;
  ReducerStepStats wait_for_buckets(const std::function<void(const Bucket&)>& on_reduced) override;
  ReducerStepStats finish_step() override;
  const std::vector<Bucket>& buckets() const override { return buckets_; }
  size_t sent_bytes_per_step() const override { return gradient_elements() * wire_type_size(wire_); }
  bool capturable() const override { return true; }
  void join_capture() override;
  void graph_replayed() override;
  void set_before_abort(std::function<void()> f) override { comm_.set_before_abort(std::move(f)); }

 private:
  void launch(int bucket);
  void record(cudaEvent_t event, cudaStream_t stream);
  void record_buckets_on_timeline();

  NcclCommunicator& comm_;
  float* gradients_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_tensor_, remaining_;
  WireType wire_;
  cuda::DeviceBuffer wire_buffer_;
  cudaStream_t compute_ = nullptr, stream_ = nullptr;
  std::vector<cudaEvent_t> ready_, start_, done_;
  cudaEvent_t first_start_ = nullptr, backward_end_ = nullptr, anchor_ = nullptr, joined_ = nullptr;
  bool started_ = false, measured_ = false;
  bool capturing_ = false;  // the compute stream is being captured: events are recorded as graph nodes
  bool captured_ = false;   // a graph holds these launches (join_capture() ran)
  bool graph_step_ = false;  // this step's backward ran as that graph, which recorded backward_end_
};

}  // namespace cnnbench
