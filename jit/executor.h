#pragma once
// Which code runs the matmul tiles of this process: the generated kernels (always, in a normal
// run) or their scalar twins (jit/reference.h: same packed layouts, same float order), the
// reference executor of `ckjit xray`. The twins give the same bits as the kernels; a checkpoint
// that differs between the two executors points at a kernel (or layout/ABI) fault.
//
// CKJIT_TEST_FAULT=<weight name> (tests only) perturbs that weight's matmul output under the
// generated kernels, so that X-Ray's tests can check it names the faulty op. (graph/bridge.cpp reads
// two more names, bridge.mrope and bridge.deepstack, for the trained model's CER tests.)
#include <string>

namespace ckjit::jit {

enum class Executor { generated, scalar_twins };
void set_executor(Executor e);
Executor executor();
inline bool scalar_twins() { return executor() == Executor::scalar_twins; }

// Whether CKJIT_TEST_FAULT names this weight.
bool test_fault_requested(const std::string& weight_name);
// The fault: the first output of every row is moved by 1/8 of its magnitude plus 1/64.
void apply_test_fault(float* y, long rows, long ldy);

}  // namespace ckjit::jit
