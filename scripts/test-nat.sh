#!/usr/bin/env bash
# The NAT test bed (root only; `make test-nat`, and `make test` as root): a home network behind a router running the
# real miniupnpd, and a player outside it, all in network namespaces on this machine.
#
#   home 192.168.77.2 ── lan0 192.168.77.1 [router] 203.0.114.1 wan0 ── outside 203.0.114.2
#
# The router forwards, masquerades the home network on its WAN side (nftables) and runs miniupnpd (PCP, NAT-PMP,
# UPnP-IGD) on its LAN side. `tumble host --headless` runs at home, `tumble join CODE --headless` outside, with the
# code the host printed. The WAN is 203.0.114.0/24, next to the documentation range 203.0.113.0/24 but not in it:
# miniupnpd treats every documentation, private and reserved range on its WAN interface as "behind another NAT" and
# refuses to forward anything. No namespace has a route off this machine, so no packet leaves it.
#
# Cases (each checks the host's JSON and log and the guest's JSON or error):
#   1. miniupnpd with PCP/NAT-PMP and UPnP: the host maps its port by PCP (renewed every 2 s: lifetime 4 s), its
#      join code names the router's WAN address, the guest joins; the mapping is gone from the router's nftables
#      once the host has left.
#   2. miniupnpd with UPnP only: the host maps its port by UPnP-IGD, the guest joins.
#   3. miniupnpd (UPnP only) denying every mapping: the host logs each method's answer (UPnP's refusal code) and
#      what to forward by hand, and its code names its LAN address; the guest's join fails, naming the private
#      address and what the host must do.
#   4. Negative control: miniupnpd as in 1, the host with --no-port-mapping: the guest cannot join.
#
# Usage: scripts/test-nat.sh   (about 45 s with the debug build `make test` makes)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "test-nat.sh needs root (network namespaces, nftables, miniupnpd)" >&2
    exit 1
fi
scripts/ensure-system-packages.sh miniupnpd-nftables nftables iproute2 python3

cargo build -p tumble
TUMBLE=$(realpath "${CARGO_TARGET_DIR:-target}/debug/tumble")
OUT=$(realpath -m "${CARGO_TARGET_DIR:-target}/nat")
rm -rf "$OUT" && mkdir -p "$OUT"

PORT=40000
LAN_NET=192.168.77
WAN_NET=203.0.114
ID=$$
R=tnat$ID-r H=tnat$ID-h O=tnat$ID-o
MINIUPNPD_PID=

cleanup() {
    [ -n "$MINIUPNPD_PID" ] && kill "$MINIUPNPD_PID" 2>/dev/null && wait "$MINIUPNPD_PID" 2>/dev/null
    for ns in "$H" "$O" "$R"; do
        # Whatever still runs in a namespace (a host or guest left behind by a failed check) ends with it.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "test-nat: FAIL: $*" >&2
    exit 1
}

in_ns() {
    local ns=$1
    shift
    ip netns exec "$ns" "$@"
}

# --- the three namespaces and their links -----------------------------------------------------------------------
for ns in "$R" "$H" "$O"; do
    ip netns add "$ns"
    in_ns "$ns" ip link set lo up
