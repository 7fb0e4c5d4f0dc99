// comm/collective_watchdog.h — CollectiveWatchdog: ends the job when a collective has waited
// longer than --collective_timeout_sec, naming the rank that did not arrive, instead of
// leaving every other rank waiting for a stopped, hung or cut-off one.
//
// Each rank counts the collectives it enters on two planes (the gradients' data plane, on the
// communication thread, and the control plane, on the main thread); the ranks run the same
// program, so the counts line up across ranks. A watch thread per rank answers other ranks'
// questions about its counts at any time, over a communicator of its own. When one of its own
// collectives has waited past the timeout, it asks every other rank where it is, waits a few
// seconds for the answers, prints one line naming the ranks that did not answer or had not
// arrived, and aborts the job (MPI_Abort; should that hang, the process exits by itself).
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cnnbench {

enum class CollectivePlane { data = 0, control = 1 };

class CollectiveWatchdog {
 public:
  // Collective over MPI_COMM_WORLD (duplicates it). `hosts[r]` names rank r's host.
  CollectiveWatchdog(double timeout_sec, std::vector<std::string> hosts);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // Marks this rank as inside a collective of `plane` (what: "allreduce of gradients") until
  // the Watch goes out of scope.
  class Watch {
   public:
    Watch(CollectiveWatchdog* dog, CollectivePlane plane, const char* what);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    CollectiveWatchdog* dog_;
    CollectivePlane plane_;
  };

  double timeout_sec() const { return timeout_sec_; }

 private:
  struct PlaneState {
    std::atomic<int64_t> entered{0};        // collectives entered so far (this one included)
    std::atomic<bool> inside{false};
    std::atomic<int64_t> since_ns{0};       // when the current one was entered
    std::atomic<const char*> what{""};
  };
  // What a rank answers when asked: per plane, collectives entered and whether inside one.
  struct Position {
    int64_t entered[2];
    int64_t inside[2];
  };

  void watch();
  void answer_questions();
  Position position() const;
  [[noreturn]] void end_job(CollectivePlane plane, int64_t waited_for, double waited_sec);
  std::string diagnose(CollectivePlane plane, int64_t number);
  double answer_sec() const;  // how long diagnose() waits for the other ranks' answers

  double timeout_sec_;
  std::vector<std::string> hosts_;
  int rank_ = 0, size_ = 1;
  bool can_ask_ = false;  // the MPI library allows a second thread in MPI (THREAD_MULTIPLE)
  MPI_Comm comm_ = MPI_COMM_NULL;
  PlaneState planes_[2];
  std::vector<Position> answers_to_send_;
  std::vector<MPI_Request> answer_requests_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cnnbench
