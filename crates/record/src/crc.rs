//! Masked CRC32C as TFRecord uses it.

/// Added after rotating, so that a CRC of data that itself contains CRCs is not trivially
/// related to them (TensorFlow's `kMaskDelta`).
const MASK_DELTA: u32 = 0xA282_EAD8;

/// The footer smdebug writes on every record of a trial's `events/` files instead of the
/// payload CRC: `masked_crc32c(b"0x12345678")`, bytes `B3 C0 2D 06` on disk.
///
/// Python smdebug's range reader requires this exact value, so records of `events/` files
/// must use it ([`Footer::Magic`](crate::Footer::Magic)).
pub const MAGIC_FOOTER: u32 = 0x062D_C0B3;

/// Masks a CRC32C value the way TFRecord does: rotate right by 15 bits, add `0xA282EAD8`.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// The masked CRC32C (Castagnoli) of `data`, as stored in TFRecord headers and footers.
///
/// ```
/// use smdebug_record::masked_crc32c;
/// // The length field of a record with a 72-byte payload (docs/src/format.md §5).
/// assert_eq!(masked_crc32c(&72u64.to_le_bytes()).to_le_bytes(), [0xFE, 0x92, 0x48, 0x9D]);
/// ```
pub fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc32c(data))
}

/// The CRC32C of `data`, unmasked. Every payload of a trial we write or read with an index
/// is checksummed once, so this is on the hot path of both: crc-fast folds with
/// carry-less multiplication (VPCLMULQDQ where the CPU has it, detected at run time) and
/// ran at about twice the speed of a three-stream CRC-instruction loop here, from 8-byte
/// length fields to megabyte payloads.
fn crc32c(data: &[u8]) -> u32 {
    // CRC-32/ISCSI is CRC32C; its 32-bit value comes back in a u64.
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_of_the_castagnoli_polynomial() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    proptest::proptest! {
        /// Any length and start alignment (the folding kernels have head, body and tail
        /// paths): the same CRC as the crc32c crate's.
        #[test]
        fn same_crc_as_the_reference_implementation(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..5000),
            skip in 0usize..64,
        ) {
            let d = &data[skip.min(data.len())..];
            proptest::prop_assert_eq!(crc32c(d), ::crc32c::crc32c(d));
        }
    }

    #[test]
    fn magic_footer_is_the_masked_crc_of_the_ascii_constant() {
        assert_eq!(masked_crc32c(b"0x12345678"), MAGIC_FOOTER);
        assert_eq!(MAGIC_FOOTER.to_le_bytes(), [0xB3, 0xC0, 0x2D, 0x06]);
    }

    #[test]
    fn length_crc_examples_from_the_format_spec() {
        assert_eq!(
            masked_crc32c(&0x48u64.to_le_bytes()).to_le_bytes(),
            [0xFE, 0x92, 0x48, 0x9D]
        );
        assert_eq!(
            masked_crc32c(&0x3Du64.to_le_bytes()).to_le_bytes(),
            [0x60, 0x49, 0xF1, 0xEC]
        );
        assert_eq!(masked_crc32c(&0u64.to_le_bytes()), 0x0798_0329);
    }

    #[test]
    fn unmask_inverts_mask() {
        for c in [0u32, 1, 0xFFFF_FFFF, 0xE306_9283, 0x1234_5678] {
            assert_eq!(unmask(mask(c)), c);
        }
    }
}
