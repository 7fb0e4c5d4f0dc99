#include "comm/collective_watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace cnnbench {
namespace {

constexpr int kQuestion = 1, kAnswer = 2;  // tags on the watchdog's own communicator

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* plane_name(CollectivePlane plane) {
  return plane == CollectivePlane::data ? "gradient" : "control";
}

}  // namespace

CollectiveWatchdog::CollectiveWatchdog(double timeout_sec, std::vector<std::string> hosts)
    : timeout_sec_(timeout_sec), hosts_(std::move(hosts)) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (size_ == 1) return;  // nobody to wait for
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  can_ask_ = provided == MPI_THREAD_MULTIPLE;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  answers_to_send_.resize(size_);
  answer_requests_.assign(size_, MPI_REQUEST_NULL);
  thread_ = std::thread([this] { watch(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (MPI_Request& request : answer_requests_) {
    int done = 1;
    if (request != MPI_REQUEST_NULL) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) MPI_Request_free(&request);  // a small answer still on its way: let it go
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

CollectiveWatchdog::Watch::Watch(CollectiveWatchdog* dog, CollectivePlane plane, const char* what)
    : dog_(dog), plane_(plane) {
  if (!dog_) return;
  PlaneState& state = dog_->planes_[static_cast<int>(plane_)];
  state.since_ns = now_ns();
  state.what = what;
  state.entered.fetch_add(1);
  state.inside = true;
}

CollectiveWatchdog::Watch::~Watch() {
  if (dog_) dog_->planes_[static_cast<int>(plane_)].inside = false;
}

CollectiveWatchdog::Position CollectiveWatchdog::position() const {
  Position p{};
  for (int i = 0; i < 2; ++i) {
    p.entered[i] = planes_[i].entered;
    p.inside[i] = planes_[i].inside ? 1 : 0;
  }
  return p;
}

void CollectiveWatchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    if (can_ask_) answer_questions();
    for (int i = 0; i < 2; ++i) {
      const PlaneState& state = planes_[i];
      const int64_t number = state.entered;
      if (!state.inside) continue;
      const double waited_sec = static_cast<double>(now_ns() - state.since_ns) / 1e9;
      // still the same collective, still inside it, and too long
      if (waited_sec > timeout_sec_ && state.inside && state.entered == number)
        end_job(static_cast<CollectivePlane>(i), number, waited_sec);
    }
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
  }
}

// Answers every question waiting: where this rank is, per plane.
void CollectiveWatchdog::answer_questions() {
  for (;;) {
    int waiting = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQuestion, comm_, &waiting, &status) != MPI_SUCCESS || !waiting) return;
    const int asker = status.MPI_SOURCE;
    char question = 0;
    MPI_Recv(&question, 1, MPI_CHAR, asker, kQuestion, comm_, MPI_STATUS_IGNORE);
    MPI_Request& request = answer_requests_[asker];
    int done = 1;
    if (request != MPI_REQUEST_NULL) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) continue;  // the last answer to that rank has not left yet
    answers_to_send_[asker] = position();
    MPI_Isend(&answers_to_send_[asker], sizeof(Position), MPI_BYTE, asker, kAnswer, comm_, &request);
  }
}

// Asks every other rank where it is and says who keeps collective `number` of `plane` waiting.
std::string CollectiveWatchdog::diagnose(CollectivePlane plane, int64_t number) {
  if (!can_ask_) return "the ranks could not be asked (this MPI library allows no second thread in MPI)";
  const int p = static_cast<int>(plane);
  std::vector<Position> answers(size_);
  std::vector<MPI_Request> questions(size_, MPI_REQUEST_NULL), replies(size_, MPI_REQUEST_NULL);
  std::vector<char> answered(size_, 0);
  static const char question = 1;  // outlives the sends: the job ends right after
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Isend(&question, 1, MPI_CHAR, r, kQuestion, comm_, &questions[r]);
    MPI_Irecv(&answers[r], sizeof(Position), MPI_BYTE, r, kAnswer, comm_, &replies[r]);
  }
  const int64_t deadline = now_ns() + static_cast<int64_t>(answer_sec() * 1e9);
  for (int missing = size_ - 1; missing > 0 && now_ns() < deadline;) {
    answer_questions();  // the other ranks may be asking at the same moment
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || answered[r]) continue;
      int done = 0;
      MPI_Test(&replies[r], &done, MPI_STATUS_IGNORE);
      if (done) answered[r] = 1, --missing;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string who;
  const auto add = [&](int r, const std::string& why) {
    who += (who.empty() ? "" : "; ") + ("rank " + std::to_string(r) + " on host " + hosts_[r] + " did not arrive" + why);
  };
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (!answered[r])
      add(r, " and does not answer (stopped, hung or cut off)");
    else if (answers[r].entered[p] < number)
      add(r, ": it answers from " + std::string(plane_name(plane)) + " collective #" +
                 std::to_string(answers[r].entered[p]) + (answers[r].inside[p] ? " (inside it)" : " (done with it)"));
  }
  if (who.empty()) return "every rank answered and waits in it: the network or the MPI library is stuck";
  return who;
}

// A live rank answers within its watch thread's 100 ms tick; allow for a loaded machine.
double CollectiveWatchdog::answer_sec() const { return std::clamp(timeout_sec_ / 4, 1.0, 5.0); }

void CollectiveWatchdog::end_job(CollectivePlane plane, int64_t number, double waited_sec) {
  // Should anything from here on hang (an MPI call while asking the ranks, or MPI_Abort with its
  // launcher cut off), leave anyway: the launcher then sees a rank exit without finalizing and
  // ends the others. Armed before the first MPI call, so no step below can keep the job alive.
  const int rank = rank_;
  const double leave_sec = answer_sec() + 10;
  std::thread([rank, leave_sec] {
    std::this_thread::sleep_for(std::chrono::duration<double>(leave_sec));
    std::fprintf(stderr, "cnnbench: rank %d: the job did not end through MPI within %.0f s; leaving\n", rank, leave_sec);
    std::fflush(stderr);
    _exit(1);
  }).detach();
  const std::string why = diagnose(plane, number);
  std::fprintf(stderr, "cnnbench: rank %d: the %s (%s collective #%lld) waited %.0f s (--collective_timeout_sec=%g): %s; ending the job\n",
               rank_, planes_[static_cast<int>(plane)].what.load(), plane_name(plane), static_cast<long long>(number),
               waited_sec, timeout_sec_, why.c_str());
  std::fflush(stderr);
  if (can_ask_) MPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

}  // namespace cnnbench
