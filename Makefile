# weft — the two set-up commands of the README live here.
#   make run    install missing Debian packages, build, bring up a fat tree on ibsim
#   make run-sim the same on weft's in-process simulator
#   make test   install missing Debian packages, build, run every test (ibsim ones too)
#   make bench  weft vs OpenSM on ibsim fabrics: bring-up, then routing quality; routing
#               at scale (radix-56 tree); SA;
#               weft roce check on 2,000 switches and 50,000 hosts
#   make asan   the same tests under AddressSanitizer + UBSan
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: deps build run run-sim test bench asan format clean
deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DWEFT_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

run: build
	scripts/run-on-ibsim.sh $(BUILD)/app/weft

run-sim: build
	$(BUILD)/app/weft sim --topology ft2:leaves=16,spines=8,hosts=8

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

bench: build
	bench/bench_bringup.sh $(BUILD)/app/weft
	python3 bench/bench_routing.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_scale.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_sa.py --weft $(abspath $(BUILD))/app/weft \
	  --sa-bench $(abspath $(BUILD))/bench/weft_sa_bench --flood $(abspath $(BUILD))/bench/weft_sa_flood
	python3 bench/bench_roce.py --weft $(abspath $(BUILD))/app/weft

asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON"

format:
	find . -path './build*' -prune -o \( -name '*.cpp' -o -name '*.hpp' \) -print | xargs clang-format -i

clean:
	rm -rf build build-asan
