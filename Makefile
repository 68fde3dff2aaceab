# The README's commands. Each target installs what is missing, configures and builds.
BUILD ?= build
JOBS ?= $(shell nproc)
# Warnings are errors in CI.
WERROR ?= $(if $(CI),ON,OFF)
PODSIM = $(BUILD)/bin/podsim
DEMO_HLO = examples/hlo/mlp_forward.hlo

.PHONY: all setup configure build demo test bench clean

all: build

setup:
	@scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DPython_EXECUTABLE=/usr/bin/python3 -DPODSIM_WERROR=$(WERROR) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job. Until training on a simulated pod exists: an MLP forward pass shipped
# as HLO text, checked, run by the reference evaluator, and compiled for a TPU v5e and
# run on the functional chip model.
demo: build
	$(PODSIM) check $(DEMO_HLO)
	$(PODSIM) run $(DEMO_HLO) --backend eval --seed 1
	$(PODSIM) run $(DEMO_HLO) --backend sim-functional --chip v5e --seed 1

test: build
	ctest --test-dir $(BUILD) -LE slow --output-on-failure --no-tests=error -j $(JOBS)
	scripts/check_test_binaries.sh $(BUILD)

bench: build
	@for b in $(BUILD)/bin/bench/*; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf $(BUILD)
