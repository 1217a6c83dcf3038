#include "deploy/sizing.h"

#include <fmt/format.h>

namespace paddock::deploy {
namespace {

// A non-negative decimal "12", "0.25", "1.5" as numerator / 10^scale (at most 9 fraction digits).
struct Decimal {
  uint64_t numerator = 0;
  uint64_t denominator = 1;
};

std::optional<Decimal> ParseDecimal(std::string_view s) {
  Decimal d;
  bool digits = false, point = false;
  int fraction = 0;
  for (char c : s) {
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    if (point && ++fraction > 9) return std::nullopt;
    if (d.numerator > 1'000'000'000'000ULL) return std::nullopt;
    d.numerator = d.numerator * 10 + static_cast<uint64_t>(c - '0');
    if (point) d.denominator *= 10;
    digits = true;
  }
  if (!digits) return std::nullopt;
  return d;
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

struct FargateCpu {
  int cpu;
  int min_mib, max_mib, step_mib;
};
// Fargate's task sizes (Linux): each CPU size with the memory it allows.
constexpr FargateCpu kFargate[] = {
    {256, 512, 2048, 0},  // 512, 1024, 2048: see MemoryFits
    {512, 1024, 4096, 1024},       {1024, 2048, 8192, 1024},    {2048, 4096, 16384, 1024},
    {4096, 8192, 30720, 1024},     {8192, 16384, 61440, 4096},  {16384, 32768, 122880, 8192},
};

// The smallest memory of `row` at least `mib`, or 0 when the row has none.
int FitMemory(const FargateCpu& row, int mib) {
  if (row.cpu == 256) {
    for (int m : {512, 1024, 2048}) {
      if (m >= mib) return m;
    }
    return 0;
  }
  if (mib > row.max_mib) return 0;
  if (mib <= row.min_mib) return row.min_mib;
  return static_cast<int>(row.min_mib + CeilDiv(static_cast<uint64_t>(mib - row.min_mib), row.step_mib) * row.step_mib);
}

}  // namespace

StatusOr<int> ParseCpuUnits(std::string_view q) {
  auto bad = [&] {
    return InvalidArgument(fmt::format("cpu \"{}\" is not a CPU quantity (vCPU such as \"0.5\" or \"2\", or millicores "
                                       "such as \"500m\")",
                                       q));
  };
  bool milli = q.ends_with('m');
  std::optional<Decimal> d = ParseDecimal(milli ? q.substr(0, q.size() - 1) : q);
  if (!d) return bad();
  uint64_t denominator = d->denominator * (milli ? 1000 : 1);
  uint64_t units = CeilDiv(d->numerator * 1024, denominator);
  if (units == 0) return InvalidArgument(fmt::format("cpu \"{}\" must be more than zero", q));
  if (units > 1024 * 1024) return bad();
  return static_cast<int>(units);
}

StatusOr<int> ParseMemoryMib(std::string_view q) {
  auto bad = [&] {
    return InvalidArgument(fmt::format("memory \"{}\" is not a memory quantity (such as \"512Mi\", \"2Gi\", \"1G\" or "
                                       "\"512\" MiB)",
                                       q));
  };
  struct Suffix {
    std::string_view text;
    uint64_t bytes;
  };
  constexpr Suffix kSuffixes[] = {{"Ki", 1ULL << 10}, {"Mi", 1ULL << 20}, {"Gi", 1ULL << 30}, {"Ti", 1ULL << 40},
                                  {"K", 1000ULL},     {"M", 1000'000ULL},  {"G", 1000'000'000ULL}, {"T", 1000'000'000'000ULL}};
  uint64_t unit = 1ULL << 20;  // a bare number is MiB
  std::string_view number = q;
  for (const Suffix& s : kSuffixes) {
    if (q.ends_with(s.text)) {
      unit = s.bytes;
      number = q.substr(0, q.size() - s.text.size());
      break;
    }
  }
  std::optional<Decimal> d = ParseDecimal(number);
  if (!d) return bad();
  // bytes = numerator * unit / denominator; MiB rounded up. Guard the product.
  if (d->numerator > (~0ULL) / unit) return bad();
  uint64_t mib = CeilDiv(CeilDiv(d->numerator * unit, d->denominator), 1ULL << 20);
  if (mib == 0) return InvalidArgument(fmt::format("memory \"{}\" must be more than zero", q));
  if (mib > 16ULL * 1024 * 1024) return bad();
  return static_cast<int>(mib);
}

StatusOr<TaskSize> ResolveSize(std::string_view cpu, std::string_view memory, Capacity capacity) {
  ASSIGN_OR_RETURN(int cpu_units, ParseCpuUnits(cpu));
  ASSIGN_OR_RETURN(int memory_mib, ParseMemoryMib(memory));
  TaskSize size;
  if (capacity == Capacity::kEc2) {
    if (memory_mib < 128) {
      return InvalidArgument(fmt::format("memory \"{}\" is below the 128 MiB a task needs at least", memory));
    }
    size.cpu_units = cpu_units;
    size.memory_mib = memory_mib;
    return size;
  }
  for (const FargateCpu& row : kFargate) {
    if (row.cpu < cpu_units) continue;
    int fit = FitMemory(row, memory_mib);
    if (fit == 0) continue;
    size.cpu_units = row.cpu;
    size.memory_mib = fit;
    size.rounded_up = row.cpu != cpu_units || fit != memory_mib;
    if (size.rounded_up) {
      size.note = fmt::format("cpu {} and memory {} were rounded up to Fargate's {} CPU units / {} MiB", cpu, memory,
                              row.cpu, fit);
    }
    return size;
  }
  return InvalidArgument(fmt::format("cpu {} and memory {} exceed Fargate's largest task size, 16 vCPU (16384 units) "
                                     "with 120 GiB (122880 MiB)",
                                     cpu, memory));
}

}  // namespace paddock::deploy
