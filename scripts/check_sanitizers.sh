#!/usr/bin/env bash
# Builds cnnbench with sanitizers and runs its tests under them; any report fails the test
# that ran into it. Suppressions (tests/sanitizers/) cover system libraries only, each with
# its reason.
#   scripts/check_sanitizers.sh address [--subset]   ASan + UBSan: every CPU test (build-asan/)
#   scripts/check_sanitizers.sh thread               TSan: the tests that run threads (build-tsan/)
# --subset (what CI runs): the tests of every parser, the result files, the gradient reducer and
# the control plane under mpiexec, the memory plan, the command line end to end and a stopped
# and resumed run (signals), instead of
# the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD

mode=${1:-}
subset=0
[ "${2:-}" = --subset ] && subset=1
case "$mode" in
  address)
    build=build-asan sanitize=address,undefined
    if ((subset)); then
      targets=(cnnbench test_config test_data test_tfrecord test_compare test_result_files test_stats test_loss_scaling
               test_mpi_allreduce test_mpi_forward_overlap test_cli test_memory_plan test_checkpoint test_bucket_plan
               test_search_choices test_stop_and_resume)
      tests='^(test_mpi_allreduce_np2|test_mpi_forward_overlap_np2|MemoryPlan\.|Models/OnednnMemoryPlan\..*/resnet20_b8_fp32|Cifar10|Idx|Sharding|InputPipeline|Augmentation|JpegFolder|JpegDecode|Crc32c|TfRecord|ImageExample|MakeTfRecords|LrSchedule|Config|Cli\.|CliMpi\.TwoRanks|CliMpi\.PowerSgd|Checkpoint\.|RankState|PowerSgdState|BucketPlan|Compare|Significance|Stats|ResultFiles|LossScal|StopAndResume|SearchChoices|AlgorithmCache|file_faults|fault_sigSTOP_mpi)'
    else
      targets=(all) tests=.
    fi
    ;;
  thread)
    # The threads cnnbench runs: the gradient reducer's communication thread and the collective
    # watchdog (the MPI suites, MPI and Gloo data planes), the input pipeline's workers, and the
    # binary end to end under mpiexec, a stopped rank included. OpenMP runs one thread
    # here (OMP_NUM_THREADS=1): Debian's libgomp is not built for TSan, whose barriers it
    # cannot see.
    build=build-tsan sanitize=thread
    targets=(cnnbench test_data test_mpi_allreduce test_mpi_training test_mpi_forward_overlap test_cli)
    tests='^(test_mpi_allreduce|test_mpi_training|test_mpi_forward_overlap|InputPipeline|JpegFolder|Sharding|CliMpi|fault_sigSTOP)'
    ;;
  *) echo "check_sanitizers: say 'address' or 'thread' (and --subset with address)" >&2; exit 2 ;;
esac

start=$(date +%s)
cmake -S . -B "$build" -DCNNBENCH_SANITIZE="$sanitize" -DCNNBENCH_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target "${targets[@]}"
built=$(date +%s)

supp="$here/tests/sanitizers"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=4"
[ "$mode" = thread ] && export OMP_NUM_THREADS=1
# Open MPI: no malloc hooks of its own under the sanitizers', and its components stay loaded
# at exit, so that a report's stack names the library (and the suppressions can match it)
export OMPI_MCA_memory=^patcher OMPI_MCA_mca_base_component_disable_dlclose=1
# Not run sanitized: two tests that bound a time. Cli.CompareGatesADeliberatelySlowedRun asserts
# that compare sees a run slowed by a fixed number of milliseconds per step, which a sanitized
# build's slower steps hide; CliMpi.DeadRankEndsTheJobNamingIt gives a 3-rank job 60 s, which
# TSan's tenfold slower start-up alone exceeds. (The fault_* tests time from the fault on.)
skip='^(Cli\.CompareGatesADeliberatelySlowedRun|CliMpi\.DeadRankEndsTheJobNamingIt)$'
code=0
ctest --test-dir "$build" --output-on-failure -j2 -R "$tests" -E "$skip" -LE gpu || code=$?
echo "check_sanitizers $mode$( ((subset)) && echo ' --subset'): build $((built - start)) s, tests $(($(date +%s) - built)) s, exit $code"
exit $code
