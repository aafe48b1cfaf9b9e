//! Crate-wide tests: records written by Python smdebug 1.0.34 byte for byte, and properties
//! of the codec and the framing over arbitrary input.
use crate::proto::{HistogramProto, TensorProto};
use crate::*;
use half::f16;
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;

/// Whole `events/` files written by Python smdebug 1.0.34 (`FileWriter.write_tensor` with
/// `timestamp=1600000000.0`, numpy 1.26), one tensor each: (tag, step, mode, mode step, hex).
const PYTHON_RECORDS: &[(&str, i64, u8, i64, &str)] = &[
    // float32 [1, 2], step 3, TRAIN, mode step 1: the worked example of docs/src/format.md §6.2.
    ("a", 3, 1, 1, "4800000000000000fe92489d090000000084d7d74110032a3b0a390a0161421708011209120708021203615f3222080000803f000000404a1b0a0e0a096d6f64655f737465701201310a090a046d6f6465120131b3c02d06"),
    // 0-d int64 7, step 0 (omitted), GLOBAL: the 77-byte example.
    ("x", 0, 4, 0, "3d000000000000006049f1ec090000000084d7d7412a320a300a0178420e08091200220807000000000000004a1b0a0e0a096d6f64655f737465701201300a090a046d6f6465120134b3c02d06"),
    // strings ["foo", "barz", ""]: dtype 0, string_val, empty string kept.
    ("s", 5, 2, 2, "490000000000000036250ea3090000000084d7d74110052a3c0a3a0a017342181209120708031203735f334203666f6f42046261727a42004a1b0a0e0a096d6f64655f737465701201320a090a046d6f6465120132b3c02d06"),
    // float16 [[1.5, -2]].
    ("h", 5, 3, 2, "4d000000000000003d63d4a6090000000084d7d74110052a400a3e0a0168421c08131212120708011203685f31120708021203685f322204003e00c04a1b0a0e0a096d6f64655f737465701201320a090a046d6f6465120133b3c02d06"),
    // float32 of shape (0, 3): the size-0 dim has only its name, no content.
    ("e", 5, 3, 2, "4500000000000000ebe668b0090000000084d7d74110052a380a360a016542140801121012051203655f30120708031203655f334a1b0a0e0a096d6f64655f737465701201320a090a046d6f6465120133b3c02d06"),
    // complex128 [1+2j].
    ("c", 7, 1, 7, "5000000000000000940f9b82090000000084d7d74110072a430a410a0163421f08121209120708011203635f312210000000000000f03f00000000000000404a1b0a0e0a096d6f64655f737465701201370a090a046d6f6465120131b3c02d06"),
    // bool [True, False, True].
    ("b", 7, 1, 7, "4300000000000000b18525a0090000000084d7d74110072a360a340a01624212080a1209120708031203625f3322030100014a1b0a0e0a096d6f64655f737465701201370a090a046d6f6465120131b3c02d06"),
];

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn python_values() -> Vec<TensorValue> {
    vec![
        TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn()),
        TensorValue::from(ndarray::arr0(7i64).into_dyn()),
        TensorValue::from(
            ndarray::arr1(&["foo".to_owned(), "barz".to_owned(), String::new()]).into_dyn(),
        ),
        TensorValue::from(ndarray::arr2(&[[f16::from_f32(1.5), f16::from_f32(-2.0)]]).into_dyn()),
        TensorValue::from(ArrayD::<f32>::zeros(IxDyn(&[0, 3]))),
        TensorValue::from(ndarray::arr1(&[Complex64::new(1.0, 2.0)]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[true, false, true]).into_dyn()),
    ]
}

#[test]
fn writer_reproduces_python_records_byte_for_byte() {
    for ((tag, step, mode, mode_step, hex), value) in PYTHON_RECORDS.iter().zip(python_values()) {
        let payload =
            encode_tensor_event(tag, &value, *step, *mode, *mode_step, 1_600_000_000.0).unwrap();
        let record = encode_record(&payload, Footer::Magic);
        assert_eq!(record, unhex(hex), "record of {tag:?}");
    }
}

#[test]
fn worked_example_sizes_match_the_spec() {
    assert_eq!(unhex(PYTHON_RECORDS[0].4).len(), 88);
    assert_eq!(unhex(PYTHON_RECORDS[1].4).len(), 77);
}

