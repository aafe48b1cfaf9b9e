#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| smdebug_fuzz::config_collections_json::run(data));
