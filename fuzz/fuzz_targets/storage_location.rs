#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| smdebug_fuzz::storage_location::run(data));