#[test]
fn reader_decodes_python_records() {
    for ((tag, step, mode, mode_step, hex), value) in PYTHON_RECORDS.iter().zip(python_values()) {
        let bytes = unhex(hex);
        let rec = decode_record_at(&bytes, 0, bytes.len() as u64).unwrap();
        assert_eq!(rec.footer, Footer::Magic);
        let ev = decode_tensor_event(rec.payload).unwrap();
        assert_eq!(
            (
                ev.tag.as_str(),
                ev.step,
                ev.mode,
                ev.mode_step,
                ev.wall_time
            ),
            (*tag, *step, *mode, *mode_step, 1_600_000_000.0)
        );
        assert_eq!(ev.tensor, value, "{tag}");
    }
}

#[test]
fn missing_metadata_means_global_and_the_global_step() {
    let mut ev = tensor_event(
        "t",
        &TensorValue::from(ndarray::arr1(&[1i32]).into_dyn()),
        9,
        mode_number::TRAIN,
        2,
        0.5,
    )
    .unwrap();
    if let Some(proto::event::What::Summary(s)) = &mut ev.what {
        s.value[0].metadata = None;
    }
    let back = tensor_event_from(&ev).unwrap();
    assert_eq!((back.mode, back.mode_step), (mode_number::GLOBAL, 9));
}

#[test]
fn invalid_mode_is_rejected_both_ways() {
    let t = TensorValue::from(ndarray::arr1(&[1i32]).into_dyn());
    assert!(matches!(
        tensor_event("t", &t, 0, 5, 0, 0.0),
        Err(RecordError::UnexpectedEvent { .. })
    ));
    let mut ev = tensor_event("t", &t, 0, 1, 0, 0.0).unwrap();
    if let Some(proto::event::What::Summary(s)) = &mut ev.what {
        s.value[0].metadata.as_mut().unwrap().plugin_data[1].content = b"0".to_vec();
    }
    assert!(matches!(
        tensor_event_from(&ev),
        Err(RecordError::UnexpectedEvent { .. })
    ));
}

#[test]
fn non_tensor_events_are_reported() {
    let payload = scalar_event("loss", 0.5, 1, 2.0).encode_to_vec();
    assert!(matches!(
        decode_tensor_event(&payload),
        Err(RecordError::UnexpectedEvent { .. })
    ));
    let payload = file_version_event(1.0).encode_to_vec();
    assert!(matches!(
        decode_tensor_event(&payload),
        Err(RecordError::UnexpectedEvent { .. })
    ));
    assert!(matches!(
        decode_tensor_event(&[0xFF, 0xFF]),
        Err(RecordError::Protobuf { .. })
    ));
}

#[test]
fn tensorboard_events_have_the_expected_wire_form() {
    // Summary.Value{tag "s", simple_value 1.0}: field 1 then field 2 (fixed32).
    let ev = scalar_event("s", 1.0, 0, 0.0).encode_to_vec();
    assert_eq!(ev, unhex("2a0a0a080a0173150000803f"));
    let ev = file_version_event(0.0).encode_to_vec();
    assert_eq!(ev, [&[0x1A, 13][..], b"brain.Event:2"].concat());
    let h = HistogramProto {
        min: 1.0,
        max: 2.0,
        num: 2.0,
        sum: 3.0,
        sum_squares: 5.0,
        bucket_limit: vec![1.0, 2.0],
        bucket: vec![1.0, 1.0],
    };
    let ev = decode_event(&histogram_event("h", h.clone(), 4, 1.0).encode_to_vec()).unwrap();
    match ev.what {
        Some(proto::event::What::Summary(s)) => match &s.value[0].value {
            Some(proto::summary::value::Value::Histo(back)) => assert_eq!(back, &h),
            other => panic!("not a histogram: {other:?}"),
        },
        other => panic!("not a summary: {other:?}"),
    }
}

#[test]
fn string_tensors_must_be_one_dimensional_to_encode() {
    let t = TensorValue::Str(ArrayD::from_elem(IxDyn(&[]), "x".to_owned()));
    assert!(matches!(
        t.to_proto("t"),
        Err(RecordError::UnencodableTensor { .. })
    ));
}