done
ip link add "tn$ID-l" type veth peer name "tn$ID-lh"
ip link add "tn$ID-w" type veth peer name "tn$ID-wo"
ip link set "tn$ID-l" netns "$R" name lan0
ip link set "tn$ID-lh" netns "$H" name eth0
ip link set "tn$ID-w" netns "$R" name wan0
ip link set "tn$ID-wo" netns "$O" name eth0
in_ns "$R" ip addr add "$LAN_NET.1/24" dev lan0
in_ns "$R" ip addr add "$WAN_NET.1/24" dev wan0
in_ns "$H" ip addr add "$LAN_NET.2/24" dev eth0
in_ns "$O" ip addr add "$WAN_NET.2/24" dev eth0
for link in "$R lan0" "$R wan0" "$H eth0" "$O eth0"; do
    # shellcheck disable=SC2086
    in_ns ${link% *} ip link set ${link#* } up
done
in_ns "$H" ip route add default via "$LAN_NET.1"
# SSDP's multicast search leaves by the default route; the outside needs no route beyond its own link.
in_ns "$R" sysctl -qw net.ipv4.ip_forward=1

# --- the router's firewall: forward home → internet, masquerade, and miniupnpd's chains ---------------------------
in_ns "$R" nft -f - <<EOF
table inet filter {
    chain forward {
        type filter hook forward priority 0; policy drop;
        ct state established,related accept
        iifname "lan0" oifname "wan0" accept
        jump miniupnpd
    }
    chain miniupnpd {
    }
    chain prerouting {
        type nat hook prerouting priority -100; policy accept;
        jump prerouting_miniupnpd
    }
    chain postrouting {
        type nat hook postrouting priority 100; policy accept;
        jump postrouting_miniupnpd
        oifname "wan0" masquerade
    }
    chain prerouting_miniupnpd {
    }
    chain postrouting_miniupnpd {
    }
}
EOF

# miniupnpd on the router's LAN side, in the foreground; $1: "allow" or "deny", $2: "all" or "upnp-only".
start_miniupnpd() {
    local rule=$1 protocols=$2 conf="$OUT/miniupnpd-$1-$2.conf"
    cat >"$conf" <<EOF
ext_ifname=wan0
listening_ip=lan0
http_port=0
enable_upnp=yes
enable_natpmp=$([ "$protocols" = all ] && echo yes || echo no)
secure_mode=yes
system_uptime=yes
min_lifetime=2
max_lifetime=86400
uuid=3a1f1c9e-7b2d-4c1e-9d5a-0e6f7a8b9c0d
upnp_table_name=filter
upnp_nat_table_name=filter
upnp_forward_chain=miniupnpd
upnp_nat_chain=prerouting_miniupnpd
upnp_nat_postrouting_chain=postrouting_miniupnpd
EOF
    if [ "$rule" = allow ]; then
        echo "allow 1024-65535 $LAN_NET.0/24 1024-65535" >>"$conf"
    fi
    echo "deny 0-65535 0.0.0.0/0 0-65535" >>"$conf"
    # `ip netns exec` execs the program: $! is miniupnpd itself.
    ip netns exec "$R" miniupnpd -d -f "$conf" -P "$OUT/miniupnpd-$rule-$protocols.pid" \
        >"$OUT/miniupnpd-$rule-$protocols.log" 2>&1 &
    MINIUPNPD_PID=$!
    # Up once its SSDP socket listens.
    for _ in $(seq 50); do
        in_ns "$R" ss -uln 2>/dev/null | grep -q ':1900 ' && return 0
        kill -0 "$MINIUPNPD_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$OUT/miniupnpd-$rule-$protocols.log" >&2
    fail "miniupnpd did not start"
}

stop_miniupnpd() {
    kill "$MINIUPNPD_PID" 2>/dev/null || true
    wait "$MINIUPNPD_PID" 2>/dev/null || true
    MINIUPNPD_PID=
}

# Starts the host at home ($1: case name, then extra flags) and sets CODE from its log.
HOST_PID=
start_host() {
    local name=$1
    shift
    # The log exists before the host starts: the loop below may read it before the background shell opens it.
    : >"$OUT/$name-host.log"
    ip netns exec "$H" env RUST_LOG=info "$TUMBLE" host --headless --seconds 9 --port "$PORT" "$@" \
        >"$OUT/$name-host.json" 2>"$OUT/$name-host.log" &
    HOST_PID=$!
    CODE=
    for _ in $(seq 100); do
        CODE=$(sed -n 's/.*players join with `tumble join \([A-Z0-9-]*\)`.*/\1/p' "$OUT/$name-host.log" | head -1)
        [ -n "$CODE" ] && return 0
        kill -0 "$HOST_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$OUT/$name-host.log" >&2
    fail "$name: the host printed no join code"
}

# The guest outside joins with CODE; returns its exit status.
run_guest() {
    local name=$1
    in_ns "$O" env RUST_LOG=info "$TUMBLE" join "$CODE" --headless --seconds 3 \
        >"$OUT/$name-guest.json" 2>"$OUT/$name-guest.log"
}

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

joined_case() {
    local name=$1 method=$2
    shift 2
    start_host "$name" "$@"
    run_guest "$name" || { cat "$OUT/$name-guest.log" >&2; fail "$name: the guest could not join"; }
    wait "$HOST_PID" || { cat "$OUT/$name-host.log" >&2; fail "$name: the host failed"; }
    [ "$(json "$OUT/$name-host.json" "d['port_mapping']['method']")" = "$method" ] ||
        fail "$name: mapped by $(json "$OUT/$name-host.json" "d['port_mapping']") (expected $method)"
    [ "$(json "$OUT/$name-host.json" "d['port_mapping']['external']")" = "$WAN_NET.1:$PORT" ] ||
        fail "$name: the mapping's external address is not the router's WAN address"
    [ "$(json "$OUT/$name-guest.json" "d['seats'][0]['player']")" = 2 ] || fail "$name: the guest is not player 2"
    [ "$(json "$OUT/$name-guest.json" "d['seats'][0]['connections']")" = 1 ] || fail "$name: the guest has no connection"
    grep -q "the router maps $WAN_NET.1:$PORT to this machine" "$OUT/$name-host.log" ||
        fail "$name: the host's log does not say what the router mapped"
    grep -q "port mapping removed" "$OUT/$name-host.log" || fail "$name: the host did not remove its mapping"
    if in_ns "$R" nft list chain inet filter prerouting_miniupnpd | grep -q "dport $PORT"; then
        fail "$name: the router still forwards port $PORT after the host left"
    fi
    echo "test-nat: $name: mapped by $method to $WAN_NET.1:$PORT, the guest joined from outside as player 2" >&2
}

refused_case() {
    local name=$1
    shift
    start_host "$name" "$@"
    if run_guest "$name"; then
        fail "$name: the guest joined a host its router does not forward to"
    fi
    wait "$HOST_PID" || { cat "$OUT/$name-host.log" >&2; fail "$name: the host failed"; }
    grep -q "a private address" "$OUT/$name-guest.log" ||
        { cat "$OUT/$name-guest.log" >&2; fail "$name: the guest's error does not name the private address"; }
    grep -q "the host must forward UDP port $PORT" "$OUT/$name-guest.log" ||
        fail "$name: the guest's error does not say what the host must forward"
    [ "$(json "$OUT/$name-host.json" "d['port_mapping']")" = None ] || fail "$name: the host reports a mapping"
    echo "test-nat: $name: the guest could not join, and was told: $(sed -n 's/.*\(no answer from .*\)/\1/p' \
        "$OUT/$name-guest.log" | head -1)" >&2
}

started=$(date +%s)

start_miniupnpd allow all
joined_case pcp pcp --port-mapping-lifetime 4
grep -q "port mapping renewed" "$OUT/pcp-host.log" || fail "pcp: the mapping was never renewed (lifetime 4 s)"
# 4. The negative control, on the same router: without the mapping, nobody outside reaches the host.
refused_case no-port-mapping --no-port-mapping
stop_miniupnpd

start_miniupnpd allow upnp-only
joined_case upnp upnp-igd
stop_miniupnpd

# UPnP only: miniupnpd 2.3.1 answers a PCP request its rules deny by searching every external port, for minutes.
start_miniupnpd deny upnp-only
refused_case denied
grep -q "UPnP: refused: not authorized (code 606)" "$OUT/denied-host.log" || fail "denied: the host does not say UPnP refused"
grep -q "no port mapping (PCP: .*NAT-PMP: .*UPnP: .*): forward UDP port $PORT on your router to $LAN_NET.2:$PORT" \
    "$OUT/denied-host.log" || { cat "$OUT/denied-host.log" >&2; fail "denied: the host did not say what to forward"; }
echo "test-nat: denied: the host said: $(grep -o 'no port mapping (.*' "$OUT/denied-host.log" | head -1)" >&2
stop_miniupnpd

echo "test-nat: passed in $(($(date +%s) - started)) s (logs and JSON in $OUT)" >&2
