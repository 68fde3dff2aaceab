# The README's commands. Each target installs what is missing, configures and builds.
BUILD ?= build
JOBS ?= $(shell nproc)
# Warnings are errors in CI.
WERROR ?= $(if $(CI),ON,OFF)
PODSIM = $(BUILD)/bin/podsim

.PHONY: all setup configure build demo test bench install clean

all: build

setup:
	@scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DPython_EXECUTABLE=/usr/bin/python3 -DPODSIM_WERROR=$(WERROR) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: train the MLP example (scikit-learn's handwritten digits) on a simulated
# TPU v5e chip: every training step is one lazy-tensor graph, compiled once for the TPU
# target and run on the simulated chip. Builds the podsim program alone, so a newcomer
# waits for nothing else (and no test can stop it).
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target podsim
	$(PODSIM) train mlp --device sim --topology v5e-8

test: build
	@scripts/setup.sh test
	ctest --test-dir $(BUILD) -LE slow --output-on-failure --no-tests=error -j $(JOBS)
	scripts/check_test_binaries.sh $(BUILD)

bench: build
	@for b in $(BUILD)/bin/bench/*; do echo "== $$b"; $$b || exit 1; done

# The Python module (import podsim) into /usr/local/lib/python3.X/dist-packages, where
# Debian's python3 finds what the local administrator installs.
install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