#[test]
fn python_fallback_fields_are_decoded() {
    let shape = |dims: &[i64]| {
        Some(proto::TensorShapeProto {
            dim: dims
                .iter()
                .map(|&size| proto::tensor_shape_proto::Dim {
                    size,
                    name: String::new(),
                })
                .collect(),
            unknown_rank: false,
        })
    };
    let p = TensorProto {
        dtype: proto::DataType::DtFloat as i32,
        tensor_shape: shape(&[2]),
        float_val: vec![1.0, 2.0],
        ..Default::default()
    };
    assert_eq!(
        TensorValue::from_proto(&p).unwrap(),
        TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn())
    );
    // Python returns a 1-D array of the listed values whatever the shape says.
    let p = TensorProto {
        dtype: proto::DataType::DtInt64 as i32,
        tensor_shape: shape(&[]),
        int64_val: vec![5],
        ..Default::default()
    };
    assert_eq!(
        TensorValue::from_proto(&p).unwrap(),
        TensorValue::from(ndarray::arr0(5i64).into_dyn())
    );
    let p = TensorProto {
        dtype: proto::DataType::DtInt32 as i32,
        tensor_shape: shape(&[3]),
        int_val: vec![4, 5],
        ..Default::default()
    };
    assert_eq!(
        TensorValue::from_proto(&p).unwrap(),
        TensorValue::from(ndarray::arr1(&[4i32, 5]).into_dyn())
    );
    let p = TensorProto {
        dtype: proto::DataType::DtBool as i32,
        tensor_shape: shape(&[1]),
        bool_val: vec![true],
        ..Default::default()
    };
    assert_eq!(
        TensorValue::from_proto(&p).unwrap(),
        TensorValue::from(ndarray::arr1(&[true]).into_dyn())
    );
    // No content and no values for a non-empty shape: an error, not a panic.
    let p = TensorProto {
        dtype: proto::DataType::DtDouble as i32,
        tensor_shape: shape(&[1 << 40]),
        ..Default::default()
    };
    assert!(matches!(
        TensorValue::from_proto(&p),
        Err(RecordError::MalformedTensor { .. })
    ));
}

#[test]
fn malformed_tensors_are_typed_errors() {
    let base = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn())
        .to_proto("t")
        .unwrap();
    let mut p = base.clone();
    p.tensor_content.truncate(p.tensor_content.len() - 1);
    assert!(matches!(
        TensorValue::from_proto(&p),
        Err(RecordError::MalformedTensor { .. })
    ));
    let mut p = base.clone();
    p.tensor_shape.as_mut().unwrap().dim[0].size = -1;
    assert!(matches!(
        TensorValue::from_proto(&p),
        Err(RecordError::MalformedTensor { .. })
    ));
    let mut p = base.clone();
    p.tensor_shape.as_mut().unwrap().dim = (0..4)
        .map(|_| proto::tensor_shape_proto::Dim {
            size: i64::MAX,
            name: String::new(),
        })
        .collect();
    assert!(matches!(
        TensorValue::from_proto(&p),
        Err(RecordError::MalformedTensor { .. })
    ));
    for dtype in [14, 20, 21, 101, 999, -3] {
        let mut p = base.clone();
        p.dtype = dtype;
        assert!(
            matches!(TensorValue::from_proto(&p), Err(RecordError::UnsupportedDType { dtype: d, .. }) if d == dtype),
            "dtype {dtype}"
        );
    }
    let mut p = TensorValue::Str(ndarray::arr1(&["ok".to_owned()]).into_dyn())
        .to_proto("s")
        .unwrap();
    p.string_val[0] = vec![0xFF];
    assert!(matches!(
        TensorValue::from_proto(&p),
        Err(RecordError::MalformedTensor { .. })
    ));
}

#[test]
fn empty_string_tensor_decodes_to_an_empty_array() {
    let t = TensorValue::Str(ArrayD::from_shape_vec(IxDyn(&[0]), vec![]).unwrap());
    let p = t.to_proto("s").unwrap();
    assert_eq!(p.dtype, 0);
    assert!(p.string_val.is_empty());
    assert_eq!(TensorValue::from_proto(&p).unwrap(), t);
}

#[test]
fn int8_decodes_as_signed() {
    let t = TensorValue::from(ndarray::arr1(&[-1i8, 127, -128]).into_dyn());
    let p = t.to_proto("q").unwrap();
    assert_eq!(p.tensor_content[..], [0xFF, 0x7F, 0x80]);
    assert_eq!(TensorValue::from_proto(&p).unwrap(), t);
}

#[test]
fn raw_bytes_follow_c_order_even_for_fortran_layout() {
    let c = ndarray::arr2(&[[1u16, 2, 3], [4, 5, 6]]);
    let f = c.t().to_owned().reversed_axes(); // same values, Fortran layout
    assert_eq!(c, f);
    let a = TensorValue::from(c.into_dyn());
    let b = TensorValue::from(f.into_dyn());
    assert_eq!(a.to_le_bytes(), b.to_le_bytes());
    assert_eq!(a.to_le_bytes(), [1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0]);
    let s = TensorValue::Str(ndarray::arr1(&["ab".to_owned(), String::new()]).into_dyn());
    assert_eq!(s.to_le_bytes(), [2, 0, 0, 0, b'a', b'b', 0, 0, 0, 0]);
}

