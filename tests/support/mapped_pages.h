// Pages of a range of this process's memory that are mapped now, from
// /proc/self/pagemap's present bit (readable without privileges): what a
// test of "never made resident" counts, where /proc/self/statm would count
// the whole process.
#ifndef SHAPESHIFT_TESTS_SUPPORT_MAPPED_PAGES_H_
#define SHAPESHIFT_TESTS_SUPPORT_MAPPED_PAGES_H_

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <vector>

namespace shapeshift::testing {

// -1 when /proc/self/pagemap cannot be read.
inline int64_t MappedPages(const void* data, size_t bytes) {
  if (bytes == 0) return 0;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) / page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(data) + bytes - 1) / page;
  std::ifstream pagemap("/proc/self/pagemap", std::ios::binary);
  pagemap.seekg(static_cast<std::streamoff>(first * sizeof(uint64_t)));
  std::vector<uint64_t> entries(last - first + 1);
  pagemap.read(reinterpret_cast<char*>(entries.data()), static_cast<std::streamsize>(entries.size() * sizeof(uint64_t)));
  if (!pagemap.good()) return -1;
  int64_t present = 0;
  for (uint64_t e : entries) present += static_cast<int64_t>((e >> 63) & 1);
  return present;
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_SUPPORT_MAPPED_PAGES_H_
