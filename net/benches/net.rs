//! Criterion benches: bit packing throughput and packet header encode/decode. Bounded: about 3 s per bench.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use tumble_net::packet::{read_packet, write_packet, ConnectedHeader, Packet, MAX_PACKET_BYTES, PROTOCOL_VERSION};
use tumble_net::serialize::{ReadStream, Stream, WriteStream};

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

fn header(c: &mut Criterion) {
    let header = ConnectedHeader {
        session_key: 0x1234_5678,
        sequence: 4321,
        ack: 1234,
        ack_bits: 0xf0f0_f0f0,
        echo_sequence: 1230,
        echo_delay_100us: 55,
    };
    let mut buf = [0u8; MAX_PACKET_BYTES];
    let mut g = c.benchmark_group("header");
    g.bench_function("encode", |b| {
        b.iter(|| {
            write_packet(
                &Packet::KeepAlive {
                    header: black_box(header),
                },
                PROTOCOL_VERSION,
                &mut buf,
            )
            .unwrap()
        })
    });
    let n = write_packet(&Packet::KeepAlive { header }, PROTOCOL_VERSION, &mut buf).unwrap();
    let encoded = buf[..n].to_vec();
    g.bench_function("decode", |b| b.iter(|| read_packet(black_box(&encoded)).unwrap()));
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! { name = benches; config = config(); targets = bitpack, header }
criterion_main!(benches);