#[test]
fn dtype_names_roundtrip() {
    for d in DType::ALL {
        assert_eq!(DType::from_name(d.name()), Some(d));
        if d != DType::Str {
            assert_eq!(DType::from_proto(d.to_proto() as i32), Some(d));
        }
    }
    assert_eq!(DType::Str.to_proto() as i32, 0);
}

#[test]
fn truncated_input_at_every_cut_point_is_an_error() {
    let mut file = Vec::new();
    for (_, _, _, _, hex) in PYTHON_RECORDS {
        file.extend(unhex(hex));
    }
    let boundaries: Vec<usize> = {
        let mut b = vec![0];
        for (_, _, _, _, hex) in PYTHON_RECORDS {
            b.push(b.last().unwrap() + hex.len() / 2);
        }
        b
    };
    for cut in 0..=file.len() {
        let results: Vec<Result<Record>> = RecordReader::new(&file[..cut]).collect();
        let complete = boundaries.iter().filter(|&&b| b > 0 && b <= cut).count();
        if boundaries.contains(&cut) {
            assert_eq!(results.len(), complete, "cut {cut}");
            assert!(results.iter().all(|r| r.is_ok()), "cut {cut}");
        } else {
            assert_eq!(results.len(), complete + 1, "cut {cut}");
            let err = results.last().unwrap().as_ref().unwrap_err();
            assert!(
                matches!(err, RecordError::Truncated { .. }),
                "cut {cut}: {err}"
            );
            assert_eq!(err.location().offset, Some(boundaries[complete] as u64));
        }
    }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, 0..4)
}

