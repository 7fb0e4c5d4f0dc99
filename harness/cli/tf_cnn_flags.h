// harness/cli/tf_cnn_flags.h — tf_cnn_benchmarks' flags that have no counterpart in cnnbench, so
// that its command lines keep running: each is taken and named in a note saying why it does not
// apply here (a TensorFlow runtime, graph, input or exchange setting). The few whose absence would
// change what is measured (an exponential decay, gradient clipping, evaluation alone, distributed
// TensorFlow) are refused unless given at tf_cnn_benchmarks' default, which asks for nothing.
#pragma once

#include <string>
#include <vector>

namespace cnnbench {

struct TfCnnFlag {
  const char* name;
  bool boolean;       // takes true/false (and may stand alone), as there
  const char* why;    // the note's or the refusal's reason
  bool refused;       // refused unless its value is `default_value`
  const char* default_value = "";
};

// null: not one of tf_cnn_benchmarks' flags cnnbench lacks
const TfCnnFlag* find_tf_cnn_flag(const std::string& name);
const std::vector<TfCnnFlag>& tf_cnn_flags();

// Whether `value` is the flag's tf_cnn_benchmarks default (for a boolean: the same truth; for a
// number: the same number), so that a refused flag given at its default is only noted.
bool is_tf_cnn_default(const TfCnnFlag& flag, const std::string& value);

}  // namespace cnnbench
