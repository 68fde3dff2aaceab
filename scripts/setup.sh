#!/usr/bin/env bash
# Installs the Debian 12 packages podsim needs, skipping those already present.
# Runs as root, or through sudo. The README says why each package is there.
#
#   scripts/setup.sh [GROUP...]           install the main group (and the groups named)
#   scripts/setup.sh --list [GROUP...]    print those packages, one per line
#   scripts/setup.sh --prerequisites      print what a bare system needs before this script
#
# scripts/check_deps.py (a test in the default run) fails when the build or the tests use
# a file of a package that is neither listed here nor pulled in by one that is.
set -euo pipefail

# What a user has before the README's commands: a minimal Debian 12 (debootstrap's
# minbase) plus these, to clone the repository and run make.
prerequisites=(git make sudo ca-certificates)

packages=(
  cmake ninja-build g++ ccache pkg-config   # build
  libfmt-dev                                # formatting
  libjs-chart.js                            # HTML profile reports: Chart.js, embedded in each report
  libtbb-dev                                # CPU backend: parallel loops
  libopenblas-dev                           # CPU backend: GEMM and convolution
  libcli11-dev                              # the CLI's argument parsing
  libtomlplusplus-dev                       # chip configuration files (TOML)
  libboost-dev                              # Boost.Graph: routes and hop counts over pod links
  capnproto libcapnp-dev libssl-dev         # the executable format (Cap'n Proto)
  nlohmann-json3-dev                        # safetensors headers (JSON)
  libgtest-dev libgmock-dev                 # tests (GoogleTest, GoogleMock matchers)
  libbenchmark-dev                          # benchmarks
  libsystemc-dev                            # the cycle-approximate timing model (SystemC 2.3)
  ocl-icd-opencl-dev opencl-c-headers       # the OpenCL backend: ICD loader and headers
  pocl-opencl-icd                           # OpenCL on the CPU, where there is no GPU (tests, CI)
  libclblast-dev                            # the OpenCL backend: CLBlast's tuned GEMMs
  zlib1g-dev                                # reading gzip-compressed datasets
  python3-sklearn                           # the handwritten-digits dataset of `podsim train mlp`
  python3-numpy                             # test oracle (/usr/bin/python3)
  python3-torch                             # test oracle and benchmark reference (PyTorch 1.13)
  python3-dev pybind11-dev                  # the Python module (import podsim): headers, pybind11
  libtorch-dev                              # podsim.torch: c10's device-guard interface (C++ headers)
)

# make test: what the tests use beyond the build.
tests=(
  chromium                                  # the HTML report loaded in a real (headless) browser
  python3-pytest                            # the Python module's tests (python/tests)
)

# scripts/sanitize.sh (CI): fuzz targets with libFuzzer, tests under ASan/UBSan.
sanitize=(
  clang libclang-rt-14-dev                  # clang 14, libFuzzer and the sanitizer runtimes
  llvm-14 llvm                              # llvm-symbolizer (file:line in reports), llvm-ar
)

mode=install
case "${1:-}" in
  --list) mode=list; shift ;;
  --prerequisites) printf '%s\n' "${prerequisites[@]}"; exit 0 ;;
  -h|--help) sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
selected=("${packages[@]}")
for group in "$@"; do
  case "$group" in
    test) selected+=("${tests[@]}") ;;
    sanitize) selected+=("${sanitize[@]}") ;;
    *) echo "setup: unknown package group '$group' (known: test, sanitize)" >&2; exit 2 ;;
  esac
done
if [ "$mode" = list ]; then
  printf '%s\n' "${selected[@]}"
  exit 0
fi

missing=()
for p in "${selected[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