fn array<T: std::fmt::Debug + Clone>(
    elem: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = ArrayD<T>> {
    shape_strategy().prop_flat_map(move |shape| {
        let n: usize = shape.iter().product();
        prop::collection::vec(elem.clone(), n)
            .prop_map(move |v| ArrayD::from_shape_vec(IxDyn(&shape), v).unwrap())
    })
}

fn any_tensor() -> impl Strategy<Value = TensorValue> {
    prop_oneof![
        array(any::<u16>().prop_map(f16::from_bits)).prop_map(TensorValue::from),
        array(any::<f32>()).prop_map(TensorValue::from),
        array(any::<f64>()).prop_map(TensorValue::from),
        array(any::<i8>()).prop_map(TensorValue::from),
        array(any::<i16>()).prop_map(TensorValue::from),
        array(any::<i32>()).prop_map(TensorValue::from),
        array(any::<i64>()).prop_map(TensorValue::from),
        array(any::<u8>()).prop_map(TensorValue::from),
        array(any::<u16>()).prop_map(TensorValue::from),
        array(any::<u32>()).prop_map(TensorValue::from),
        array(any::<u64>()).prop_map(TensorValue::from),
        array(any::<bool>()).prop_map(TensorValue::from),
        array((any::<f32>(), any::<f32>()).prop_map(|(r, i)| Complex32::new(r, i)))
            .prop_map(TensorValue::from),
        array((any::<f64>(), any::<f64>()).prop_map(|(r, i)| Complex64::new(r, i)))
            .prop_map(TensorValue::from),
        prop::collection::vec(".{0,6}", 0..5)
            .prop_map(|v| TensorValue::Str(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v).unwrap())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Values compared by their bytes, so NaN payloads count too.
    #[test]
    fn tensor_event_roundtrips(
        t in any_tensor(),
        tag in "[a-z/:._0-9]{0,12}",
        step in 0i64..1_000_000,
        mode in 1u8..=4,
        mode_step in 0i64..1_000_000,
        wall_time in 0.0f64..2e9,
    ) {
        let payload = encode_tensor_event(&tag, &t, step, mode, mode_step, wall_time).unwrap();
        let ev = decode_tensor_event(&payload).unwrap();
        prop_assert_eq!(&ev.tag, &tag);
        prop_assert_eq!((ev.step, ev.mode, ev.mode_step, ev.wall_time), (step, mode, mode_step, wall_time));
        prop_assert_eq!(ev.tensor.dtype(), t.dtype());
        prop_assert_eq!(ev.tensor.shape(), t.shape());
        prop_assert_eq!(ev.tensor.to_le_bytes(), t.to_le_bytes());
    }

    /// The in-place encoder writes exactly the bytes of the plain one.
    #[test]
    fn append_tensor_event_equals_plain_encoding(
        t in any_tensor(),
        tag in "[a-z/:._0-9]{0,12}",
        step in 0i64..1_000_000,
        mode in 1u8..=4,
        mode_step in 0i64..1_000_000,
        wall_time in 0.0f64..2e9,
        prefix in prop::collection::vec(any::<u8>(), 0..8),
        crc in any::<bool>(),
    ) {
        let footer = if crc { Footer::Crc } else { Footer::Magic };
        let payload = encode_tensor_event(&tag, &t, step, mode, mode_step, wall_time).unwrap();
        let mut plain = prefix.clone();
        let a = append_record(&mut plain, &payload, footer);
        let mut direct = prefix;
        let b = append_tensor_event(&mut direct, &tag, &t, step, mode, mode_step, wall_time, footer).unwrap();
        prop_assert_eq!(a, b);
        prop_assert_eq!(plain, direct);
    }

    /// A numeric tensor given as its little-endian bytes is encoded exactly as the value.
    #[test]
    fn append_tensor_event_le_equals_the_value_encoding(
        t in any_tensor(),
        tag in "[a-z/:._0-9]{0,12}",
        step in 0i64..1_000_000,
        mode in 1u8..=4,
        mode_step in 0i64..1_000_000,
        wall_time in 0.0f64..2e9,
    ) {
        let mut from_value = Vec::new();
        let a = append_tensor_event(&mut from_value, &tag, &t, step, mode, mode_step, wall_time, Footer::Magic).unwrap();
        let mut from_bytes = Vec::new();
        let b = append_tensor_event_le(&mut from_bytes, &tag, t.dtype(), t.shape(), &t.to_le_bytes(), step, mode, mode_step, wall_time, Footer::Magic);
        if t.dtype() == DType::Str {
            prop_assert!(b.is_err());
        } else {
            prop_assert_eq!(a, b.unwrap());
            prop_assert_eq!(from_value, from_bytes);
        }
    }

    #[test]
    fn framing_roundtrips(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..6),
        crc in any::<bool>(),
    ) {
        let footer = if crc { Footer::Crc } else { Footer::Magic };
        let mut w = RecordWriter::new(Vec::new(), footer);
        let infos: Vec<RecordInfo> = payloads.iter().map(|p| w.write_record(p).unwrap()).collect();
        let file = w.into_inner();
        let read: Vec<Record> = RecordReader::new(&file[..]).collect::<Result<_>>().unwrap();
        prop_assert_eq!(read.len(), payloads.len());
        for ((rec, info), p) in read.iter().zip(&infos).zip(&payloads) {
            prop_assert_eq!(&rec.payload, p);
            prop_assert_eq!(rec.footer, footer);
            prop_assert_eq!(rec.offset, info.offset);
            let r = decode_record_at(&file, info.offset, info.len).unwrap();
            prop_assert_eq!(r.payload, &p[..]);
            r.verify_payload_crc32c(info.payload_crc32c).unwrap();
        }
    }

    /// With a real CRC footer every single corrupted byte is caught (CRC32C detects all
    /// burst errors up to 32 bits).
    #[test]
    fn every_single_byte_flip_is_detected(
        payload in prop::collection::vec(any::<u8>(), 0..48),
        flip in 1u8..=255,
    ) {
        let rec = encode_record(&payload, Footer::Crc);
        for i in 0..rec.len() {
            let mut bad = rec.clone();
            bad[i] ^= flip;
            prop_assert!(decode_exact_record(&bad, 0).is_err(), "flip at {}", i);
            let streamed: Vec<Result<Record>> = RecordReader::new(&bad[..]).collect();
            prop_assert!(streamed.iter().any(|r| r.is_err()), "stream flip at {}", i);
        }
    }

    /// Arbitrary bytes never panic any decoder.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = RecordReader::new(&bytes[..]).count();
        let _ = records(&bytes).count();
        let _ = decode_tensor_event(&bytes);
        if let Ok(ev) = decode_event(&bytes) {
            let _ = tensor_event_from(&ev);
        }
    }
}

