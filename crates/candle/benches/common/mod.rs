//! What the candle benches share: the demo network registered with a hook.

use smdebug_candle::demo::{Demo, Scenario};
use smdebug_candle::CandleHook;
use smdebug_hook::HookBuilder;

/// The healthy demo network (seed 1) with a hook writing to `dir/name`: the demo's hook
/// configuration, changed by `builder`. `SMDEBUG_BENCH_WRITER_PRIORITY=background` builds
/// it with `WriterPriority::Background` instead of the default `Normal`, for an A/B
/// comparison.
pub fn hooked(
    dir: &std::path::Path,
    name: &str,
    builder: impl FnOnce(HookBuilder) -> HookBuilder,
) -> (Demo, CandleHook) {
    let demo = Demo::new(Scenario::Healthy, 1).expect("demo network");
    let out = dir.join(name);
    let b = Demo::hook_builder(out.to_str().expect("utf-8 temp dir")).expect("demo hook config");
    let b = match std::env::var("SMDEBUG_BENCH_WRITER_PRIORITY").as_deref() {
        Ok("background") => b.writer_priority(smdebug_hook::WriterPriority::Background),
        _ => b,
    };
    let hook = builder(b).build().expect("hook");
    let h = demo.register(hook).expect("register");
    (demo, h)
}
