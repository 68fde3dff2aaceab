// disassemble(): the readable text form of an executable, which assemble() reads back to
// an equal executable. The syntax is documented at the top of isa/assembler.cc.
#include <fmt/format.h>

#include <set>

#include "common/error.h"
#include "isa/isa.h"
#include "isa/text_internal.h"
#include "isa/validator_internal.h"

namespace podsim::isa {
namespace {

constexpr size_t kBytesPerLine = 32;

std::string name_or_quoted(const std::string& name) {
  return detail::is_identifier(name) ? name : detail::quote(name);
}

bool is_unmodified_preset(const topology::ChipConfig& chip) {
  for (const std::string& name : topology::preset_names())
    if (name == chip.name) return topology::preset(name) == chip;
  return false;
}

std::string chip_text(const topology::ChipConfig& chip) {
  if (is_unmodified_preset(chip)) return fmt::format(".chip {}\n", chip.name);
  // The numeric fields as TOML (units and ranges are topology's business); name and
  // description in this format's own quoting, which round-trips any bytes.
  topology::ChipConfig fields = chip;
  fields.name.clear();
  fields.description.clear();
  std::string toml = topology::to_toml(fields);
  // Drop the first two lines: name = "" and description = "".
  for (int skip = 0; skip < 2; ++skip) toml.erase(0, toml.find('\n') + 1);
  return fmt::format(".chip_toml {} {}\n{}.end\n", detail::quote(chip.name),
                     detail::quote(chip.description), toml);
}

// `.pod NAME` when the name gives this very pod back, else the whole pod as TOML; then
// replicas and partitions where they are not the default (every chip a replica; fewer
// devices than chips run on the first chips).
std::string pod_text(const Executable& e) {
  const topology::PodConfig& pod = *e.pod;
  std::string out;
  // Only names, never a file path: the text must stand on its own.
  bool named = false;
  if (pod.name.find_first_of("/.") == std::string::npos) {
    try {
      named = topology::pod_config(pod.name) == pod;
    } catch (const Error&) {
    }
  }
  if (named)
    out = fmt::format(".pod {}\n", detail::quote(pod.name));
  else
    out = fmt::format(".pod_toml\n{}.end\n", topology::to_toml(pod));
  if (e.partitions != 1 || e.replicas != pod.chips())
    out += fmt::format(".replicas {}\n.partitions {}\n", e.replicas, e.partitions);
  return out;
}

std::string dims_text(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string binding_text(const Executable& e, const char* directive, const Binding& b) {
  return fmt::format("{} {} {} {}{}\n", directive, name_or_quoted(b.name), e.regions[b.region].name,
                     dtype_name(b.dtype), dims_text(b.dims));
}

std::string label(int64_t target) { return fmt::format("L{}", target); }

std::string instruction_text(const Executable& e, const Instruction& in) {
  std::string text(mnemonic(in.opcode));
  if (detail::is_typed(in.opcode) || in.dtype != DType::kF32)
    text += fmt::format(".{}", dtype_name(in.dtype));
  std::string_view sig = signature(in.opcode);
  for (size_t k = 0; k < sig.size(); ++k) {
    text += k == 0 ? " " : ", ";
    int64_t v = in.operands[k];
    switch (sig[k]) {
      case 'R':
        text += e.regions[v].name;
        if (k + 1 < sig.size() && sig[k + 1] == 'S') text += fmt::format("[s{}]", in.operands[++k]);
        break;
      case 'L':
        text += label(v);
        break;
      case 'I':
        text += fmt::format("{}", v);
        break;
      default:
        text += fmt::format("{}{}", detail::operand_prefix(sig[k]), v);
        break;
    }
  }
  return text;
}

std::string program_text(const Executable& e, const Program& p) {
  std::set<int64_t> targets;
  for (const Instruction& in : p.instructions) {
    std::string_view sig = signature(in.opcode);
    for (size_t k = 0; k < sig.size(); ++k)
      if (sig[k] == 'L') targets.insert(in.operands[k]);
  }
  std::string out = fmt::format("\n.program core {}\n", p.core);
  for (size_t n = 0; n < p.instructions.size(); ++n) {
    const Instruction& in = p.instructions[n];
    if (targets.count(static_cast<int64_t>(n))) out += label(static_cast<int64_t>(n)) + ":\n";
    std::string line = "  " + instruction_text(e, in);
    if (in.source_op >= 0) {
      line = fmt::format("{:<40} @{}", line, in.source_op);
      if (const std::string& name = e.source_ops[in.source_op].instruction; !name.empty())
        line += fmt::format("  # {}", name_or_quoted(name));
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string disassemble(const Executable& e) {
  validate(e);
  std::string out = fmt::format("# podsim executable\n.format {}\n", e.format_version);
  if (!e.compiler_version.empty())
    out += fmt::format(".compiler {}\n", detail::quote(e.compiler_version));
  out += e.pod ? pod_text(e) : chip_text(e.chip);

  if (!e.regions.empty()) out += "\n";
  for (const Region& r : e.regions) {
    std::string space = r.space == MemorySpace::kHbm ? "hbm" : fmt::format("vmem[{}]", r.core);
    out += fmt::format(".region {} {} {} {}\n", r.name, space, r.offset, r.size);
  }
  for (size_t i = 0; i < e.descriptors.size(); ++i) {
    const DmaDescriptor& d = e.descriptors[i];
    out += fmt::format(
        ".descriptor d{} src={} dst={} elem={} sizes={} src_strides={} dst_strides={}\n", i,
        e.regions[d.src_region].name, e.regions[d.dst_region].name, d.element_bytes,
        dims_text(d.sizes), dims_text(d.src_strides), dims_text(d.dst_strides));
  }
  for (const Constant& c : e.constants) {
    out += fmt::format(".constant {}", e.regions[c.region].name);
    for (size_t at = 0; at < c.data.size(); at += kBytesPerLine) {
      out += at == 0 ? " " : "\n.bytes ";
      for (size_t i = at; i < std::min(c.data.size(), at + kBytesPerLine); ++i)
        out += fmt::format("{:02x}", c.data[i]);
    }
    out += "\n";
  }
  for (const Binding& b : e.parameters) out += binding_text(e, ".param", b);
  for (const Binding& b : e.outputs) out += binding_text(e, ".output", b);
  for (size_t i = 0; i < e.source_ops.size(); ++i) {
    const SourceOp& s = e.source_ops[i];
    out += fmt::format(".source {} {} {} {} {} {}\n", i, detail::quote(s.instruction),
                       detail::quote(s.op_type), detail::quote(s.op_name),
                       detail::quote(s.source_file), s.source_line);
  }
  for (const Program& p : e.programs) out += program_text(e, p);
  return out;
}

}  // namespace podsim::isa