#[test]
fn append_tensor_event_le_refuses_bytes_that_do_not_fit_the_shape() {
    let mut out = Vec::new();
    let short = append_tensor_event_le(
        &mut out,
        "a",
        DType::Float32,
        &[2, 3],
        &[0; 23],
        1,
        1,
        1,
        0.0,
        Footer::Magic,
    );
    assert!(
        matches!(short, Err(RecordError::UnencodableTensor { .. })),
        "{short:?}"
    );
    let text = append_tensor_event_le(
        &mut out,
        "a",
        DType::Str,
        &[1],
        &[0; 8],
        1,
        1,
        1,
        0.0,
        Footer::Magic,
    );
    assert!(text.is_err());
    let huge = append_tensor_event_le(
        &mut out,
        "a",
        DType::Float64,
        &[usize::MAX, 2],
        &[],
        1,
        1,
        1,
        0.0,
        Footer::Magic,
    );
    assert!(huge.is_err());
    assert!(out.is_empty());
}

/// The finite statistics of `t` decoded, and of its encoded form, as bits (NaN payloads
/// and the sign of zero count).
fn stats_bits(s: Option<smdebug_reduce::FiniteStats>) -> Option<String> {
    s.map(|s| {
        let f = |v: Option<f64>| v.map(f64::to_bits);
        format!(
            "{} {} {} {} {} {:?} {:?} {:?} {:?} {:?} {:?}",
            s.finite,
            s.nan,
            s.pos_inf,
            s.neg_inf,
            s.zeros,
            f(s.min()),
            f(s.max()),
            f(s.mean()),
            f(s.m2()),
            f(s.l1()),
            f(s.l2())
        )
    })
}

/// What the encoded form of the record `payload` says against its plain decode: the same
/// header, value and statistics.
fn check_encoded(payload: &[u8]) -> std::result::Result<(), TestCaseError> {
    let plain = decode_tensor_event(payload);
    let encoded = decode_tensor_event_encoded(prost::bytes::Bytes::copy_from_slice(payload));
    match (plain, encoded) {
        (Ok(p), Ok(e)) => {
            prop_assert_eq!(&e.tag, &p.tag);
            prop_assert_eq!(
                (e.step, e.mode, e.mode_step, e.wall_time.to_bits()),
                (p.step, p.mode, p.mode_step, p.wall_time.to_bits())
            );
            prop_assert_eq!(e.tensor.dtype(), p.tensor.dtype());
            prop_assert_eq!(e.tensor.shape(), p.tensor.shape());
            prop_assert_eq!(e.tensor.len(), p.tensor.len());
            let numeric = !matches!(p.tensor, TensorValue::Str(_));
            if let (Some(content), true) = (e.tensor.content(), numeric) {
                prop_assert_eq!(content, &p.tensor.to_le_bytes()[..]);
            }
            prop_assert_eq!(
                stats_bits(e.tensor.finite_stats()),
                stats_bits(p.tensor.reduce_view().map(|v| v.finite_stats()))
            );
            let decoded = e.clone().decode().unwrap();
            prop_assert_eq!(decoded.tensor.to_le_bytes(), p.tensor.to_le_bytes());
            prop_assert_eq!(decoded.tensor.shape(), p.tensor.shape());
        }
        (Err(p), Err(e)) => prop_assert_eq!(e.to_string(), p.to_string()),
        (p, e) => prop_assert!(false, "plain {:?} but encoded {:?}", p.err(), e.err()),
    }
    Ok(())
}

