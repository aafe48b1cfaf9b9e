//! Arbitrary bytes decoded as an `Event` and its tensor. Whatever decodes must re-encode and
//! decode to the same value (compared by element bytes, so NaNs count).
use smdebug_record::{decode_event, encode_tensor_event, tensor_event_from, TensorValue};

/// One input of this target: returns normally or fails an assertion (a bug).
pub fn run(data: &[u8]) {
    let Ok(event) = decode_event(data) else {
        return;
    };
    let Ok(ev) = tensor_event_from(&event) else {
        return;
    };
    let bytes = ev.tensor.to_le_bytes();
    assert_eq!(ev.tensor.shape().iter().product::<usize>(), ev.tensor.len());
    // Re-encoding fails only for string tensors that are not 1-D (smdebug cannot write them).
    match encode_tensor_event(
        &ev.tag,
        &ev.tensor,
        ev.step,
        ev.mode,
        ev.mode_step,
        ev.wall_time,
    ) {
        Ok(payload) => {
            let back = smdebug_record::decode_tensor_event(&payload).expect("own output decodes");
            assert_eq!(back.tag, ev.tag);
            assert_eq!(back.tensor.dtype(), ev.tensor.dtype());
            assert_eq!(back.tensor.shape(), ev.tensor.shape());
            assert_eq!(back.tensor.to_le_bytes(), bytes);
            assert_eq!(
                (back.step, back.mode, back.mode_step),
                (ev.step, ev.mode, ev.mode_step)
            );
            // -0.0 is proto3's default and is not written, so compare as numbers.
            assert!(
                back.wall_time == ev.wall_time
                    || (back.wall_time.is_nan() && ev.wall_time.is_nan())
            );
        }
        Err(_) => assert!(matches!(&ev.tensor, TensorValue::Str(s) if s.ndim() != 1)),
    }
}
