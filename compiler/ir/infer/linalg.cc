// Shape inference of dot and convolution.
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/ir/infer/internal.h"

namespace podsim::ir::infer {
namespace {

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// dot and convolution may produce a wider type than their operands (XLA's
// preferred_element_type), taken from the declared result: floats to any float, integers
// to integers no narrower.
PrimitiveType result_type(PrimitiveType operand, const Shape& declared) {
  if (!declared.is_array() || declared.type() == operand) return operand;
  PrimitiveType to = declared.type();
  bool ok = (is_float(operand) && is_float(to)) || (is_integral(operand) && is_integral(to) &&
                                                    type_bit_width(to) >= type_bit_width(operand));
  if (!ok)
    fail("result type {} is not a valid accumulation type for {} operands", type_name(to),
         type_name(operand));
  return to;
}

void expect_same_type(const Shape& lhs, const Shape& rhs) {
  expect_array(lhs, "lhs");
  expect_array(rhs, "rhs");
  if (lhs.type() != rhs.type())
    fail("lhs {} and rhs {} have different element types", str(lhs), str(rhs));
}

}  // namespace

Shape infer_dot(const Instruction& inst) {
  const Shape& lhs = operand_shape(inst, 0);
  const Shape& rhs = operand_shape(inst, 1);
  expect_same_type(lhs, rhs);
  const DotDimNumbers& dn = inst.attrs().dot_dims;
  if (dn.lhs_batch.size() != dn.rhs_batch.size())
    fail("lhs_batch_dims {} and rhs_batch_dims {} differ in length", str(dn.lhs_batch),
         str(dn.rhs_batch));
  if (dn.lhs_contracting.size() != dn.rhs_contracting.size())
    fail("lhs_contracting_dims {} and rhs_contracting_dims {} differ in length",
         str(dn.lhs_contracting), str(dn.rhs_contracting));
  check_dims(concat(dn.lhs_batch, dn.lhs_contracting), lhs.rank(),
             "lhs batch and contracting dims");
  check_dims(concat(dn.rhs_batch, dn.rhs_contracting), rhs.rank(),
             "rhs batch and contracting dims");
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i)
    if (lhs.dim(dn.lhs_batch[i]) != rhs.dim(dn.rhs_batch[i]))
      fail("batch dimension {} of lhs {} and {} of rhs {} differ in size", dn.lhs_batch[i],
           str(lhs), dn.rhs_batch[i], str(rhs));
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i)
    if (lhs.dim(dn.lhs_contracting[i]) != rhs.dim(dn.rhs_contracting[i]))
      fail("contracting dimension {} of lhs {} and {} of rhs {} differ in size",
           dn.lhs_contracting[i], str(lhs), dn.rhs_contracting[i], str(rhs));
  std::vector<int64_t> dims;
  for (int64_t d : dn.lhs_batch) dims.push_back(lhs.dim(d));
  for (int64_t d = 0; d < lhs.rank(); ++d)
    if (!contains(dn.lhs_batch, d) && !contains(dn.lhs_contracting, d)) dims.push_back(lhs.dim(d));
  for (int64_t d = 0; d < rhs.rank(); ++d)
    if (!contains(dn.rhs_batch, d) && !contains(dn.rhs_contracting, d)) dims.push_back(rhs.dim(d));
  return make_shape(result_type(lhs.type(), inst.shape()), std::move(dims));
}

Shape infer_convolution(const Instruction& inst) {
  const Shape& lhs = operand_shape(inst, 0);
  const Shape& rhs = operand_shape(inst, 1);
  expect_same_type(lhs, rhs);
  if (!inst.attrs().window) fail("has no window");
  const Window& window = *inst.attrs().window;
  const ConvDimNumbers& cd = inst.attrs().conv_dims;
  auto n = static_cast<int64_t>(window.dims.size());
  if (static_cast<int64_t>(cd.input_spatial.size()) != n ||
      static_cast<int64_t>(cd.kernel_spatial.size()) != n ||
      static_cast<int64_t>(cd.output_spatial.size()) != n)
    fail("dim_labels have {}/{}/{} spatial dimensions (input/kernel/output) but the window has {}",
         cd.input_spatial.size(), cd.kernel_spatial.size(), cd.output_spatial.size(), n);
  if (lhs.rank() != n + 2 || rhs.rank() != n + 2)
    fail("lhs {} and rhs {} must have rank {} (batch, feature and {} spatial dimensions)", str(lhs),
         str(rhs), n + 2, n);
  check_dims(concat({cd.input_batch, cd.input_feature}, cd.input_spatial), n + 2,
             "input dimension labels");
  check_dims(concat({cd.kernel_input_feature, cd.kernel_output_feature}, cd.kernel_spatial), n + 2,
             "kernel dimension labels");
  check_dims(concat({cd.output_batch, cd.output_feature}, cd.output_spatial), n + 2,
             "output dimension labels");
  int64_t fgc = inst.attrs().feature_group_count;
  int64_t bgc = inst.attrs().batch_group_count;
  if (fgc < 1) fail("feature_group_count {} must be positive", fgc);
  if (bgc < 1) fail("batch_group_count {} must be positive", bgc);
  if (fgc > 1 && bgc > 1)
    fail("feature_group_count {} and batch_group_count {} cannot both exceed 1", fgc, bgc);
  int64_t batch = lhs.dim(cd.input_batch);
  int64_t features = lhs.dim(cd.input_feature);
  int64_t kernel_in = rhs.dim(cd.kernel_input_feature);
  int64_t kernel_out = rhs.dim(cd.kernel_output_feature);
  if (features % fgc != 0 || features / fgc != kernel_in)
    fail(
        "input feature size {} divided by feature_group_count {} must equal the kernel input "
        "feature size {}",
        features, fgc, kernel_in);
  if (kernel_out % fgc != 0)
    fail("kernel output feature size {} is not a multiple of feature_group_count {}", kernel_out,
         fgc);
  if (batch % bgc != 0)
    fail("input batch size {} is not a multiple of batch_group_count {}", batch, bgc);
  if (kernel_out % bgc != 0)
    fail("kernel output feature size {} is not a multiple of batch_group_count {}", kernel_out,
         bgc);
  std::vector<int64_t> spatial;
  for (int64_t i = 0; i < n; ++i) {
    auto k = static_cast<size_t>(i);
    int64_t kernel_size = rhs.dim(cd.kernel_spatial[k]);
    if (window.dims[k].size != kernel_size)
      fail("window dimension {} has size {} but the kernel's spatial dimension has size {}", i,
           window.dims[k].size, kernel_size);
    spatial.push_back(lhs.dim(cd.input_spatial[k]));
  }
  std::vector<int64_t> out_spatial = window_output_dims(Shape(lhs.type(), spatial), window);
  std::vector<int64_t> dims(static_cast<size_t>(n + 2));
  dims[static_cast<size_t>(cd.output_batch)] = batch / bgc;
  dims[static_cast<size_t>(cd.output_feature)] = kernel_out;
  for (int64_t i = 0; i < n; ++i)
    dims[static_cast<size_t>(cd.output_spatial[static_cast<size_t>(i)])] =
        out_spatial[static_cast<size_t>(i)];
  return make_shape(result_type(lhs.type(), inst.shape()), std::move(dims));
}

}  // namespace podsim::ir::infer
