# weft — the two set-up commands of the README live here.
#   make run    install missing Debian packages, build, bring up a fat tree on ibsim
#   make run-sim the same on weft's in-process simulator
#   make test   install missing Debian packages, build, run every test (ibsim ones too)
#   make check  build and run the in-process tests only (ctest label unit): the loop
#               while working; make test is what CI runs
#   make bench  weft vs OpenSM on ibsim fabrics: bring-up (the radix-56 tree too, and
#               weft's SMP windows), routing quality, routing at scale (radix-56 tree,
#               OpenSM's minhop beside it), SA; weft roce check on 2,000 switches and
#               50,000 hosts; the REST API under wrk, idle and during sweeps, and what its
#               load does to bring-up and the SA; failover (kill -9 of the master) weft
#               beside weft and OpenSM beside OpenSM; reroute after a link cut (time, LFT
#               blocks written; minhop, updn, ftree and dfsssp, each bring-up's SMPs too);
#               counter sweeps (PerfMgr) beside OpenSM's and the topology page's load on
#               the 444-switch tree; failover and REST partition changes
#               with the state directory and with etcd as the state store; bring-up through
#               MAD loss on every node; the rig's ceiling (ibsim's own answer rate for the
#               SMPs of a bring-up) beside weft and OpenSM. Every figure in README.md comes
#               from here (about 85 min).
#   make asan   the same tests under AddressSanitizer + UBSan
#   make install  install weft, /etc/weft/weft.conf, the systemd units and weft.8
#               (PREFIX=/usr for Debian's paths; DESTDIR=... to stage)
#   make deb    build the Debian package: weft_*.deb in the tree's top
BUILD ?= build
JOBS ?= $(shell nproc)
# Optimised as shipped, with line tables (-g1: backtraces, perf and gdb's bt name
# functions, files and lines) but not full debug info, which costs a third of the
# compile time (scripts/devloop.sh). For locals in gdb: CMAKE_FLAGS=-DCMAKE_BUILD_TYPE=Debug
# (make asan is such a build).
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
# Where make install puts weft (the units and weft.conf name these paths, so it is
# chosen when CMake configures).
PREFIX ?= /usr/local

.PHONY: deps build run run-sim test check bench asan install deb format clean
deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DWEFT_WERROR=ON -DWEFT_PCH=ON -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

run: build
	scripts/run-on-ibsim.sh $(BUILD)/app/weft

run-sim: build
	$(BUILD)/app/weft sim --topology ft2:leaves=16,spines=8,hosts=8

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

check: build
	cd $(BUILD) && ctest -L unit --output-on-failure -j $(JOBS) --timeout 600

bench: build
	bench/bench_bringup.sh $(BUILD)/app/weft --huge --window-sweep
	python3 bench/bench_routing.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_torus.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_ar.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_cc.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_scale.py --weft $(abspath $(BUILD))/app/weft --opensm
	python3 bench/bench_sa.py --weft $(abspath $(BUILD))/app/weft \
	  --sa-bench $(abspath $(BUILD))/bench/weft_sa_bench --flood $(abspath $(BUILD))/bench/weft_sa_flood
	python3 bench/bench_roce.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_roce_doctor.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_rest.py --weft $(abspath $(BUILD))/app/weft --flood $(abspath $(BUILD))/bench/weft_sa_flood \
	  --watch $(abspath $(BUILD))/bench/weft_pkey_watch
	python3 bench/bench_failover.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_reroute.py --weft $(abspath $(BUILD))/app/weft --shim $(abspath $(BUILD))/bench/libweft_madcount.so
	python3 bench/bench_reroute.py --weft $(abspath $(BUILD))/app/weft --shim $(abspath $(BUILD))/bench/libweft_madcount.so --huge
	python3 bench/bench_perf.py --weft $(abspath $(BUILD))/app/weft --shim $(abspath $(BUILD))/bench/libweft_madcount.so
	python3 bench/bench_state_store.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_takeover.py --weft $(abspath $(BUILD))/app/weft --shim $(abspath $(BUILD))/bench/libweft_madcount.so
	python3 bench/bench_restart.py --weft $(abspath $(BUILD))/app/weft --sa-client $(abspath $(BUILD))/tests/weft_sa_client
	python3 bench/bench_loss.py --weft $(abspath $(BUILD))/app/weft
	python3 bench/bench_ceiling.py --weft $(abspath $(BUILD))/app/weft --huge \
	  --shim $(abspath $(BUILD))/bench/libweft_madcount.so --replay $(abspath $(BUILD))/bench/weft_smp_replay
	python3 bench/bench_sm_cost.py --weft $(abspath $(BUILD))/app/weft

install: build
	cmake --install $(BUILD)

deb: deps
	scripts/make-deb.sh

asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON"

format:
	find . -path './build*' -prune -o \( -name '*.cpp' -o -name '*.hpp' \) -print | xargs clang-format -i

clean:
	rm -rf build build-asan
