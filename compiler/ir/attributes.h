// Attribute types of IR instructions, with XLA HLO meanings: slices, padding, windows,
// dimension numbers of dot / convolution / gather / scatter, comparison, replica groups,
// shardings and metadata.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace podsim::ir {

// One dimension of a slice: [start:limit:stride].
struct SliceDim {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDim&) const = default;
};

// One dimension of a pad: low_high_interior (low and high may be negative).
struct PadDim {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PadDim&) const = default;
};

// One spatial dimension of a window (reduce-window, select-and-scatter, convolution).
struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_low = 0;
  int64_t pad_high = 0;
  int64_t lhs_dilation = 1;  // "base dilation" for reduce-window
  int64_t rhs_dilation = 1;  // "window dilation"
  bool reversal = false;
  bool operator==(const WindowDim&) const = default;
};

struct Window {
  std::vector<WindowDim> dims;
  bool operator==(const Window&) const = default;
};

// dim_labels=b01f_01io->b01f. Spatial dimension lists are in order of the spatial
// digits (0, 1, ...).
struct ConvDimNumbers {
  int64_t input_batch = 0;
  int64_t input_feature = 1;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0;
  int64_t kernel_output_feature = 1;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0;
  int64_t output_feature = 1;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvDimNumbers&) const = default;
};

struct DotDimNumbers {
  std::vector<int64_t> lhs_batch;
  std::vector<int64_t> lhs_contracting;
  std::vector<int64_t> rhs_batch;
  std::vector<int64_t> rhs_contracting;
  bool operator==(const DotDimNumbers&) const = default;
};

struct GatherDimNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const GatherDimNumbers&) const = default;
};

struct ScatterDimNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const ScatterDimNumbers&) const = default;
};

enum class ComparisonDirection : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
// Default comparison type follows the operand type (FLOAT / SIGNED / UNSIGNED);
// TOTALORDER orders floats as -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.
enum class ComparisonType : uint8_t { kDefault, kFloat, kTotalOrder, kSigned, kUnsigned };

// A list of device ids given in XLA's iota form: [reshape_dims]<=[iota_dims]T(perm).
// expand() yields the explicit ids, row-major over reshape_dims.
struct IotaList {
  std::vector<int64_t> reshape_dims;
  std::vector<int64_t> iota_dims;
  std::vector<int64_t> transpose;  // empty: identity
  std::vector<int64_t> expand() const;
  std::string to_string() const;  // [2,2]<=[4] or [2,2]<=[2,2]T(1,0)
  bool operator==(const IotaList&) const = default;
};

// replica_groups={{0,1},{2,3}} or replica_groups=[2,2]<=[4].
struct ReplicaGroups {
  std::vector<std::vector<int64_t>> groups;  // always filled (expanded from iota)
  std::optional<IotaList> iota;              // set when written in iota form
  bool operator==(const ReplicaGroups&) const = default;
};

struct Sharding {
  enum class Kind : uint8_t { kReplicated, kMaximal, kTiled, kManual, kUnknown, kTuple };
  Kind kind = Kind::kReplicated;
  int64_t maximal_device = 0;
  // Tiled: tile assignment dimensions and the device at each tile (row-major).
  std::vector<int64_t> tile_dims;
  std::vector<int64_t> devices;
  std::optional<IotaList> iota;  // set when the device list was written in iota form
  bool last_tile_dim_replicate = false;
  std::vector<std::string> last_tile_dims;  // last_tile_dims={manual, replicated}
  std::vector<Sharding> tuple_elements;
  std::string to_string() const;
  bool operator==(const Sharding&) const = default;
};

struct Metadata {
  std::string op_type;
  std::string op_name;
  std::string source_file;
  int64_t source_line = 0;
  bool empty() const { return op_type.empty() && op_name.empty() && source_file.empty() && source_line == 0; }
  bool operator==(const Metadata&) const = default;
};

enum class RngAlgorithm : uint8_t { kDefault, kThreeFry, kPhilox };

enum class FusionKind : uint8_t { kLoop, kInput, kOutput, kCustom };

enum class Precision : uint8_t { kDefault, kHigh, kHighest };

std::string_view direction_name(ComparisonDirection d);  // "EQ", ...
std::optional<ComparisonDirection> direction_from_name(std::string_view s);
std::string_view comparison_type_name(ComparisonType t);  // "FLOAT", "TOTALORDER", ...
std::optional<ComparisonType> comparison_type_from_name(std::string_view s);
std::string_view rng_algorithm_name(RngAlgorithm a);  // "rng_default", ...
std::optional<RngAlgorithm> rng_algorithm_from_name(std::string_view s);
std::string_view fusion_kind_name(FusionKind k);  // "kLoop", ...
std::optional<FusionKind> fusion_kind_from_name(std::string_view s);
std::string_view precision_name(Precision p);  // "default", "high", "highest"
std::optional<Precision> precision_from_name(std::string_view s);
// custom-call api_version: API_VERSION_UNSPECIFIED (0) ... API_VERSION_TYPED_FFI (4).
std::string_view custom_call_api_version_name(int64_t version);  // "" when unknown
std::optional<int64_t> custom_call_api_version_from_name(std::string_view s);

}  // namespace podsim::ir
