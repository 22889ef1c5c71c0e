//! Criterion benches: bit packing throughput, and what encryption costs per packet (seal, open, and the whole
//! endpoint path). Bounded: about 3 s per bench.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;
use tumble_net::crypto::{handshake_in_memory, JoinSecret};
use tumble_net::endpoint::{EndpointEvent, PeerId};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::{ACK_FIELDS_BYTES, MAX_PAYLOAD_BYTES};
use tumble_net::serialize::{ReadStream, Stream, WriteStream};
use tumble_net::{Endpoint, EndpointConfig, LinkConfig};

const BUFFER_BYTES: usize = 64 * 1024;

/// Quantized-cube-like fields: the mix of widths the state sync writes.
fn fill<S: Stream>(s: &mut S, values: &mut [u32]) {
    for chunk in values.chunks_mut(4) {
        for (v, bits) in chunk.iter_mut().zip([18u32, 18, 14, 10]) {
            s.serialize_bits(v, bits).unwrap();
        }
    }
}

fn bitpack(c: &mut Criterion) {
    // 60 bits per 4 values; enough values to fill most of the buffer.
    let count = (BUFFER_BYTES * 8 / 60) * 4 - 4;
    let mut values: Vec<u32> = (0..count as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) & 0x3ff)
        .collect();
    let mut buf = vec![0u8; BUFFER_BYTES];
    let bytes = {
        let mut w = WriteStream::new(&mut buf);
        fill(&mut w, &mut values);
        w.finish().unwrap()
    };
    let mut g = c.benchmark_group("bitpack");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("write", |b| {
        b.iter(|| {
            let mut w = WriteStream::new(&mut buf);
            fill(&mut w, black_box(&mut values));
            black_box(w.finish().unwrap())
        })
    });
    let packed = buf.clone();
    g.bench_function("read", |b| {
        b.iter(|| {
            let mut r = ReadStream::new(black_box(&packed[..bytes]));
            fill(&mut r, &mut values);
            black_box(values[0])
        })
    });
    g.finish();
}

/// What sealing costs: one connected packet sealed and opened (ChaCha20-Poly1305) at the sizes the game sends
/// (a keep-alive, a typical table64 state packet, a full packet), and the same packet through a whole endpoint
/// (seal on send, parse, open and ack bookkeeping on receive).
fn sealing(c: &mut Criterion) {
    let (host, guest) = handshake_in_memory(&JoinSecret::OPEN).unwrap();
    let mut g = c.benchmark_group("seal");
    for bytes in [0usize, 150, MAX_PAYLOAD_BYTES] {
        let plain = vec![0x5a; ACK_FIELDS_BYTES + bytes];
        g.throughput(Throughput::Bytes(plain.len() as u64));
        let mut buf = plain.clone();
        let mut counter = 0u64;
        g.bench_function(format!("seal_{bytes}"), |b| {
            b.iter(|| {
                counter += 1;
                buf.copy_from_slice(&plain);
                black_box(guest.send.seal(counter, b"prefix", &mut buf))
            })
        });
        let mut sealed = plain.clone();
        let tag = guest.send.seal(7, b"prefix", &mut sealed);
        g.bench_function(format!("open_{bytes}"), |b| {
            b.iter(|| {
                buf.copy_from_slice(&sealed);
                assert!(host.receive.open(7, b"prefix", &mut buf, black_box(&tag)));
            })
        });
    }
    g.finish();
    // The whole path, host and guest in memory, connected by hand.
    let secret = JoinSecret([1; 10]);
    let config = EndpointConfig {
        join_secret: Some(secret),
        ..EndpointConfig::default()
    };
    let (host_addr, guest_addr): (SocketAddr, SocketAddr) =
        ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:1".parse().unwrap());
    let mut host = Endpoint::host(config.clone(), 0.0).unwrap();
    let mut guest = Endpoint::join(config, host_addr, 0.0).unwrap();
    let mut net = MemoryNetwork::new(LinkConfig::default(), 1);
    let mut t = 0.0;
    while !guest.is_connected() {
        t += 0.01;
        net.pump(t, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    }
    while host.pop_event().is_some() {}
    let payload = [0x33u8; 150];
    let mut g = c.benchmark_group("endpoint");
    g.bench_function("send_receive_150", |b| {
        b.iter(|| {
            t += 1e-4;
            let seq = guest.send(t, PeerId(0), &payload).unwrap();
            let (_, datagram) = guest.pop_outgoing().unwrap();
            host.receive(t, guest_addr, datagram);
            while let Some(e) = host.pop_event() {
                if let EndpointEvent::Received { peer, .. } = e {
                    host.accept(peer, seq);
                }
            }
        })
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! { name = benches; config = config(); targets = bitpack, sealing }
criterion_main!(benches);
