#include "compiler/ir/attributes.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "common/error.h"
#include "compiler/ir/literal.h"

namespace podsim::ir {
namespace {

// Name lookup over a small fixed table; the tables are a handful of entries long.
template <typename E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table)
    if (e == value) return name;
  return {};
}

template <typename E, size_t N>
std::optional<E> from_name(const std::array<std::pair<E, std::string_view>, N>& table,
                           std::string_view s) {
  for (const auto& [e, name] : table)
    if (name == s) return e;
  return std::nullopt;
}

constexpr std::array<std::pair<ComparisonDirection, std::string_view>, 6> kDirections = {{
    {ComparisonDirection::kEq, "EQ"},
    {ComparisonDirection::kNe, "NE"},
    {ComparisonDirection::kLt, "LT"},
    {ComparisonDirection::kLe, "LE"},
    {ComparisonDirection::kGt, "GT"},
    {ComparisonDirection::kGe, "GE"},
}};

// kDefault has no XLA spelling: it means "the type implied by the operands" and is
// never written out.
constexpr std::array<std::pair<ComparisonType, std::string_view>, 4> kComparisonTypes = {{
    {ComparisonType::kFloat, "FLOAT"},
    {ComparisonType::kTotalOrder, "TOTALORDER"},
    {ComparisonType::kSigned, "SIGNED"},
    {ComparisonType::kUnsigned, "UNSIGNED"},
}};

constexpr std::array<std::pair<RngAlgorithm, std::string_view>, 3> kRngAlgorithms = {{
    {RngAlgorithm::kDefault, "rng_default"},
    {RngAlgorithm::kThreeFry, "rng_three_fry"},
    {RngAlgorithm::kPhilox, "rng_philox"},
}};

constexpr std::array<std::pair<FusionKind, std::string_view>, 4> kFusionKinds = {{
    {FusionKind::kLoop, "kLoop"},
    {FusionKind::kInput, "kInput"},
    {FusionKind::kOutput, "kOutput"},
    {FusionKind::kCustom, "kCustom"},
}};

constexpr std::array<std::pair<Precision, std::string_view>, 3> kPrecisions = {{
    {Precision::kDefault, "default"},
    {Precision::kHigh, "high"},
    {Precision::kHighest, "highest"},
}};

constexpr std::array<std::pair<int64_t, std::string_view>, 5> kApiVersions = {{
    {0, "API_VERSION_UNSPECIFIED"},
    {1, "API_VERSION_ORIGINAL"},
    {2, "API_VERSION_STATUS_RETURNING"},
    {3, "API_VERSION_STATUS_RETURNING_UNIFIED"},
    {4, "API_VERSION_TYPED_FFI"},
}};

}  // namespace

std::string_view direction_name(ComparisonDirection d) { return name_of(kDirections, d); }
std::optional<ComparisonDirection> direction_from_name(std::string_view s) {
  return from_name(kDirections, s);
}

std::string_view comparison_type_name(ComparisonType t) {
  return t == ComparisonType::kDefault ? "DEFAULT" : name_of(kComparisonTypes, t);
}
std::optional<ComparisonType> comparison_type_from_name(std::string_view s) {
  return from_name(kComparisonTypes, s);
}

std::string_view rng_algorithm_name(RngAlgorithm a) { return name_of(kRngAlgorithms, a); }
std::optional<RngAlgorithm> rng_algorithm_from_name(std::string_view s) {
  return from_name(kRngAlgorithms, s);
}

std::string_view fusion_kind_name(FusionKind k) { return name_of(kFusionKinds, k); }
std::optional<FusionKind> fusion_kind_from_name(std::string_view s) {
  return from_name(kFusionKinds, s);
}

std::string_view precision_name(Precision p) { return name_of(kPrecisions, p); }
std::optional<Precision> precision_from_name(std::string_view s) {
  return from_name(kPrecisions, s);
}

std::string_view custom_call_api_version_name(int64_t version) {
  return name_of(kApiVersions, version);
}
std::optional<int64_t> custom_call_api_version_from_name(std::string_view s) {
  return from_name(kApiVersions, s);
}

std::vector<int64_t> IotaList::expand() const {
  const size_t rank = iota_dims.size();
  std::vector<int64_t> perm = transpose;
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  std::vector<bool> used(rank, false);
  bool valid = perm.size() == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= static_cast<int64_t>(rank) || used[static_cast<size_t>(p)]) {
      valid = false;
      break;
    }
    used[static_cast<size_t>(p)] = true;
  }
  if (!valid)
    fail("iota device list {}: T(...) is not a permutation of the iota dimensions", to_string());
  if (checked_num_elements(iota_dims) < 0 || checked_num_elements(reshape_dims) < 0 ||
      checked_num_elements(iota_dims) != checked_num_elements(reshape_dims))
    fail("iota device list {}: the reshape and iota dimensions hold different device counts",
         to_string());

  // Element j of the transposed iota array is the row-major offset, within iota_dims,
  // of the index whose perm[k]-th coordinate is j[k].
  std::vector<int64_t> strides = row_major_strides(iota_dims);
  std::vector<int64_t> transposed_dims;
  for (int64_t p : perm) transposed_dims.push_back(iota_dims[static_cast<size_t>(p)]);
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(checked_num_elements(iota_dims)));
  for_each_index(transposed_dims, [&](const std::vector<int64_t>& j) {
    int64_t id = 0;
    for (size_t k = 0; k < rank; ++k) id += j[k] * strides[static_cast<size_t>(perm[k])];
    ids.push_back(id);
  });
  return ids;
}

std::string IotaList::to_string() const {
  std::string out =
      fmt::format("[{}]<=[{}]", fmt::join(reshape_dims, ","), fmt::join(iota_dims, ","));
  if (!transpose.empty()) out += fmt::format("T({})", fmt::join(transpose, ","));
  return out;
}

std::string Sharding::to_string() const {
  switch (kind) {
    case Kind::kReplicated:
      return "{replicated}";
    case Kind::kManual:
      return "{manual}";
    case Kind::kUnknown:
      return "{unknown}";
    case Kind::kMaximal:
      return fmt::format("{{maximal device={}}}", maximal_device);
    case Kind::kTuple: {
      std::string out = "{";
      for (size_t i = 0; i < tuple_elements.size(); ++i) {
        if (i) out += ", ";
        out += tuple_elements[i].to_string();
      }
      return out + "}";
    }
    case Kind::kTiled:
      break;
  }
  std::string out = fmt::format("{{devices=[{}]", fmt::join(tile_dims, ","));
  if (iota) {
    std::string iota_text = iota->to_string();
    out += iota_text.substr(iota_text.find("<="));
  } else {
    out += fmt::format("{}", fmt::join(devices, ","));
  }
  if (last_tile_dim_replicate) out += " last_tile_dim_replicate";
  if (!last_tile_dims.empty())
    out += fmt::format(" last_tile_dims={{{}}}", fmt::join(last_tile_dims, ", "));
  return out + "}";
}

}  // namespace podsim::ir
