//! Every parser on arbitrary bytes: no panic, and whatever parses re-encodes to the same packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tumble_net::packet::{read_packet, read_prefix, write_packet, MAX_PACKET_BYTES};
use tumble_net::serialize::{ReadStream, Stream};

fuzz_target!(|data: &[u8]| {
    let _ = read_prefix(data);
    if let Ok((version, packet)) = read_packet(data) {
        let mut buf = [0u8; MAX_PACKET_BYTES];
        let n = write_packet(&packet, version, &mut buf).expect("a parsed packet must re-encode");
        assert_eq!(read_packet(&buf[..n]).unwrap(), (version, packet));
    }
    let mut r = ReadStream::new(data);
    let (mut i, mut f, mut v, mut vec) = (0i32, 0f32, 0u64, Vec::new());
    let _ = r
        .serialize_int(&mut i, -1000, 1000)
        .and_then(|_| r.serialize_float_range(&mut f, -50.0, 50.0, 0.001))
        .and_then(|_| r.serialize_varint(&mut v))
        .and_then(|_| r.serialize_byte_vec(&mut vec, 1000))
        .and_then(|_| r.finish());
    assert!(vec.len() <= data.len());
});
