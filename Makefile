# The two set-up commands of the README (`make run`, `make test`) install what is missing and nothing more.

# System packages: pkg-config and libudev for gamepads (gilrs); the Vulkan loader and Mesa's Vulkan drivers (lavapipe
# renders on any CPU, so `tumble screenshot` and the image test in `make test` work without a GPU).
SYSTEM_PACKAGES := pkg-config libudev-dev libvulkan1 mesa-vulkan-drivers
# `make test`: the Vulkan validation layers, which debug builds (the tests) turn on; the image tests fail on any
# message they report.
TEST_PACKAGES := vulkan-validationlayers xvfb
# `make bench`: what Jolt (the third engine of the speed comparison, cargo feature `jolt` of tumble-benches: Jolt
# 5.6.0 inside the oxijolt-sys crate, whose bindings are committed) builds with: CMake and a C++ compiler.
# `make test` never builds it.
BENCH_PACKAGES := cmake g++
# `make vr`: the OpenXR loader (the runtime itself, SteamVR or Monado, is the user's).
VR_PACKAGES := libopenxr-loader1

.PHONY: run test test-vr test-nat test-vr-realtime bench vr system-packages toolchain

run: system-packages toolchain
	cargo run --release

test: system-packages toolchain
	@scripts/ensure-system-packages.sh $(TEST_PACKAGES)
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	@# A machine without an IPv6 loopback cannot run the IPv6 socket test: say so loudly, and only then let it skip.
	@if ! ip -6 addr show dev lo 2>/dev/null | grep -q 'inet6 ::1/'; then \
		echo "################################################################################" >&2; \
		echo "# SKIPPED: the IPv6 socket test (this machine has no IPv6 loopback, ::1 on lo).  #" >&2; \
		echo "# IPv6 joins are untested here; TUMBLE_NO_IPV6=1 is set for cargo test.        #" >&2; \
		echo "################################################################################" >&2; \
		echo "TUMBLE_NO_IPV6=1 cargo test --workspace"; TUMBLE_NO_IPV6=1 cargo test --workspace; \
	else \
		echo "cargo test --workspace"; cargo test --workspace; \
	fi
	@if [ "$$(id -u)" -eq 0 ]; then \
		$(MAKE) --no-print-directory test-vr && $(MAKE) --no-print-directory test-nat; \
	else \
		echo "################################################################################" >&2; \
		echo "# SKIPPED: make test-vr (the VR session against Monado in a Debian trixie root:  #" >&2; \
		echo "# debootstrap, chroot, mounts) and make test-nat (a host behind miniupnpd in     #" >&2; \
		echo "# network namespaces, nftables) need root. CI runs them; run them as root.      #" >&2; \
		echo "################################################################################" >&2; \
	fi

# The VR path against Monado's simulated headset in a cached Debian trixie root (root only; see docs/vr-test-bed.md).
test-vr: system-packages toolchain
	scripts/test-vr.sh 300

# A host behind a router running miniupnpd, a guest outside it, in network namespaces (root only): the host maps
# its port by PCP and by UPnP-IGD and the guest joins; a router that denies, and a host with --no-port-mapping, leave
# the guest out with an error that says what to forward (scripts/test-nat.sh; about 40 s).
test-nat: system-packages toolchain
	scripts/test-nat.sh

# Whether this machine holds 120 Hz on a real runtime (release build, Monado's main compositor in an Xvfb window):
# a report on stdout (target/vr-realtime/), never a failure for speed. Root only, as test-vr.
test-vr-realtime: system-packages toolchain
	scripts/test-vr-realtime.sh 120

# Physics regression suite: every shipped scene on Tumble and Rapier, with sleeping (target/bench-report/) and
# without it (target/bench-report/no-sleep/, where the solvers' cost is compared), each against its baseline;
# the state-sync bandwidth table (target/bench-report/bandwidth.md); the four-player table
# (target/bench-report/session-bandwidth.md); the tipping sweep (target/bench-report/tipping.md: cubes just before
# and just past balance must stand and fall); what packet encryption costs (target/bench-report/encryption.md:
# bytes, µs and the kbps it adds on table64); whether a step's cost follows motion (target/bench-report/motion-cost.md:
# one awake cube among 5,050 resting ones against the cube alone, and one thrown cube waking the pile: ms per step
# against awake bodies, motion-cost.png); Tumble against Rapier (defaults and held to Tumble's iteration budget) and
# Jolt with sleeping off, per phase (contacts forming, steady state), medians of alternated runs, each engine's reruns
# checked for the same bits, the Jolt version in the report (target/bench-report/engine-speed.md); the network models of `tumble compare` side by side
# against loss (target/bench-report/network-models.md and .png); then the criterion micro-benchmarks (physics,
# render, transport).
bench: system-packages toolchain
	@scripts/ensure-system-packages.sh $(BENCH_PACKAGES)
	cargo run --release -p tumble-benches --bin bench-report
	cargo run --release -p tumble-benches --bin bench-report -- --no-sleep --steps-for large_pyramid=300 \
		--out target/bench-report/no-sleep --baseline benches/baseline-no-sleep.json
	cargo run --release -p tumble-benches --bin sync-bandwidth -- --out target/bench-report \
		> target/bench-report/bandwidth.json
	cargo run --release -p tumble-benches --bin session-bandwidth -- --out target/bench-report \
		> target/bench-report/session-bandwidth.json
	cargo run --release -p tumble-benches --bin tipping-sweep -- --out target/bench-report \
		> target/bench-report/tipping.json
	cargo run --release -p tumble-benches --bin encryption-cost -- --out target/bench-report \
		> target/bench-report/encryption.json
	cargo run --release -p tumble-benches --bin motion-cost -- --out target/bench-report \
		> target/bench-report/motion-cost.json
	cargo run --release -p tumble-benches --bin render-cost -- --out target/bench-report \
		> target/bench-report/render.json
	cargo run --release -p tumble-benches --features jolt --bin engine-speed -- --out target/bench-report \
		> target/bench-report/engine-speed.json
	cargo run --release -p tumble-benches --bin parallel-speed -- --out target/bench-report \
		> target/bench-report/parallel-speed.json
	cargo run --release -p tumble-benches --bin network-models -- --out target/bench-report \
		> target/bench-report/network-models.json
	cargo bench -p tumble-benches --benches
	cargo bench -p tumble-net --bench net
	@# The transport's fuzzers at a million cases each (make test runs them shorter), seeded: a failure prints the
	@# TUMBLE_FUZZ_SEED that reproduces it. Their per-run figures go to target/bench-report/fuzz.log.
	TUMBLE_FUZZ_CASES=1000000 cargo test --release -p tumble-net --test fuzz -- --nocapture \
		2> target/bench-report/fuzz.log

# Tumble on an OpenXR headset: start SteamVR or Monado first (README). The loader and Vulkan are opened at run time.
vr: system-packages toolchain
	@scripts/ensure-system-packages.sh $(VR_PACKAGES)
	cargo run --release -- vr

system-packages:
	@scripts/ensure-system-packages.sh $(SYSTEM_PACKAGES)

toolchain:
	@command -v cargo >/dev/null 2>&1 || { echo "Rust is missing: install stable Rust with rustup, then run make again." >&2; exit 1; }
	@cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
