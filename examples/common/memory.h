// How much memory the machine can give a program, so that the examples can refuse a model or a
// batch that would not fit before they allocate it. On Linux a large allocation succeeds and the
// pages are only taken when written, so catching std::bad_alloc does not catch this: the process
// grows until the kernel kills it.
#pragma once

#include <cstdint>
#include <string>

namespace qkv::examples {

// MemAvailable from /proc/meminfo, in bytes: what can be allocated without swapping, or the
// process's limit (ulimit -v, -d) when that is lower. 0 when unknown (no /proc, no limit), in which
// case callers check nothing.
int64_t available_memory_bytes();

// "1.5 GiB", "340 MiB": a byte count for a message.
std::string format_bytes(double bytes);

// Refuses a training whose estimate `needed` (bytes) is above the memory available, before it
// allocates: ValueError "PROGRAM: training this model would take about X (WHAT), more than the Y
// this machine has available: lower OPTIONS". Checks nothing where the memory is unknown.
void check_fits(const std::string& program, double needed, const std::string& what, const std::string& options);

}  // namespace qkv::examples
