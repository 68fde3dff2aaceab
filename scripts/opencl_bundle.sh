#!/usr/bin/env bash
# Packs the OpenCL benchmark (build/bin/bench/opencl_bench) and the OpenCL NumPy-oracle
# test (with its cases) into OUT.tar.xz, which runs on a machine with only a GPU driver's
# OpenCL platform and the ICD loader (no podsim dependencies, no packages): stripped
# binaries, every shared library they need beyond glibc, libstdc++ and libgcc (newer
# ones stay compatible), and two scripts that point the loader at them:
#   bench.sh [ARGS]   opencl_bench ARGS
#   test.sh [ARGS]    opencl_numpy_integration_test ARGS on the bundled cases
#   scripts/opencl_bundle.sh [OUT]     (default build/opencl-bundle)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/opencl-bundle}"
binaries=("$root/build/bin/bench/opencl_bench" "$root/build/bin/tests/opencl_numpy_integration_test")
for b in "${binaries[@]}"; do
  [ -x "$b" ] || { echo "opencl_bundle: build $b first" >&2; exit 1; }
done
rm -rf "$out" "$out.tar.xz"
mkdir -p "$out/lib"
for b in "${binaries[@]}"; do
  strip -o "$out/$(basename "$b")" "$b"
  ldd "$b" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
done
cp -r "$root/build/tests/numpy_cases" "$out/numpy_cases"
cat > "$out/bench.sh" <<'RUN'
#!/bin/sh
here="$(cd "$(dirname "$0")" && pwd)"
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/opencl_bench" "$@"
RUN
cat > "$out/test.sh" <<'RUN'
#!/bin/sh
here="$(cd "$(dirname "$0")" && pwd)"
PODSIM_NUMPY_CASES="$here/numpy_cases" LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  exec "$here/opencl_numpy_integration_test" "$@"
RUN
chmod +x "$out/bench.sh" "$out/test.sh"
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
du -sh "$out" "$out.tar.xz"