#[test]
fn encoded_events_of_python_records_and_every_dtype_match_their_decode() {
    for &(.., hex) in PYTHON_RECORDS {
        let file = unhex(hex);
        let rec = records(&file).next().unwrap().unwrap();
        check_encoded(rec.payload).unwrap();
    }
    // Every dtype smdebug writes, odd lengths, NaN, ±Inf, -0 and zeros.
    let floats = [
        1.5,
        f64::NAN,
        -0.0,
        f64::INFINITY,
        0.0,
        -3.25,
        f64::NEG_INFINITY,
    ];
    let values = [
        TensorValue::from(ndarray::arr1(&floats.map(f16::from_f64)).into_dyn()),
        TensorValue::from(ndarray::arr1(&floats.map(|v| v as f32)).into_dyn()),
        TensorValue::from(ndarray::arr1(&floats).into_dyn()),
        TensorValue::from(ndarray::arr1(&[-128i8, 0, 127]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[i16::MIN, 0, 3]).into_dyn()),
        TensorValue::from(ndarray::arr2(&[[i32::MIN, 0, 3]]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[i64::MIN, i64::MAX, 0]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[255u8, 0, 1]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[u16::MAX, 0, 1]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[u32::MAX, 0, 1]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[u64::MAX, 0, 1]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[true, false, true]).into_dyn()),
        TensorValue::from(ndarray::arr1(&[Complex32::new(1.0, f32::NAN)]).into_dyn()),
        TensorValue::from(ndarray::arr0(Complex64::new(1.0, 2.0)).into_dyn()),
        TensorValue::from(ndarray::arr0(2.5f32).into_dyn()),
        TensorValue::from(ArrayD::<f64>::zeros(IxDyn(&[3, 0]))),
    ];
    for v in &values {
        let payload = encode_tensor_event("t", v, 4, 2, 1, 1.5e9).unwrap();
        check_encoded(&payload).unwrap();
        let e = decode_tensor_event_encoded(payload.into()).unwrap();
        let d = e.tensor.decode().unwrap();
        assert_eq!((d.to_le_bytes(), d.shape()), (v.to_le_bytes(), v.shape()));
        // Numeric tensors with elements stay the record's bytes: nothing decoded.
        assert_eq!(e.tensor.content().is_some(), !v.is_empty(), "{}", v.dtype());
    }
    // A bool byte other than 0 or 1 is true for both.
    let mut p = values[11].to_proto("b").unwrap();
    p.tensor_content = vec![0u8, 2, 255].into();
    let e = EncodedTensor::from_proto(p.clone()).unwrap();
    let d = TensorValue::from_proto(&p).unwrap();
    assert_eq!(
        stats_bits(e.finite_stats()),
        stats_bits(d.reduce_view().map(|v| v.finite_stats()))
    );
}

#[test]
fn encoded_tensors_fail_as_their_decode_fails() {
    let base = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0, 3.0]).into_dyn())
        .to_proto("t")
        .unwrap();
    let mut cut = base.clone();
    cut.tensor_content.truncate(cut.tensor_content.len() - 1);
    let mut long = base.clone();
    long.tensor_content = [&base.tensor_content[..], &[0u8; 4][..]].concat().into();
    let mut bad_dtype = base.clone();
    bad_dtype.dtype = 999;
    let mut bad_dim = base.clone();
    bad_dim.tensor_shape.as_mut().unwrap().dim[0].size = -1;
    let no_values = TensorProto {
        dtype: proto::DataType::DtDouble as i32,
        tensor_shape: base.tensor_shape.clone(),
        ..Default::default()
    };
    for p in [cut, long, bad_dtype, bad_dim, no_values] {
        let plain = TensorValue::from_proto(&p).unwrap_err();
        let encoded = EncodedTensor::from_proto(p).unwrap_err();
        assert_eq!(encoded.to_string(), plain.to_string());
    }
    // A typed fallback list is decoded at once, with the shape Python gives it.
    let p = TensorProto {
        dtype: proto::DataType::DtInt32 as i32,
        tensor_shape: base.tensor_shape.clone(),
        int_val: vec![4, 5],
        ..Default::default()
    };
    let e = EncodedTensor::from_proto(p).unwrap();
    assert_eq!((e.shape(), e.content()), (&[2usize][..], None));
    assert_eq!(e.finite_stats().unwrap().max(), Some(5.0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Statistics from a record's bytes equal those of its decoded value bit for bit, for
    /// every dtype, shape and tag length (so the content lies at every alignment).
    #[test]
    fn encoded_statistics_equal_the_decoded_values(
        t in any_tensor(),
        tag in "[a-z]{0,9}",
    ) {
        let payload = encode_tensor_event(&tag, &t, 1, 1, 1, 1.0).unwrap();
        check_encoded(&payload)?;
    }

    /// Arbitrary bytes never panic the encoded decoder, and it fails where the decoder does.
    #[test]
    fn encoded_decoding_of_arbitrary_bytes_agrees(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_encoded(&bytes)?;
    }
}

/// What `TensorValue::from_reduce_view` gives, and the bytes of the pieces it showed.
fn copy_of(t: &TensorValue, reuse: Option<TensorValue>) -> (TensorValue, Vec<u8>, usize) {
    let view = t.reduce_view().unwrap();
    let (mut seen, mut pieces) = (Vec::new(), 0);
    let copy = TensorValue::from_reduce_view(&view, reuse, &mut |p| {
        seen.extend_from_slice(p.le_bytes().unwrap());
        pieces += 1;
    });
    (copy, seen, pieces)
}

/// The elements of a real-valued tensor as little-endian bytes in C order.
fn c_bytes(t: &TensorValue) -> Vec<u8> {
    let mut out = Vec::new();
    let v = t.reduce_view().unwrap();
    if let Some(b) = v.le_bytes() {
        out.extend_from_slice(b);
    } else {
        let owned = TensorValue::from_reduce_view(&v, None, &mut |_| ());
        out.extend_from_slice(owned.reduce_view().unwrap().le_bytes().unwrap());
    }
    out
}

#[test]
fn copies_of_views_cover_every_piece_and_reuse_a_matching_buffer() {
    // Lengths around the piece size (64 KiB) for 1-, 4- and 8-byte elements.
    for len in [0usize, 1, 16383, 16384, 16385, 3 * 16384 + 7, 70_000] {
        let f: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 3.0).collect();
        let t = TensorValue::from(ArrayD::from_shape_vec(IxDyn(&[len]), f).unwrap());
        let d = TensorValue::from(ArrayD::<f64>::from_elem(IxDyn(&[len, 1]), -0.25));
        let b = TensorValue::from(ArrayD::from_elem(IxDyn(&[1, len]), true));
        for t in [t, d, b] {
            let bytes = c_bytes(&t);
            // No buffer, a buffer of the same dtype and length (another shape), and one of
            // another dtype (not used).
            let same = TensorValue::from_reduce_view(&t.reduce_view().unwrap(), None, &mut |_| ());
            let same = match same {
                TensorValue::Float32(a) => TensorValue::from(
                    a.into_shape_with_order(IxDyn(&[len, 1]))
                        .unwrap()
                        .mapv(|_| 9.0f32),
                ),
                other => other,
            };
            let other = TensorValue::from(ArrayD::<i64>::zeros(IxDyn(&[len])));
            for reuse in [None, Some(same), Some(other)] {
                let (copy, seen, pieces) = copy_of(&t, reuse);
                assert_eq!(copy.shape(), t.shape());
                assert_eq!(copy.dtype(), t.dtype());
                assert_eq!(c_bytes(&copy), bytes, "len {len}");
                assert_eq!(seen, bytes, "pieces of len {len}");
                let piece = (64 << 10) / (bytes.len() / len.max(1)).max(1);
                assert_eq!(pieces, len.div_ceil(piece), "len {len}");
            }
        }
    }
}

