//! Framing, CRC and tensor decoding throughput, with the raw CRC32C and a memcpy of the same
//! size as baselines: framing should cost little more than its CRC.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use smdebug_record::{
    append_record, decode_record_at, decode_tensor_event, encode_tensor_event, mode_number, Footer,
    RecordReader, RecordWriter, TensorValue,
};
use std::hint::black_box;

const MIB: usize = 1 << 20;

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + 7) as u8).collect()
}

fn framing(c: &mut Criterion) {
    let mut group = c.benchmark_group("record");
    for (name, len) in [("1MiB", MIB), ("4B", 4)] {
        let data = payload(len);
        group.throughput(Throughput::Bytes(len as u64));
        for (footer_name, footer) in [("magic", Footer::Magic), ("crc", Footer::Crc)] {
            let mut out = Vec::with_capacity(len + 16);
            group.bench_with_input(
                BenchmarkId::new(format!("write_{footer_name}"), name),
                &data,
                |b, data| {
                    b.iter(|| {
                        out.clear();
                        black_box(append_record(&mut out, black_box(data), footer))
                    })
                },
            );
        }
        // Framing alone: the writer computes both CRCs and hands header, payload and footer
        // to its sink without copying the payload; the sink (a file, a socket) does the rest.
        let mut sink = RecordWriter::new(std::io::sink(), Footer::Crc);
        group.bench_with_input(BenchmarkId::new("frame_to_sink", name), &data, |b, data| {
            b.iter(|| black_box(sink.write_record(black_box(data)).unwrap()))
        });
        let mut file = Vec::new();
        let info = append_record(&mut file, &data, Footer::Crc);
        group.bench_with_input(BenchmarkId::new("read_verify", name), &file, |b, file| {
            b.iter(|| {
                let mut reader = RecordReader::new(black_box(&file[..]));
                black_box(reader.read_record().unwrap().unwrap())
            })
        });
        group.bench_with_input(BenchmarkId::new("decode_at", name), &file, |b, file| {
            b.iter(|| black_box(decode_record_at(black_box(file), info.offset, info.len).unwrap()))
        });
    }
    let data = payload(MIB);
    group.throughput(Throughput::Bytes(MIB as u64));
    group.bench_with_input(BenchmarkId::new("crc32c", "1MiB"), &data, |b, data| {
        b.iter(|| black_box(smdebug_record::masked_crc32c(black_box(data))))
    });
    // The crc32c crate, which masked_crc32c used before crc-fast.
    group.bench_with_input(
        BenchmarkId::new("crc32c_crate", "1MiB"),
        &data,
        |b, data| b.iter(|| black_box(crc32c::crc32c(black_box(data)))),
    );
    let mut dst = vec![0u8; MIB];
    group.bench_with_input(BenchmarkId::new("memcpy", "1MiB"), &data, |b, data| {
        b.iter(|| {
            dst.copy_from_slice(black_box(data));
            black_box(&dst);
        })
    });
    group.finish();
}

fn tensor_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("record");
    let values: Vec<f32> = (0..MIB / 4).map(|i| i as f32 * 0.5).collect();
    let tensor = TensorValue::from(ndarray::Array1::from(values).into_dyn());
    let payload =
        encode_tensor_event("fc1.weight", &tensor, 10, mode_number::TRAIN, 10, 1.7e9).unwrap();
    group.throughput(Throughput::Bytes(MIB as u64));
    group.bench_with_input(
        BenchmarkId::new("decode_event_f32", "1MiB"),
        &payload,
        |b, payload| b.iter(|| black_box(decode_tensor_event(black_box(payload)).unwrap())),
    );
    group.bench_with_input(
        BenchmarkId::new("encode_event_f32", "1MiB"),
        &tensor,
        |b, tensor| {
            b.iter(|| {
                black_box(
                    encode_tensor_event("fc1.weight", tensor, 10, mode_number::TRAIN, 10, 1.7e9)
                        .unwrap(),
                )
            })
        },
    );
    group.finish();
}

criterion_group!(benches, framing, tensor_decode);
criterion_main!(benches);
