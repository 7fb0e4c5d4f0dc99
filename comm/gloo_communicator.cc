// The Gloo data plane: Gloo's ring allreduce over its TCP transport, over the group (all ranks,
// or one per host under --hierarchical_allreduce). Ranks find each other through MPI (which
// launched them), so no shared file system or extra server is needed. All ranks on one host
// connect over loopback; across hosts each rank listens on its host name, or on the interface
// named by CNNBENCH_GLOO_IFACE.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <unistd.h>
#include <cstring>
#include <stdexcept>

#include "comm/host_communicator.h"
#include "comm/wire_cast.h"

namespace cnnbench {
namespace {

// A Gloo context over the ranks of an MPI communicator, which find each other through it: every
// rank creates one transport pair per peer, the pairs' listening addresses are exchanged with one
// MPI_Allgatherv, and each pair connects to the address its peer made for it. (Gloo's own
// rendezvous needs a key-value store: a file system shared by all hosts, or Redis.)
class MpiBootstrappedContext final : public gloo::Context {
 public:
  MpiBootstrappedContext(MPI_Comm comm, int rank, int size, std::shared_ptr<gloo::transport::Device> device,
                         std::chrono::milliseconds timeout)
      : gloo::Context(rank, size) {
    setTimeout(timeout);
    auto transport = device->createContext(rank, size);
    transport->setTimeout(timeout);
    // my blob: for each rank j, the length and bytes of my pair's address for j (empty for me)
    std::string mine;
    for (int j = 0; j < size; ++j) {
      std::vector<char> bytes;
      if (j != rank) bytes = transport->createPair(j)->address().bytes();
      const uint64_t length = bytes.size();
      mine.append(reinterpret_cast<const char*>(&length), sizeof(length));
      mine.append(bytes.begin(), bytes.end());
    }
    std::vector<int> lengths(size), offsets(size);
    int length = static_cast<int>(mine.size()), total = 0;
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
    for (int r = 0; r < size; ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    std::string all(total, '\0');
    MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm);
    for (int j = 0; j < size; ++j) {
      if (j == rank) continue;
      // in rank j's blob, find the entry it made for me
      size_t at = offsets[j];
      for (int k = 0;; ++k) {
        uint64_t n;
        std::memcpy(&n, all.data() + at, sizeof(n));
        at += sizeof(n);
        if (k == rank) {
          transport->getPair(j)->connect(std::vector<char>(all.begin() + at, all.begin() + at + n));
          break;
        }
        at += n;
      }
    }
    device_ = std::move(device);
    transportContext_ = std::move(transport);
  }
};

class GlooCommunicator final : public HostCommunicator {
 public:
  // Gloo's own timeout stays behind the collective watchdog's, which names the missing rank.
  GlooCommunicator(double watchdog_timeout_sec, bool hierarchical) : HostCommunicator(hierarchical) {
    gloo::transport::tcp::attr attr;
    if (const char* iface = std::getenv("CNNBENCH_GLOO_IFACE"); iface && *iface)
      attr.iface = iface;
    else
      attr.hostname = hosts_ == 1 ? "127.0.0.1" : host_;
    try {
      context_ = std::make_shared<MpiBootstrappedContext>(group(), group_rank(), group_size(),
                                                          gloo::transport::tcp::CreateDevice(attr),
                                                          std::chrono::seconds(static_cast<int64_t>(
                                                              std::max(60.0, watchdog_timeout_sec + 30))));
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("Gloo could not connect the ranks: ") + e.what());
    }
  }
  std::string backend() const override { return "gloo"; }

 protected:
  void group_sum(void* data, size_t count, WireType type) override {
    if (group_size() == 1 || count == 0) return;
    gloo::AllreduceOptions options(context_);
    options.setTag(tag_++);
    try {
      if (type == WireType::f32) {
        options.setOutput(static_cast<float*>(data), count);
        options.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      } else {
        options.setOutput(static_cast<uint16_t*>(data), count);
        options.setReduceFunction([type](void* c, const void* a, const void* b, size_t n) {
          // c = a + b; Gloo calls it with c aliasing a
          if (c != a) std::memcpy(c, a, n * sizeof(uint16_t));
          sum_wire16(static_cast<const uint16_t*>(b), static_cast<uint16_t*>(c), n, type);
        });
      }
      gloo::allreduce(options);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("Gloo allreduce failed (did another rank stop?): ") + e.what());
    }
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(double watchdog_timeout_sec, bool hierarchical) {
  return std::make_unique<GlooCommunicator>(watchdog_timeout_sec, hierarchical);
}

}  // namespace cnnbench