#[test]
fn a_reused_buffer_is_written_in_place() {
    let t = TensorValue::from(
        ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1f32, 2., 3., 4., 5., 6.]).unwrap(),
    );
    let buf = ndarray::Array1::<f32>::zeros(6).into_dyn();
    let ptr = buf.as_ptr();
    let (copy, _, _) = copy_of(&t, Some(TensorValue::from(buf)));
    let TensorValue::Float32(a) = &copy else {
        panic!("{copy:?}")
    };
    assert_eq!(a.as_ptr(), ptr);
    assert_eq!(copy, t);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A copy of any real-valued tensor equals it bit for bit and shows `inspect` every
    /// element once, in order.
    #[test]
    fn copies_of_views_equal_the_view(t in any_tensor()) {
        if t.reduce_view().is_none() {
            return Ok(());
        }
        let (copy, seen, _) = copy_of(&t, None);
        prop_assert_eq!(copy.shape(), t.shape());
        prop_assert_eq!(c_bytes(&copy), c_bytes(&t));
        prop_assert_eq!(seen, c_bytes(&t));
    }

    /// A transposed (not contiguous) view is copied in its logical order, and `inspect` sees
    /// that copy.
    #[test]
    fn copies_of_transposed_views_keep_the_logical_order(
        (rows, cols, v) in (0usize..9, 0usize..9)
            .prop_flat_map(|(r, c)| (Just(r), Just(c), prop::collection::vec(any::<f32>(), r * c)))
    ) {
        let a = ArrayD::from_shape_vec(IxDyn(&[rows, cols]), v).unwrap();
        let t = a.view().reversed_axes();
        let view = smdebug_reduce::TensorView::F32(t.clone());
        let mut seen: Vec<u32> = Vec::new();
        let copy = TensorValue::from_reduce_view(&view, None, &mut |p| {
            if let smdebug_reduce::TensorView::F32(p) = p {
                seen.extend(p.iter().map(|x| x.to_bits()));
            }
        });
        let want: Vec<u32> = t.iter().map(|x| x.to_bits()).collect();
        let TensorValue::Float32(got) = &copy else { panic!("{copy:?}") };
        prop_assert_eq!(got.shape(), &[cols, rows]);
        prop_assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.clone());
        prop_assert_eq!(seen, want);
    }
}
