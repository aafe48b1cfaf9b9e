#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| smdebug_fuzz::config_hook_json::run(data));
