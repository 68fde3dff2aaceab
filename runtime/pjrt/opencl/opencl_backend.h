// The OpenCL backend of the device interface: runs programs of the OpenCL compiler
// (compiler/opencl) on every OpenCL device found, GPUs first. PODSIM_OPENCL_DEVICE=N
// (an index into that list) or a name fragment ("H100", "pthread") keeps one device.
//
// Execution is asynchronous: execute() checks its arguments and returns the output
// buffers at once; the device's worker thread enqueues the program's kernels, GEMMs and
// copies on the device's in-order queue (which orders them after the work that computes
// the arguments: no host synchronization between kernels or between runs) and goes on
// to the next job; an event callback marks the outputs ready when the device has run
// them. Host steps (ops without an OpenCL lowering) copy their
// operands to the host, run there and copy back; while loops and conditionals read their
// condition or selector back and enqueue the plan of the computation it picks.
//
// GEMMs: the target's own kernel in several tilings and CLBlast (f32, f64). For each
// shape the first run times every candidate on the device and keeps the fastest
// (PODSIM_OPENCL_GEMM=own|clblast forces one; shapes under 64 MFLOP take the own
// kernel's default tiling without timing).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/pjrt/device.h"

namespace podsim::pjrt {

// An OpenCL client over the devices found (PODSIM_OPENCL_DEVICE applied). Throws a
// podsim::Error saying what to install when there is no OpenCL platform or device.
std::unique_ptr<Client> make_opencl_client();

// One line per OpenCL device found (name, platform, memory, compute units), for
// `podsim devices`; empty when there is no platform.
std::vector<std::string> describe_opencl_devices();

}  // namespace podsim::pjrt
