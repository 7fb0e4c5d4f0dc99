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
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

// Why Gloo could not listen on `host`'s address for ranks on other hosts ("" where it can): Gloo
// listens on the first address the name resolves to, and where it does not resolve, this Gloo
// reads a result getaddrinfo never set and crashes (as a Slurm node's name that only Slurm knows);
// where it is a loopback address (Debian's /etc/hosts gives the host's name 127.0.1.1), the other
// hosts cannot connect and wait until the timeout.
std::string unusable_host_name(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || !found)
    return "this host's name " + host + " does not resolve to an address (" + gai_strerror(rc) + ")";
  bool loopback = false;
  if (found->ai_family == AF_INET)
    loopback = (ntohl(reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr.s_addr) >> 24) == 127;
  else if (found->ai_family == AF_INET6)
    loopback = IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(found->ai_addr)->sin6_addr);
  freeaddrinfo(found);
  return loopback ? "this host's name " + host + " resolves to a loopback address, which the other hosts cannot reach"
                  : "";
}

class GlooCommunicator final : public HostCommunicator {
 public:
  // Gloo's own timeout stays behind the collective watchdog's, which names the missing rank.
  GlooCommunicator(double watchdog_timeout_sec, bool hierarchical) : HostCommunicator(hierarchical) {
    gloo::transport::tcp::attr attr;
    const char* iface = std::getenv("CNNBENCH_GLOO_IFACE");
    if (iface && *iface)
      attr.iface = iface;
    else
      attr.hostname = hosts_ == 1 ? "127.0.0.1" : host_;
    // checked on every rank and refused by all at once: a rank that went on would wait in the
    // connection's exchange for one that stopped here
    const std::string problem = attr.hostname.empty() || hosts_ == 1 ? "" : unusable_host_name(host_);
    int unusable = problem.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &unusable, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (unusable)
      throw std::runtime_error((problem.empty() ? std::string("another host's name gives Gloo no address to listen on")
                                                : problem) +
                               ": name the network interface Gloo is to use with CNNBENCH_GLOO_IFACE=<interface>");
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
